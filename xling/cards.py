"""Model cards: every adapter xling trains gets a `README.md` (Hub metadata, what it was trained on and how well,
how to load it with xling and with the `adapters` library), made from its `report.json`."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from xling import __version__
from xling.adapters.registry import KINDS
from xling.data.hub_datasets import hub_dataset_id
from xling.models.embedded import EMBEDDED_ALIASES, embedded_identity
from xling.models.loading import hub_id
from xling.reports import RunReport
from xling.roles import FUSION, LANG, Role

CARD_FILE = "README.md"


def data_sources(report: RunReport) -> list[str]:
    options = report.options
    trained_on = options.get("corpus") or options.get("train") or []
    mixed_in = [item.partition("=")[2] for item in options.get("also", [])] + list(options.get("parallel", []))
    return ([trained_on] if isinstance(trained_on, str) else list(trained_on)) + mixed_in


def public_name(source: str) -> str:
    """A catalogue or Hub name as it is; a local file stays unnamed (its path is the training machine's)."""
    return source if source.startswith("corpus:") or hub_dataset_id(source) else "local data"


def catalogued(source: str):
    """The catalogue's entry for a `corpus:NAME[/SPLIT]` source, None for any other."""
    from xling.data.catalog import load_catalog

    return load_catalog().get(source.removeprefix("corpus:").split("/")[0]) if source.startswith("corpus:") else None


def dataset_ids(sources: list[str]) -> list[str]:
    """The Hub datasets the sources come from: named directly (`wikiann:qu`) or through the catalogue."""

    found = set()
    for source in sources:
        if source.startswith("corpus:"):
            corpus = catalogued(source)
            source = corpus.hub if corpus and corpus.hub else ""
        found.add(hub_dataset_id(source) if source else None)
    return sorted(d for d in found if d)


def eval_results(report: RunReport) -> list[EvalResult] | None:
    best, dev = report.best or {}, report.options.get("dev")
    if report.role is LANG or "f1" not in best or not dev:
        return None
    result = EvalResult(
        task_type="token-classification",
        dataset_type=(dataset_ids([dev]) or ["custom"])[0],
        dataset_name=Path(dev).name if Path(dev).exists() else dev,
        dataset_split="validation",
        metric_type="f1",
        metric_value=round(float(best["f1"]), 4),  # a numpy float in a fresh report
        metric_name="seqeval F1 (strict IOB2)",
    )
    return [result]


# Where the embedded default's exact weights are (not the Hub's fp32 ones): for the `adapters` snippet.
EMBEDDED_BASE_LINES = [
    "# xling's embedded weights, not the Hub's fp32 ones: `xling models pull e5-small` prints their folder",
    'base = "BASE_DIR"',
]


def is_embedded(spec: str) -> bool:
    return spec in EMBEDDED_ALIASES


def base_model_text(spec: str) -> str:
    """What the base model's weights are, exactly: the embedded default is a 4-bit conversion, not the Hub's."""
    return embedded_identity() if is_embedded(spec) else (hub_id(spec) or Path(spec or "?").name)


def shown_or_unknown(value) -> str:
    return "?" if value is None else str(value)


def card_rows(report: RunReport) -> list[tuple[str, str]]:
    options, best, role = report.options, report.best or {}, report.role
    sources = ", ".join(dict.fromkeys(public_name(s) for s in data_sources(report))) or "?"
    rows = [
        ("kind", f"{role.word} adapter"),
        ("base model", base_model_text(report.model or "")),
        ("language", report.lang or "?"),
    ]
    if role is LANG:
        before, after = report.held_out_perplexity_before, report.held_out_perplexity_after
        rows += [("text", f"{sources} ({(report.lines or {}).get('train', '?')} lines)")]
        if before is not None and after is not None:
            rows += [("held-out perplexity", f"{before:.1f} before, {after:.1f} after")]
    else:
        rows += [("training data", f"{sources} ({shown_or_unknown(report.train_sentences)} sentences)")]
        if "f1" in best:
            f1 = f"{100 * best['f1']:.1f} (P {100 * best['precision']:.1f}, R {100 * best['recall']:.1f})"
            dev = public_name(options["dev"]) if options.get("dev") else "dev"
            rows += [(f"dev F1 on {dev} (seqeval, strict IOB2)", f1)]
        rows += [("labels", ", ".join(report.labels or []) or "?"), ("decoder", options.get("decoder", "viterbi"))]
    seed = report.training.get("seed", "?")
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
# xling installs from a clone of its repository: pip install -e .
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


def licences(report: RunReport) -> str:

    data = []
    for source in dict.fromkeys(public_name(s) for s in data_sources(report)):
        corpus = catalogued(source)
        data.append(f"{source}: {corpus.licence}" if corpus and corpus.licence else f"{source}: see its own licence")
    base = (
        "MIT (intfloat/multilingual-e5-small)"
        if hub_id(report.model or "") == "intfloat/multilingual-e5-small"
        else "see the base model's card"
    )
    lines = ["- xling's code: Apache-2.0", f"- base model: {base}", *(f"- data, {d}" for d in data)]
    return "\n".join(lines)


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
        over = f"{100 * e['f1_mean']:.1f} ± {100 * e['f1_std']:.1f} (seeds {e['seeds']})" if "seeds" in e else ""
        lines.append(f"| {e['label']} | {public_name(e['data'])} | `{e['setup']}` | {100 * e['f1']:.1f} | {over} |")
    return "\n".join(lines) + "\n"


def adapter_title(report: RunReport) -> str:
    """What kind of adapter a report's run trained."""
    kind = report.adapter_kind
    return KINDS[kind].title if kind in KINDS else f"{kind} adapters"


LAYOUTS = ("xling", "adapterhub")  # what a pushed repository holds: xling's own files, or the adapters library's


def model_card(report: RunReport, repo_id: str | None = None, layout: str = "xling") -> str:
    """A `README.md` for the adapter of a training report: Hub metadata, figures, use, limits, licences; its
    library and snippets those of the `layout` pushed to `repo_id`."""
    role, lang, name, base = report.role, report.lang, report.name, hub_id(report.model or "")
    results = eval_results(report)
    library_repo = repo_id if layout == "adapterhub" else None  # the adapters library loads it from there
    data = ModelCardData(
        model_name=name if results else None,
        language=[lang] if lang else None,
        library_name="adapter-transformers" if layout == "adapterhub" else "xling",
        base_model=base,
        datasets=dataset_ids(data_sources(report) + [report.options.get("dev") or ""]) or None,
        tags=["xling", "adapter-transformers" if layout == "adapterhub" else "adapters", "mad-x"]
        + ["masked-lm" if role is LANG else "named-entity-recognition"],
        pipeline_tag=None if role is LANG else "token-classification",
        metrics=None if role is LANG else ["seqeval"],
        eval_results=results,
        license="apache-2.0",
    )
    table = "\n".join(f"| {key} | {value} |" for key, value in card_rows(report))
    body = f"""# {name}

A {role.word} adapter trained with xling: {adapter_title(report)} over a frozen {base or "encoder"}.

| | |
|---|---|
{table}
{evaluations_section(report)}
## Use it

{usage(role, f"hf:{repo_id}" if repo_id else name, lang, base, is_embedded(report.model or ""), library_repo)}
## Intended use and limitations

{LIMITATIONS if role is not LANG else "A language adapter: it adapts the encoder to a language's text; it tags nothing by itself."}

## Licences

{licences(report)}

## Citation

{CITATION}
"""
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))


def encoder_card(report: RunReport) -> str:
    """A `README.md` for an encoder `xling train-encoder` adapted: Hub metadata, its mix, perplexities, use."""
    base, mixed = hub_id(report.model or ""), report.mix or []
    mix = "\n".join(
        f"| {m['name']}{' (translation pairs)' if m['translation_pairs'] else ''} | "
        f"{', '.join(dict.fromkeys(public_name(s) for s in m['data']))} | {m['train']:,} | "
        f"{100 * m['share']:.1f}% |"
        for m in mixed
    )
    perplexity = "\n".join(
        f"| {lang} | {p['before']:,.1f} | {p['after']:,.1f} |" for lang, p in (report.held_out_perplexity or {}).items()
    )
    languages = sorted({part for m in mixed for part in m["name"].split("-")})
    data = ModelCardData(
        language=languages,
        library_name="transformers",
        base_model=base,
        datasets=dataset_ids(data_sources(report)) or None,
        tags=["xling", "masked-lm", "continued-pretraining"],
        pipeline_tag="fill-mask",
        license="apache-2.0",
    )
    name, lang = report.name, report.lang
    body = f"""# {name}

{base_model_text(report.model or "")}, adapted to {lang} by continued masked-LM training with xling
({report.method}: {report.steps} steps, seed {report.training["seed"]}, computed in
{report.computed_in}, mix temperature {report.temperature}; xling {report.xling_version}, commit
{report.commit or "unknown"}).

| source | data | training lines or pairs | share of the rows |
|---|---|---|---|
{mix}

| held-out perplexity | before | after |
|---|---|---|
{perplexity}

## Use it

As the base model of every xling command (`-m`), with language adapters trained under its own masked-LM head:

```bash
xling train-lang {lang} CORPUS -m {name} --mlm-head pretrained
xling train-task ner --lang en --train corpus:wikiann-en/train --dev corpus:wikiann-en/dev -m {name}
xling tag --lang {lang} -m {name} text.txt
```

(`{name}` the folder's path.) In Transformers it is a masked LM: `pipeline("fill-mask", model="{name}")`.

## Licences

{licences(report)}
"""
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))


def peft_card(report: RunReport) -> str:
    """A `README.md` for a LoRA task adapter exported to PEFT's format: Hub metadata and how PEFT loads it."""
    base = hub_id(report.model or "") or "BASE_MODEL"
    labels = report.labels or []
    data = ModelCardData(
        language=[report.lang] if report.lang else None,
        library_name="peft",
        base_model=None if base == "BASE_MODEL" else base,
        tags=["xling", "lora", "named-entity-recognition"],
        pipeline_tag="token-classification",
        license="apache-2.0",
    )
    note = (
        f" It was trained on xling's embedded encoder, a 4-bit conversion of {base}: on the full-precision model its "
        "scores may differ slightly."
        if is_embedded(report.model or "")
        else ""
    )
    body = f"""# {report.name}

A LoRA task adapter trained with xling, in PEFT's format (`adapter_config.json`, `adapter_model.safetensors`; the
labels in `config.json`).{note}

```python
import json
from peft import PeftModel
from transformers import AutoModelForTokenClassification

labels = json.load(open("DIR/config.json"))["id2label"]
base = AutoModelForTokenClassification.from_pretrained(
    "{base}", num_labels={len(labels)}, id2label={{int(i): label for i, label in labels.items()}}
)
model = PeftModel.from_pretrained(base, "DIR")
```

In xling: `xling tag --lang {report.lang or "LANG"} -t DIR FILE`.

## Licences

{licences(report)}
"""
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))
