"""Every file xling loads, fuzzed with Hypothesis: any JSON value in any field (or a missing field, an unknown
one, another JSON document, bytes that are no JSON) loads, or is refused with xling's one-line error naming the
file; never another exception, and never an adapter larger than the model allows."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_adapters import adapted
from xling.adapters import BottleneckConfig, TaggingHead, TaggingHeadConfig
from xling.adapters.lora import LoraConfig
from xling.adapters.saving import load, save
from xling.errors import XlingError

# Numbers at the edges: huge sizes, tiny factors, negatives, non-finite.
EDGES = st.sampled_from([0, -1, 1, 2**31, 10**7, 10**40, 1e-9, 0.5, 1e308, float("inf"), float("nan"), -0.0])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | EDGES | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
EXAMPLES = settings(deadline=None, suppress_health_check=list(HealthCheck))  # examples: the profile's (conftest)
# What Python's json takes but xling refuses: non-finite constants, an integer past the 4,300-digit limit, and
# nesting past the recursion limit, written into a field as raw text.
RAW = ["NaN", "Infinity", "-Infinity", "4" * 4400, "[" * 5000 + "]" * 5000]
PLACEHOLDER = "\u0000raw\u0000"


@st.composite
def damaged(draw, record: dict) -> bytes:
    """`record` as a file, damaged one way: a field (top level or one level down) with any JSON value, a field
    left out, an unknown field, another JSON document in its place, or bytes that are not JSON."""
    how = draw(st.sampled_from(["field", "nested", "drop", "unknown", "document", "bytes", "raw"]))
    record = json.loads(json.dumps(record))
    if how == "bytes":
        return draw(st.binary(max_size=64))
    if how == "document":
        return json.dumps(draw(JSON)).encode()
    nested = [k for k, v in record.items() if isinstance(v, dict) and v]
    target = record[draw(st.sampled_from(nested))] if how == "nested" and nested else record
    key = draw(st.sampled_from(sorted(target)))
    if how == "raw":
        target[key] = PLACEHOLDER
        return json.dumps(record).replace(json.dumps(PLACEHOLDER), draw(st.sampled_from(RAW))).encode()
    if how == "drop":
        del target[key]
    elif how == "unknown":
        target[draw(st.text(min_size=1, max_size=8))] = draw(JSON)
    else:
        target[key] = draw(JSON)
    return json.dumps(target if how == "document" else record).encode()


def refused_or_loaded(load_it: Callable[[], object], file: Path) -> object | None:
    """What `load_it` loads, or None when it refused in one line naming `file` (or its folder)."""
    try:
        return load_it()
    except XlingError as err:
        message = str(err)
        assert file.name in message or str(file.parent) in message, message
        assert "\n" not in message and len(message) < 1000, message
        return None


def fuzz(
    file: Path, load_it: Callable[[], object], also=None, then: Callable[[object], None] | None = None, line: int = -1
) -> None:
    """`file`, damaged the profile's number of ways (`damaged` of what it holds now, or `also`'s documents), each
    loaded by `load_it`; `then` checks what loads. For a JSON-lines file, `line` is the one damaged."""
    lines = file.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[line] if line >= 0 else file.read_text())

    @EXAMPLES
    @given(data=damaged(record) if also is None else damaged(record) | also)
    def check(data):
        if line >= 0:
            data = b"".join(lines[:line]) + data.replace(b"\n", b" ") + b"\n" + b"".join(lines[line + 1 :])
        file.write_bytes(data)
        loaded = refused_or_loaded(load_it, file)
        if then is not None and loaded is not None:
            then(loaded)

    check()


@pytest.fixture(scope="module")
def saved_adapters(tmp_path_factory) -> Path:
    """A bottleneck adapter with its head, a LoRA adapter, a fusion of two bottleneck adapters, and the
    bottleneck and LoRA adapters as the AdapterHub `adapters` library saves them."""
    from xling.adapters.adapterhub import export_adapterhub

    root = tmp_path_factory.mktemp("adapters")
    model, _ = adapted()
    model.add_adapter("ner", BottleneckConfig.preset("pfeiffer"))
    model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(LABELS)))
    model.add_adapter("lo", LoraConfig(rank=2))
    model.add_adapter("other", BottleneckConfig.preset("pfeiffer"))
    fusion = model.add_fusion(["ner", "other"])
    for name in ("ner", "lo", "other"):
        save(model, name, root / name)
    save(model, next(k for k, v in model.fusions.items() if v is fusion), root / "fusion")
    export_adapterhub(root / "ner", root / "hub-ner")
    export_adapterhub(root / "lo", root / "hub-lo")
    return root


ADAPTER_FILES = [
    ("ner", "xling_adapter.json", ()),
    ("ner", "head_config.json", ()),
    ("lo", "xling_adapter.json", ()),
    ("fusion", "xling_adapter.json", ("ner", "other")),
    ("hub-ner", "adapter_config.json", ()),
    ("hub-ner", "head_config.json", ()),
    ("hub-lo", "adapter_config.json", ()),
]


@pytest.mark.parametrize(("folder", "file_name", "before"), ADAPTER_FILES)
def test_any_adapter_file_loads_or_is_refused_naming_it(saved_adapters, tmp_path, folder, file_name, before):
    """Loaded into a tiny model (after the adapters `before`): what loads is no larger than the model allows."""
    target = shutil.copytree(saved_adapters / folder, tmp_path / folder)
    model, _ = adapted()
    for name in before:
        load(model, saved_adapters / name)
    base = sum(p.numel() for p in model.parameters())

    def no_larger_than_allowed(name: str) -> None:
        added = sum(p.numel() for p in model.parameters()) - base
        model.delete(name)
        assert added <= 4 * sum(p.numel() for p in model.encoder.parameters()), added

    fuzz(target / file_name, lambda: load(model, target), then=no_larger_than_allowed)


@pytest.mark.parametrize("folder", ["ner", "hub-lo"])
def test_a_saved_name_that_is_no_adapter_name_is_refused_naming_the_file(saved_adapters, tmp_path, folder):
    target = shutil.copytree(saved_adapters / folder, tmp_path / folder)
    config = target / ("adapter_config.json" if folder.startswith("hub-") else "xling_adapter.json")
    config.write_text(json.dumps(json.loads(config.read_text()) | {"name": "a b"}))
    with pytest.raises(XlingError, match=f"{config}: invalid adapter name 'a b'"):
        load(adapted()[0], target)


def test_an_adapterhub_config_whose_sizes_differ_from_its_weights_is_refused_in_one_line(saved_adapters, tmp_path):
    target = shutil.copytree(saved_adapters / "hub-lo", tmp_path / "hub-lo")
    record = json.loads((target / "adapter_config.json").read_text())
    assert record["config"]["r"] == 2
    record["config"]["r"] = 8  # the weights stay rank 2
    (target / "adapter_config.json").write_text(json.dumps(record))
    model = adapted()[0]
    with pytest.raises(XlingError, match=f"^{target}: the adapter does not match its config: size mismatch"):
        load(model, target)
    assert not model.adapters  # nothing half-loaded stays


def test_any_task_record_loads_or_is_refused_naming_it(trained_workspace, tmp_path):
    from xling.trained_tasks import TASK_FILE, TaskRecord

    root, model_dir, _, _ = trained_workspace
    task = shutil.copytree(root / "ws" / model_dir.name / "task" / "ner-en", tmp_path / "ner-en")
    fuzz(task / TASK_FILE, lambda: TaskRecord.read(task))


def test_any_run_record_resumes_or_is_refused_naming_it(tmp_path):
    from xling.train.run_folder import RUN_FILE, check_run_options

    options = {"lr": 0.001, "epochs": 3, "train": ["a.conll"], "name": "ner-en"}
    (tmp_path / RUN_FILE).write_text(json.dumps(options))
    fuzz(tmp_path / RUN_FILE, lambda: check_run_options(tmp_path, options, write=False))


def test_any_checkpoint_state_loads_or_is_refused_naming_it(tmp_path):
    import torch

    from xling.train.checkpoint import load_checkpoint, save_checkpoint

    state = {"weights": {"w": torch.ones(2)}, "optimizer": {"lr": 0.1}, "scheduler": {}, "rng": [1, 2], "state": {}}
    save_checkpoint(tmp_path / "checkpoint", state)
    nested = JSON.map(lambda value: json.dumps({"__dict__": value}).encode())  # the checkpoint's own encoding
    fuzz(tmp_path / "checkpoint" / "state.json", lambda: load_checkpoint(tmp_path / "checkpoint"), also=nested)


def test_any_annotation_session_record_opens_or_is_refused_naming_it(tmp_path):
    from tests.test_annotation import make_session
    from xling.annotation.batches import SESSION_FILE
    from xling.annotation.session import Session

    directory = make_session(tmp_path)
    fuzz(directory / SESSION_FILE, lambda: Session(directory))


def test_any_onnx_export_record_loads_or_is_refused_naming_it(exported, tmp_path):
    from xling.tagging.onnx_tagger import CONFIG_FILE, OnnxTagger

    folder = shutil.copytree(exported, tmp_path / "tagger")
    record = json.loads((folder / CONFIG_FILE).read_text())
    found = OnnxTagger(folder).tag_texts(["juan lima"])[0].spans

    def tags_as_exported(tagger) -> None:  # what loads tags as the export does, whatever else changed
        assert tagger.labels == record["labels"] and tagger.tag_texts(["juan lima"])[0].spans == found

    fuzz(folder / CONFIG_FILE, lambda: OnnxTagger(folder), then=tags_as_exported)
    for change, message in [
        ({"decoder": "evil"}, "unknown decoder 'evil'"),
        ({"labels": " ".join(record["labels"])}, "'labels' takes a list of texts"),
        ({"labels": record["labels"][:-1]}, f"{len(record['labels']) - 1} labels, but the graph scores"),
        ({"max_window": 10**12}, "max_window must be from 8 to"),
    ]:
        (folder / CONFIG_FILE).write_text(json.dumps(record | change))
        with pytest.raises(XlingError, match=f"{CONFIG_FILE}: .*{message}"):
            OnnxTagger(folder)


def test_any_saved_spacy_component_loads_or_is_refused_naming_it(copied_workspace, tmp_path):
    spacy = pytest.importorskip("spacy")
    from xling.tagging.spacy_component import SAVED, XlingNER

    workspace, model_dir, _, _ = copied_workspace
    nlp = spacy.blank("xx")
    nlp.add_pipe("xling_ner", config={"lang": "qu", "model": str(model_dir), "workspace": str(workspace)})
    nlp("juan lima")
    nlp.to_disk(tmp_path / "saved")
    folder = tmp_path / "saved" / "xling_ner"
    record = json.loads((folder / SAVED).read_text())
    fuzz(folder / SAVED, lambda: XlingNER({}, False).from_disk(folder))
    (folder / SAVED).write_text(json.dumps(record | {"decoder": "evil"}))
    with pytest.raises(XlingError, match="xling.json: unknown decoder 'evil'"):
        spacy.load(tmp_path / "saved")


def test_any_fingerprints_file_loads_or_is_refused_naming_it(trained_workspace, tmp_path):
    from xling.data.fingerprints import FINGERPRINTS_FILE, read_fingerprints

    root, model_dir, _, _ = trained_workspace
    task = shutil.copytree(root / "ws" / model_dir.name / "task" / "ner-en", tmp_path / "ner-en")
    fuzz(task / FINGERPRINTS_FILE, lambda: read_fingerprints(task))


def test_any_training_report_reads_or_is_refused_naming_it(trained_workspace, tmp_path):
    from xling.train.report import REPORT_FILE, RunReport

    root, model_dir, _, _ = trained_workspace
    task = shutil.copytree(root / "ws" / model_dir.name / "task" / "ner-en", tmp_path / "ner-en")
    fuzz(task / REPORT_FILE, lambda: RunReport.read(task))


def test_any_shipped_record_reads_or_is_refused_naming_it(tmp_path):
    from xling.pretrained import PRETRAINED_ROOT, PretrainedRecord

    task = shutil.copytree(PRETRAINED_ROOT / "multilingual-e5-small" / "task" / "ner-qu", tmp_path / "ner-qu")
    fuzz(task / "pretrained.json", lambda: PretrainedRecord.read(task))


# ---- the annotation session's logs, the ONNX tokenizer, compare's inputs, recipes ------------------------------


@pytest.mark.parametrize(("file", "line"), [("answers.jsonl", 1), ("batches/0001.jsonl", 0), ("batches/0001.jsonl", 2)])
def test_any_annotation_log_line_opens_or_is_refused_naming_the_file(tmp_path, file, line):
    from tests.test_annotation import make_session
    from xling.annotation.session import Session

    directory = make_session(tmp_path)
    session = Session(directory)
    for key in ("s1", "s2") if file == "answers.jsonl" else ():  # a damaged batch names itself, not the answers
        session.record({"item": key, "spans": [{"start": 0, "end": 1, "label": "PER"}], "judged": None})
    fuzz(directory / file, lambda: Session(directory), line=line)


def test_any_round_line_is_read_or_skipped_and_named_so_the_page_still_loads(tmp_path):
    from tests.test_annotation import make_session
    from xling.annotation.session import ROUNDS_FILE, Session

    directory = make_session(tmp_path)
    rounds = [{"round": 0, "sentences": 0, "f1": 0.5, "adapter": "ner-en"}, {"round": 1, "sentences": 25, "f1": 0.6}]
    (directory / ROUNDS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rounds))
    fuzz(directory / ROUNDS_FILE, lambda: Session(directory).rounds(), line=1)


def test_any_onnx_tokenizer_file_loads_or_is_refused_naming_it(exported, tmp_path):
    from xling.tagging.onnx_tagger import OnnxTagger

    folder = shutil.copytree(exported, tmp_path / "tagger")
    OnnxTagger(folder)("Lima llaqta")  # its tokenizer caches its pieces beside it: a cut tokenizer.json must not pass
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        if (folder / name).is_file():
            fuzz(folder / name, lambda: OnnxTagger(folder))
    text = (folder / "tokenizer.json").read_text()
    for cut in (len(text) // 2, 10, 0):  # cut short
        (folder / "tokenizer.json").write_text(text[:cut])
        assert refused_or_loaded(lambda: OnnxTagger(folder), folder / "tokenizer.json") is None


def test_any_compare_input_is_compared_or_refused_naming_it(tmp_path):
    from xling.scoring.compare import compare

    record = {"f1": 0.4, "sentences_digest": "d", "sentence_counts": [[1, 2, 2], [0, 1, 0]]}
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(record))

    def compared():
        result = compare(str(tmp_path / "a.json"), str(tmp_path / "b.json"), samples=100)
        assert all(value == value for value in result.values() if isinstance(value, float))  # never NaN
        return result

    fuzz(tmp_path / "a.json", compared)


def test_any_evaluation_result_reads_or_is_refused_naming_it(tmp_path):
    """A recipe's step result, read back when its results are combined."""
    from xling.scoring.result import EvaluationResult

    scores = {"precision": 0.5, "recall": 0.4, "f1": 0.44, "support": 3, "sentences": 2}
    record = scores | {"per_type": {"PER": {"precision": 0.5, "recall": 0.4, "f1": 0.44, "support": 3}}}
    record |= {"data": "dev.conll", "lang": "qu", "task_adapter": "ner-en", "setup": "Stack('lang-qu', 'ner-en')"}
    record |= {"decoder": "viterbi", "computed_in": "fp32", "runtime": "torch", "types_not_predicted": []}
    record |= {"seen_in_training": None, "sentences_digest": "d", "sentence_counts": [[1, 2, 2], [0, 1, 0]]}
    record |= {"label": "zero-shot", "title": "zero-shot", "baseline": None}
    (tmp_path / "step.json").write_text(json.dumps(record))
    assert EvaluationResult.read(tmp_path / "step.json").to_record() == {
        k: v for k, v in record.items() if k != "baseline"
    }
    fuzz(tmp_path / "step.json", lambda: EvaluationResult.read(tmp_path / "step.json"))


def test_any_recipe_reads_or_is_refused_naming_it(tmp_path):
    from xling.recipes.reading import read_recipe

    recipe = tmp_path / "r.toml"
    text = '[recipe]\nname = "r"\nmodel = "e5-small"\n\n[[step]]\ntitle = "t"\nrun = "train-lang"\nlang = "qu"\n'
    recipe.write_text(text + 'corpus = ["x.txt"]\n')

    @EXAMPLES
    @given(
        value=st.sampled_from(RAW + ['"x"', "1", "[1, [2, [3]]]", "{a = 1}", '"""', "nan", "inf"])
        | JSON.map(json.dumps)
    )
    def check(value):
        recipe.write_text(text + f"corpus = {value}\n")
        refused_or_loaded(lambda: read_recipe(recipe), recipe)

    check()


def test_any_tag_block_count_reads_or_is_refused_naming_it(tmp_path):
    from dataclasses import asdict

    from xling.tagging.blocks import BlockCounts

    file = tmp_path / "00000000.json"
    file.write_text(json.dumps(asdict(BlockCounts(results=1000, entities=37))))
    fuzz(file, lambda: BlockCounts.read(file))


def test_any_tag_job_record_reads_or_counts_as_another_jobs(tmp_path):
    from dataclasses import asdict

    from xling.tagging.blocks import TagJob

    file = tmp_path / "job.json"
    file.write_text(json.dumps(asdict(TagJob("in.txt", 10, 1, 1000, "lines", "fp32", "ab12"))))
    fuzz(file, lambda: TagJob.read(file))  # damaged: None, a job of its own, whose blocks are never reused


def test_any_silver_record_reads_or_has_the_splits_made_again(tmp_path):
    from dataclasses import asdict

    from xling.data.silver import SilverRecord

    file = tmp_path / ".silver.json"
    file.write_text(json.dumps(asdict(SilverRecord(0.3, {"source.conll": "ab" * 32}))))
    fuzz(file, lambda: SilverRecord.read(file))  # damaged: None, and the splits are made again


@pytest.mark.parametrize("kind", ["evaluation", "training"])
def test_any_train_log_line_reads_typed_or_is_refused_naming_its_file_and_line(tmp_path, kind):
    from dataclasses import asdict

    from xling.train.log_lines import Evaluation, TrainingLine, TrainLog

    file = tmp_path / "train_log.jsonl"
    if kind == "evaluation":
        line = Evaluation(4, 0.5, 12.3, {"f1": 0.5, "precision": 0.4, "recall": 0.6, "score": 0.5}).to_line()
    else:
        line = asdict(TrainingLine(10, 0.5, 2.3, 1e-4, 0.41, 5000.0))
    file.write_text(json.dumps(line) + "\n")
    fuzz(file, lambda: TrainLog.read(file), line=0)


def test_any_self_training_record_reads_typed_or_is_refused_naming_its_file(tmp_path):
    from dataclasses import asdict

    from xling.train.report import BestStep, SelfTrainingReport, SelfTrainingRound

    best = BestStep(step=4, epoch=1.0, seconds=2.5, f1=0.5, precision=0.4, recall=0.6, score=0.5)
    rounds = [SelfTrainingRound(1, "ner-qu-self-round1", "ner-en", 40, 47, best)]
    report = SelfTrainingReport(
        "ner-qu-self", "qu", "ner-en", ["a.txt"], 120, [], [], 0.5, "words", None, rounds, 1, 30.0, "ws/ner-qu-self"
    )
    file = tmp_path / "self_training.json"
    file.write_text(json.dumps(asdict(report)))
    assert SelfTrainingReport.read(file) == report
    fuzz(file, lambda: SelfTrainingReport.read(file))
