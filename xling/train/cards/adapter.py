"""Model cards of adapters: every adapter xling trains gets a `README.md` (Hub metadata, what it was trained on
and how well, how to load it with xling and with the `adapters` library), made from its `report.json`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from xling import __version__
from xling.adapters.registry import KINDS
from xling.provenance import repository_url
from xling.roles import FUSION, LANG, Role
from xling.train.cards.common import (
    EMBEDDED_BASE_LINES,
    base_model_text,
    data_sources,
    dataset_ids,
    is_embedded,
    licences,
    public_name,
    shown_or_unknown,
)
from xling.train.report import RunReport


def eval_results(report: RunReport) -> list[EvalResult] | None:
    best, dev = report.best, report.dev
    if report.role is LANG or best is None or not dev:
        return None
    result = EvalResult(
        task_type="token-classification",
        dataset_type=(dataset_ids([dev]) or ["custom"])[0],
        dataset_name=Path(dev).name if Path(dev).exists() else dev,
        dataset_split="validation",
        metric_type="f1",
        metric_value=round(float(best.f1), 4),  # a numpy float in a fresh report
        metric_name="seqeval F1 (strict IOB2)",
    )
    return [result]


def card_rows(report: RunReport) -> list[tuple[str, str]]:
    best, role = report.best, report.role
    sources = ", ".join(dict.fromkeys(public_name(s) for s in data_sources(report))) or "?"
    rows = [
        ("kind", f"{role.word} adapter"),
        ("base model", base_model_text(report.base)),
        ("language", report.lang or "?"),
    ]
    if role is LANG:
        before, after = report.held_out_perplexity_before, report.held_out_perplexity_after
        rows += [("text", f"{sources} ({(report.lines or {}).get('train', '?')} lines)")]
        if before is not None and after is not None:
            rows += [("held-out perplexity", f"{before:.1f} before, {after:.1f} after")]
    else:
        rows += [("training data", f"{sources} ({shown_or_unknown(report.train_sentences)} sentences)")]
        if best is not None:
            f1 = f"{100 * best.f1:.1f} (P {100 * best.precision:.1f}, R {100 * best.recall:.1f})"
            dev = public_name(report.dev) if report.dev else "dev"
            rows += [(f"dev F1 on {dev} (seqeval, strict IOB2)", f1)]
        rows += [
            ("labels", ", ".join(report.labels or []) or "?"),
            ("decoder", report.options.decoder if report.options else "?"),
        ]
    seed = report.options.training.seed if report.options else "?"
    rows += [
        ("budget", f"{shown_or_unknown(report.steps)} steps, seed {seed}, computed in {report.computed_in or '?'}"),
        ("xling", report.xling_version or __version__),
    ]
    return rows


def library_snippet(role: Role, spec: str, base: str | None, embedded: bool, repo_id: str | None = None) -> str:
    """Loading the adapter in the AdapterHub `adapters` library (a task adapter on a language adapter in
    `LANG_DIR`, as a `pipeline()`), in code that runs as written once the names are filled in: from the Hub
    repository `repo_id` it was pushed to in the library's layout, else from `DIR`, exported there."""
    where = repo_id or "DIR"
    base_lines = EMBEDDED_BASE_LINES if embedded else [f'base = "{base or "BASE_DIR"}"']
    lines = [
        "from adapters import AutoAdapterModel",
        "from adapters.composition import Stack",
        "from transformers import AutoTokenizer, pipeline",
        "",
        *base_lines,
        "model = AutoAdapterModel.from_pretrained(base)",
    ]
    if role is LANG:
        lines += [f'lang = model.load_adapter("{where}")']
    else:
        lines += [
            'lang = model.load_adapter("ORG/LANG")  # xling push LANG ORG/LANG --format adapterhub'
            if repo_id
            else 'lang = model.load_adapter("LANG_DIR")  # xling export LANG --format adapterhub LANG_DIR',
            f'task = model.load_adapter("{where}", set_active=True)  # set_active: config.id2label from the head',
            "model.set_active_adapters(Stack(lang, task))",
            "tokenizer = AutoTokenizer.from_pretrained(base)",
            "# first: each word's tag is its first sub-token's, as in xling",
            'ner = pipeline("token-classification", model=model, tokenizer=tokenizer, aggregation_strategy="first")',
            'print(ner("Qusqu llaqtaqa Perú suyupi kachkan ."))',
        ]
    body = "\n".join(lines)
    how = "" if repo_id else f": `xling export {spec} --format adapterhub DIR`, then"
    return f"""In the AdapterHub `adapters` library{how}

```python
{body}
```
"""


def usage(
    role: Role, spec: str, lang: str | None, base: str | None, embedded: bool = False, library_repo: str | None = None
) -> str:
    """Snippets that run as written: xling's command line and Python, and the `adapters` library (from
    `library_repo` where the adapter was pushed in its layout)."""
    if role is LANG:
        command = f"xling train-task ner --lang {lang} --lang-adapter {spec} --train FILE --dev FILE"
        python = f'# under a task adapter: Tagger.load(lang="{lang}", lang_adapter="{spec}", task_adapter=TASK)'
    else:
        option = "fusion" if role is FUSION else "task-adapter"
        command = f"xling tag --lang LANG --{option} {spec} FILE.txt  # LANG's language adapter goes below it"
        python = f'tagger = Tagger.load(lang="LANG", {"fusion" if role is FUSION else "task_adapter"}="{spec}")'
    library = "" if role is FUSION else "\n" + library_snippet(role, spec, base, embedded, library_repo)
    return f"""```bash
# xling installs from a clone of {repository_url() or "its repository"}: pip install -e .
{command}
```

```python
from xling import Tagger

{python}
```
{library}"""


LIMITATIONS = """Trained and scored on WikiANN-style text: Wikipedia sentences labelled automatically from links, with
PER, ORG and LOC. Expect lower scores on other genres (news, social media, speech transcripts) and on other
varieties of the language than the training text. A task adapter trained on one language and stacked on
another's language adapter (zero-shot transfer) scores far below one trained on a few hundred labelled
sentences of the target language: on Quechua with xling's embedded encoder, about 56 F1 zero-shot against
about 75 with 100 labelled sentences (WikiANN-qu dev, means of three seeds)."""

CITATION = """- Pfeiffer, Vulić, Gurevych, Ruder. MAD-X: An Adapter-Based Framework for Multi-Task Cross-Lingual
  Transfer. EMNLP 2020.
- Pfeiffer, Kamath, Rücklé, Cho, Gurevych. AdapterFusion: Non-Destructive Task Composition for Transfer
  Learning. EACL 2021.
- xling: named-entity recognition for low-resource languages with MAD-X adapters (Apache-2.0)."""


def evaluations_section(report: RunReport) -> str:
    """What the recipe that trained the adapter measured with it (none for an adapter trained alone)."""
    if not report.evaluations:
        return ""
    lines = [
        "",
        f"## Evaluations (recipe {report.recipe or '?'})",
        "",
        "seqeval strict IOB2 F1. This adapter's own seed, and the mean ± sd over the recipe's seeds, each seed",
        "with adapters of its own.",
        "",
        "| evaluation | data | setup | F1, this adapter | F1 over the seeds |",
        "|---|---|---|---|---|",
    ]
    for e in report.evaluations:
        over = f"{100 * e.f1_mean:.1f} ± {100 * e.f1_std:.1f} (seeds {e.seeds})" if e.seeds else ""
        lines.append(f"| {e.label} | {public_name(e.data)} | `{e.setup}` | {100 * e.f1:.1f} | {over} |")
    return "\n".join(lines) + "\n"


def adapter_title(report: RunReport) -> str:
    """What kind of adapter a report's run trained."""
    return KINDS[report.adapter_kind].title  # a kind the options' AdapterChoice checked


def xling_link() -> str:
    """xling named with a link to its repository where the install knows it."""
    return f"[xling]({url})" if (url := repository_url()) else "xling"


@dataclass(frozen=True)
class CardLibrary:
    """The library a card's metadata names and whose snippet loads the adapter: xling's own, or another's whose
    layout the adapter was written in (as `xling.layouts.adapterhub` names the AdapterHub library)."""

    name: str  # the Hub's `library_name`
    tag: str
    loads_from_repo: bool = False  # its snippet loads the repository the card is pushed to


XLING_CARD = CardLibrary("xling", "adapters")


def model_card(report: RunReport, repo_id: str | None = None, library: CardLibrary = XLING_CARD) -> str:
    """A `README.md` for the adapter of a training report: Hub metadata, figures, use, limits, licences; its
    library and snippets those of `library`, pushed to `repo_id`."""
    role, lang, name, base = report.role, report.lang, report.name, report.base.hub_id
    results = eval_results(report)
    library_repo = repo_id if library.loads_from_repo else None
    data = ModelCardData(
        model_name=name if results else None,
        language=[lang] if lang else None,
        library_name=library.name,
        base_model=base,
        datasets=dataset_ids(data_sources(report) + [report.dev or ""]) or None,
        tags=["xling", library.tag, "mad-x"] + ["masked-lm" if role is LANG else "named-entity-recognition"],
        pipeline_tag=None if role is LANG else "token-classification",
        metrics=None if role is LANG else ["seqeval"],
        eval_results=results,
        license="apache-2.0",
    )
    table = "\n".join(f"| {key} | {value} |" for key, value in card_rows(report))
    body = f"""# {name}

A {role.word} adapter trained with {xling_link()}: {adapter_title(report)} over a frozen {base or "encoder"}.

| | |
|---|---|
{table}
{evaluations_section(report)}
## Use it

{usage(role, f"hf:{repo_id}" if repo_id else name, lang, base, is_embedded(report.base), library_repo)}
## Intended use and limitations

{LIMITATIONS if role is not LANG else "A language adapter: it adapts the encoder to a language's text; it tags nothing by itself."}

## Licences

{licences(report)}

## Citation

{CITATION}
"""
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))
