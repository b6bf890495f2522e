"""Write the shipped adapters into the package, from the workspace of the seed that `xling run
recipes/pretrained.toml` trained them in: its last step (`run = "ship"`) runs `build`.

Each adapter is copied without what tagging does not use (a language adapter's masked-LM head), its weights in
fp16 where the tags of fp16 and fp32 weights agree on every silver-dev sentence (else in fp32); the shipped
weights are scored on silver-dev and dev with 95% intervals, and each adapter gets `pretrained.json` (recipe,
seed, commit, data and licences, scores, file hashes) and a card (`README.md`). Needs the corpora
(`XLING_CORPORA` or their public sources) and a few minutes. The masked-LM head shipped beside them is written
by `xling.shipping.head`.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from dataclasses import replace

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

import torch
from safetensors.torch import save_file

from xling.adapters.files import CONFIG_FILE, HEAD_CONFIG_FILE, HEAD_WEIGHTS_FILE, WEIGHTS_FILE
from xling.adapters.weights import read_weights
from xling.data.fingerprints import FINGERPRINTS_FILE, read_fingerprints
from xling.data.sources import load_ner
from xling.fileio import atomic_directory, file_sha256, write_json_atomic
from xling.models import model_label
from xling.models.loading import DEFAULT_MODEL
from xling.options import build as build_options
from xling.pretrained import (
    PRETRAINED_ROOT,
    RECORD_FILE,
    CorpusRecord,
    Fp16Check,
    PretrainedRecord,
    Score,
)
from xling.provenance import source_commit
from xling.roles import LANG, TASK
from xling.shipping.options import SHIPPED
from xling.tagging.evaluate import evaluate
from xling.tagging.options import EvaluationOptions
from xling.tagging.spec import TaggerSpec
from xling.train.cards.adapter import model_card
from xling.train.cards.common import CARD_FILE, catalogued, corpus_table
from xling.train.config import TaskAdapterOptions
from xling.train.report import REPORT_FILE, RunReport
from xling.train.text_config import LanguageAdapterOptions
from xling.trained_tasks import TASK_FILE, TaskRecord, task_text

RECIPE, SEED = "recipes/pretrained.toml", 2
SILVER_DEV, QU_DEV, EN_DEV = "corpus:wikiann-qu/silver-dev", "corpus:wikiann-qu/dev", "corpus:wikiann-en/dev"
QUBERT_DEV = "corpus:qubert-qu/dev"  # 701 sentences: the Quechua split that decides
# The setups each card scores: (language adapter, task adapter, data), each setup's held-out figure first (the one
# the notice line gives).
SETUPS = {
    "ner-qu": [("qu", "ner-qu", QUBERT_DEV), ("qu", "ner-qu", SILVER_DEV), ("qu", "ner-qu", QU_DEV)],
    "ner-en": [
        ("qu", "ner-en", QUBERT_DEV),
        ("qu", "ner-en", SILVER_DEV),
        ("qu", "ner-en", QU_DEV),
        ("en", "ner-en", EN_DEV),
    ],
    "qu": [("qu", "ner-en", QUBERT_DEV), ("qu", "ner-qu", QUBERT_DEV)],
    "en": [("en", "ner-en", EN_DEV)],
}
CHECKED = [("qu", "ner-qu"), ("qu", "ner-en"), ("en", "ner-en")]  # every shipped adapter takes part in one
KEPT = {LANG: (CONFIG_FILE, WEIGHTS_FILE), TASK: (CONFIG_FILE, WEIGHTS_FILE, HEAD_CONFIG_FILE, HEAD_WEIGHTS_FILE)}
COPIED = {LANG: (REPORT_FILE,), TASK: (TASK_FILE, FINGERPRINTS_FILE, REPORT_FILE)}


def copy_adapter(source: Path, target: Path, role, dtype: torch.dtype) -> None:
    """The files tagging reads, weights in `dtype`; a language adapter's masked-LM head stays behind."""
    target.mkdir(parents=True)
    for name in KEPT[role] + COPIED[role]:
        if name.endswith(".safetensors"):
            weights = {k: v.to(dtype) if v.is_floating_point() else v for k, v in read_weights(source / name).items()}
            save_file({k: v.contiguous() for k, v in weights.items()}, str(target / name))
        elif name == REPORT_FILE:
            write_json_atomic(target / name, without_local_paths(named_report(source, role).to_record()))
        elif name == TASK_FILE:  # the language adapter it was trained over, by name rather than by path
            record = TaskRecord.read(source)
            by_name = replace(record, lang_adapter=record.lang_adapter and Path(record.lang_adapter).name)
            (target / name).write_text(task_text(by_name), encoding="utf-8")
        elif (source / name).is_file():
            shutil.copy(source / name, target / name)


def named_report(source: Path, role) -> RunReport:
    """The adapter's report with its training data named as the recipe gave it (the corpora by catalogue name,
    where the run recorded the files it read), so that nothing it must say is left out with the local paths."""
    report, step = RunReport.read(source), recipe_steps()[source.name]
    if role is LANG:
        return replace(report, options=replace(report.options, corpus=step.corpus))
    return replace(report, options=replace(report.options, train=step.train, dev=step.dev))


def without_local_paths(value):
    """A report as it travels: the training machine's paths left out (its corpora are named by catalogue name)."""
    if isinstance(value, dict):
        return {k: without_local_paths(v) for k, v in value.items() if not is_local_path(v)}
    if isinstance(value, list):
        return [without_local_paths(v) for v in value if not is_local_path(v)]
    return value


def is_local_path(value) -> bool:
    return (
        isinstance(value, str)
        and value.startswith(("/", "~"))
        or (isinstance(value, list) and bool(value) and all(is_local_path(v) for v in value))
    )


def tags(workspace: Path, lang: str, task: str, data: str) -> list[list[str]]:
    from xling.tagging.tagger import Tagger

    tagger = Tagger.load(TaggerSpec(lang=lang, task_adapter=task, workspace=str(workspace), precision="fp32"))
    return [[tag for tag, _ in sentence] for sentence in tagger.tag_words([s.tokens for s in load_ner(data)])]


def agreeing(source: Path, staged: Path, lang: str, task: str) -> Fp16Check:
    """On how many silver-dev sentences the staged weights tag as the source's do."""
    mine, theirs = tags(staged, lang, task, SILVER_DEV), tags(source, lang, task, SILVER_DEV)
    return Fp16Check(SILVER_DEV, f"Stack({lang}, {task})", len(mine), sum(a == b for a, b in zip(mine, theirs)))


@functools.cache  # a setup that several cards show is scored once
def score(workspace: Path, lang: str, task: str, data: str) -> Score:
    spec = TaggerSpec(lang=lang, task_adapter=task, workspace=str(workspace), precision="fp32")
    result = evaluate(EvaluationOptions(data=data, tagger=spec, bootstrap=1000))
    return Score(data, f"Stack({lang}, {task})", result.f1, result.f1_interval, result.sentences)


def recipe_steps() -> dict[str, LanguageAdapterOptions | TaskAdapterOptions]:
    """The training steps of the recipe that made the shipped adapters, as their commands' options, by the name
    of what each saves."""
    recipe = tomllib.loads((PRETRAINED_ROOT.parents[1] / RECIPE).read_text(encoding="utf-8"))
    trained = {"train-lang": LanguageAdapterOptions, "train-task": TaskAdapterOptions}
    steps = [
        build_options(trained[step["run"]], {key: value for key, value in step.items() if key not in ("title", "run")})
        for step in recipe["step"]
        if step.get("run") in trained
    ]
    return {step.run_name(): step for step in steps}


def data_record(name: str) -> list[CorpusRecord]:
    """The corpora an adapter was trained on (those of the adapter it continues first), each with its public
    source and licence from the catalogue."""
    step = recipe_steps()[name]
    continues = isinstance(step, TaskAdapterOptions) and step.init_from
    inherited = data_record(step.init_from) if continues else []
    sources = step.corpus if isinstance(step, LanguageAdapterOptions) else step.train
    return inherited + corpus_records([sources] if isinstance(sources, str) else sources)


def corpus_records(sources: list[str]) -> list[CorpusRecord]:
    """Each `corpus:` name with its public source and licence from the catalogue."""
    found = []
    for source in sources:
        corpus = catalogued(source)
        split = source.split("/", 1)[1] if "/" in source else None
        found.append(CorpusRecord(source, corpus.public_source(split), corpus.licence))
    return found


def build(source_workspace: Path, model: str = DEFAULT_MODEL) -> Path:
    """Stage the shipped adapters in a scratch workspace, score and describe them there, then put them in place."""
    label = model_label(model)
    source = Path(source_workspace) / label
    with tempfile.TemporaryDirectory() as scratch:
        staged_ws = Path(scratch)
        staged = staged_ws / label
        for role, name in SHIPPED:
            copy_adapter(source / role.name / name, staged / role.name / name, role, torch.float16)
        checks = [agreeing(source_workspace, staged_ws, lang, task) for lang, task in CHECKED]
        fp16 = all(check.passed for check in checks)
        if not fp16:  # some tag moved: every adapter in fp32
            for role, name in SHIPPED:
                shutil.rmtree(staged / role.name / name)
                copy_adapter(source / role.name / name, staged / role.name / name, role, torch.float32)
        for role, name in SHIPPED:
            write_record(staged_ws, role, name, fp16, checks)
        if (head := PRETRAINED_ROOT / label / "head").is_dir():  # `xling.shipping.head` writes it: kept as it is
            shutil.copytree(head, staged / "head")
        with atomic_directory(PRETRAINED_ROOT / label, overwrite=True, replaces=()) as target:
            shutil.copytree(staged, target, dirs_exist_ok=True)
    return PRETRAINED_ROOT / label


def write_record(staged_ws: Path, role, name: str, fp16: bool, checks: list[Fp16Check]) -> None:
    target = staged_ws / model_label(DEFAULT_MODEL) / role.name / name
    scores = [score(staged_ws, lang, task, data) for lang, task, data in SETUPS[name]]
    files = {f.name: file_sha256(f) for f in sorted(target.iterdir()) if f.is_file()}
    record = PretrainedRecord(
        name=name,
        role=role,
        recipe=RECIPE,
        seed=SEED,
        commit=source_commit() or "unknown",
        stored_in="fp16" if fp16 else "fp32",
        files=files,
        data=data_record(name),
        scores=scores,
        fp16_check=checks,
    )
    write_json_atomic(target / RECORD_FILE, record.to_record())
    card = model_card(RunReport.read(target)) + shipped_section(
        PretrainedRecord.read(target), read_fingerprints(target)
    )
    (target / CARD_FILE).write_text(card, encoding="utf-8")


def shipped_section(record: PretrainedRecord, prints: set[str] | None) -> str:
    """The card's account of the shipped copy: recipe, scores with intervals, fp16 check, data, file hashes."""
    scores = "\n".join(
        f"| `{s.setup}` | {s.data} | {100 * s.f1:.1f} [{100 * s.f1_interval[0]:.1f}, {100 * s.f1_interval[1]:.1f}] "
        f"| {s.sentences} |"
        for s in record.scores
    )
    checks = "; ".join(f"`{c.setup}` {c.equal} of {c.sentences}" for c in record.fp16_check)
    data = corpus_table(record.data)
    files = "\n".join(f"| {name} | `{digest}` |" for name, digest in record.files.items())
    trained_on = f"{len(prints):,} sentences (`{FINGERPRINTS_FILE}`)" if prints is not None else "not applicable"
    return f"""
## Shipped with xling

Made by `xling run {record.recipe}` (seed {record.seed}) at commit {record.commit}, its last step writing
them here. Stored in {record.stored_in}: fp16 and fp32 weights tag the same on
{checks} silver-dev sentences. Scores of these very weights, computed in fp32 (seqeval strict IOB2 F1, 95% bootstrap interval
over the sentences; qubert-qu/dev and silver-dev are never trained on nor used to choose an epoch; dev chose the
task's epoch):

| setup | data | F1 [95% interval] | sentences |
|---|---|---|---|
{scores}

Trained on (fingerprints of the training sentences: {trained_on}):

| corpus | public source | licence |
|---|---|---|
{data}

| file | sha256 |
|---|---|
{files}
"""


def ship(source_workspace: Path, model: str = DEFAULT_MODEL) -> dict:
    """`build`, and what it shipped: each adapter's files and their hashes, named inside the package."""
    folder = build(source_workspace, model)
    return {
        f"{d.parent.name}/{d.name}": PretrainedRecord.read(d).files
        for d in sorted(folder.glob("*/*"))
        if d.parent.name != "head"
    }
