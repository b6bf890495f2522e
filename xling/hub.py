"""The Hugging Face Hub: model cards for trained adapters, `xling push`, and `hf:ORG/NAME` adapter names.

Every adapter xling trains gets a `README.md` model card (Hub metadata, what it was trained on and how
well, how to load it). `push` uploads an adapter directory as one commit, its card naming the repository;
`download` fetches one into the Hub's usual cache (`HF_HOME`), from where it loads like any directory.
The token comes from where `huggingface_hub` looks (`HF_TOKEN`, `hf auth login`).
"""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import CommitOperationAdd, EvalResult, HfApi, ModelCard, ModelCardData, snapshot_download
from huggingface_hub.errors import HfHubHTTPError

from xling import __version__
from xling.data.hub_datasets import hub_dataset_id
from xling.errors import XlingError, is_network_error
from xling.fileio import read_json
from xling.models.loading import hub_id

CARD_FILE = "README.md"
REPORT_FILE = "report.json"


def _hub_error(err: Exception, what: str) -> Exception:
    """One line for the Hub's refusals and for a server out of reach; any other error as it is."""
    if isinstance(err, (HfHubHTTPError, OSError, ValueError)) or is_network_error(err):
        return XlingError(f"{what}: {(str(err).splitlines() or [type(err).__name__])[0]}")
    return err


def download(spec: str) -> Path:
    """The local directory of adapter `hf:ORG/NAME[@REVISION]`, fetched into the Hub cache if need be."""
    repo_id, _, revision = spec.removeprefix("hf:").partition("@")
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise XlingError(f"{spec!r} is not a Hub adapter name: write hf:ORG/NAME (or hf:ORG/NAME@REVISION)")
    try:
        return Path(snapshot_download(repo_id, revision=revision or None))
    except Exception as err:
        raise _hub_error(err, f"cannot fetch {spec} from the Hub") from None


def push(directory: Path, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Upload an adapter directory to model repository `repo_id` (created if new), its card naming the
    repository; returns the commit's URL."""
    directory = Path(directory)
    if not (directory / "adapter_config.json").is_file() and not (directory / "task.json").is_file():
        raise XlingError(f"{directory} is not an adapter xling saved (no adapter_config.json or task.json)")
    api = HfApi(token=token)
    files = sorted(p for p in directory.rglob("*") if p.is_file() and p.name != CARD_FILE)
    card = model_card(read_report(directory), repo_id)
    operations = [CommitOperationAdd(str(p.relative_to(directory)), str(p)) for p in files]
    operations.append(CommitOperationAdd(CARD_FILE, card.encode("utf-8")))
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        commit = api.create_commit(repo_id, operations, commit_message=f"Upload {directory.name} (xling {__version__})")
    except Exception as err:
        raise _hub_error(err, f"cannot push to {repo_id}") from None
    return commit.commit_url


def read_report(directory: Path) -> dict:
    """The training report saved beside an adapter; a bare one from its config if it has none."""
    directory = Path(directory)
    if (directory / REPORT_FILE).is_file():
        return read_json(directory / REPORT_FILE)
    config = read_json(directory / "adapter_config.json")
    return {"name": config.get("name", directory.name), **config.get("metadata", {})}


def model_card(report: dict, repo_id: str | None = None) -> str:
    """A `README.md` for the adapter of a training report: Hub metadata, figures, and how to load it."""
    kind = (
        "language"
        if "language" in (report.get("kind"), report.get("role"))
        else "fusion"
        if "adapters" in report
        else "task"
    )
    lang = report.get("lang") or report.get("adapter")
    name = report.get("name") or report.get("adapter")
    base = hub_id(report.get("model", ""))
    options = report.get("options", {})
    trained_on = options.get("corpus") or options.get("train") or []
    sources = [trained_on] if isinstance(trained_on, str) else list(trained_on)
    datasets = sorted({d for d in map(hub_dataset_id, sources + [options.get("dev") or ""]) if d})
    best, dev = report.get("best") or {}, options.get("dev")
    results = None
    if kind != "language" and "f1" in best and dev:
        dataset = EvalResult(
            task_type="token-classification",
            dataset_type=hub_dataset_id(dev) or "custom",
            dataset_name=Path(dev).name if Path(dev).exists() else dev,
            dataset_split="validation",
            metric_type="f1",
            metric_value=round(float(best["f1"]), 4),  # a numpy float in a fresh report
            metric_name="seqeval F1 (strict IOB2)",
        )
        results = [dataset]
    data = ModelCardData(
        model_name=name if results else None,
        language=[lang] if lang else None,
        library_name="xling",
        base_model=base,
        datasets=datasets or None,
        tags=["xling", "adapters", "mad-x", "masked-lm" if kind == "language" else "named-entity-recognition"],
        pipeline_tag=None if kind == "language" else "token-classification",
        metrics=None if kind == "language" else ["seqeval"],
        eval_results=results,
    )
    spec = f"hf:{repo_id}" if repo_id else name
    rows = [
        ("kind", f"{kind} adapter"),
        ("base model", base or Path(report.get("model", "?")).name),
        ("language", lang or "?"),
    ]
    if kind == "language":
        before, after = report.get("held_out_perplexity_before"), report.get("held_out_perplexity_after")
        files = ", ".join(Path(f).name for f in report.get("corpus_files", [])[:8])
        rows += [("text", f"{files} ({report.get('lines', {}).get('train', '?')} lines)")]
        if before is not None and after is not None:
            rows += [("held-out perplexity", f"{before:.1f} before, {after:.1f} after")]
        use = f"xling train-task ner --lang {lang} --lang-adapter {spec} --train FILE --dev FILE"
    else:
        if "f1" in best:
            rows += [
                (
                    "dev F1 (seqeval, strict IOB2)",
                    f"{100 * best['f1']:.1f} (P {100 * best['precision']:.1f}, R {100 * best['recall']:.1f})",
                )
            ]
        rows += [("labels", ", ".join(report.get("labels", [])) or "?")]
        if report.get("train_sentences"):
            rows += [("training sentences", str(report["train_sentences"]))]
        use = f"xling tag --lang qu --{'fusion' if kind == 'fusion' else 'task-adapter'} {spec} FILE.txt"
    rows += [
        ("steps", f"{report.get('steps', '?')} ({report.get('computed_in', '?')})"),
        ("xling", report.get("xling_version", __version__)),
    ]
    table = "\n".join(f"| {key} | {value} |" for key, value in rows)
    argument = {"language": f'lang="{lang}", lang_adapter', "fusion": 'lang="qu", fusion'}.get(
        kind, 'lang="qu", adapter'
    )
    python = f'Tagger.load({argument}="{spec}")'
    body = f"""# {name}

A {kind} adapter trained with [xling](https://pypi.org/project/xling/) (MAD-X bottleneck adapters over a frozen
{base or "encoder"}).

| | |
|---|---|
{table}

## Use it

```bash
{use}
```

```python
from xling import Tagger

tagger = {python}
```

In the AdapterHub `adapters` library: `xling export {spec} --format adapterhub DIR`, then
`model.load_adapter("DIR")`.
"""
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))
