"""What every model card shares: where the data came from and under which licences, and what the base model is."""

from __future__ import annotations

from xling.data.hub_datasets import hub_dataset_id
from xling.models.embedded import UPSTREAM_ID, embedded_identity
from xling.models.loading import ModelIdentity
from xling.pretrained import CorpusRecord
from xling.train.report import RunReport

CARD_FILE = "README.md"


def data_sources(report: RunReport) -> list[str]:
    """What the run trained on; nothing known of an adapter xling did not train."""
    return report.options.trained_on() if report.options else []


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


# Where the embedded default's exact weights are (not the Hub's fp32 ones): for the `adapters` snippet.
EMBEDDED_BASE_LINES = [
    "# xling's embedded weights, not the Hub's fp32 ones: `xling models pull e5-small` prints their folder",
    'base = "BASE_DIR"',
]


def is_embedded(model: ModelIdentity) -> bool:
    return model.kind == "embedded"


def base_model_text(model: ModelIdentity) -> str:
    """What the base model's weights are, exactly: the embedded default is a 4-bit conversion, not the Hub's."""
    return embedded_identity() if is_embedded(model) else (model.hub_id or model.label)


def shown_or_unknown(value) -> str:
    return "?" if value is None else str(value)


def licences(report: RunReport) -> str:

    data = []
    for source in dict.fromkeys(public_name(s) for s in data_sources(report)):
        corpus = catalogued(source)
        data.append(f"{source}: {corpus.licence}" if corpus and corpus.licence else f"{source}: see its own licence")
    base = "MIT (intfloat/multilingual-e5-small)" if report.base.hub_id == UPSTREAM_ID else "see the base model's card"
    lines = ["- xling's code: Apache-2.0", f"- base model: {base}", *(f"- data, {d}" for d in data)]
    return "\n".join(lines)


def corpus_table(data: list[CorpusRecord]) -> str:
    """The rows of a shipped card's table of corpora: name, public source, licence."""
    return "\n".join(f"| {d.corpus} | {d.source} | {d.licence} |" for d in data)
