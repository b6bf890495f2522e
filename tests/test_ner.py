"""NER data, alignment, scoring, train-task and evaluate."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from rich.console import Console
from safetensors.torch import load_file

from tests.tiny import run_xling, synthetic_conll, tiny_model
from xling.adapters import AdaptedModel, BottleneckConfig, Stack, TaggingHead, TaggingHeadConfig
from xling.adapters.saving import load
from xling.data.conll import read_conll
from xling.data.decoding import decode
from xling.data.hub_datasets import sentences_from_dataset
from xling.data.labels import label_list, parse_label_map, relabel
from xling.data.sources import load_ner
from xling.errors import XlingError
from xling.scoring import score
from xling.tagging.align import windows_for
from xling.tagging.evaluate import EvaluationOptions, evaluate
from xling.tagging.predict import predict_probabilities
from xling.tagging.spec import TaggerSpec
from xling.tagging.tagger import Tagger
from xling.train.config import TaskAdapterOptions, TrainConfig
from xling.train.log_lines import TrainLog
from xling.train.task import train_task_adapter
from xling.train.token_classification import TaggingObjective
from xling.trained_tasks import load_task_model

# ---- data ------------------------------------------------------------------------------------


def test_read_conll_formats(tmp_path):
    file = tmp_path / "data"
    file.write_text(
        "-DOCSTART- -X- O O\n\n"
        "El DA O\nPerú NP B-LOC\nes VS O\n\n"
        "qu:Qusqu\tB-LOC\nqu:llaqta\tI-LOC\nqu:Juan\tI-PER\n\n"
        "  \n"
    )
    sentences = read_conll(file)
    assert [s.tokens for s in sentences] == [["El", "Perú", "es"], ["Qusqu", "llaqta", "Juan"]]
    assert sentences[1].tags == ["B-LOC", "I-LOC", "B-PER"]  # IOB1 I-PER starting an entity becomes B-PER


def test_malformed_conll_names_file_and_line(tmp_path):
    file = tmp_path / "bad"
    file.write_text("Lima B-LOC\nwasi\n")
    with pytest.raises(XlingError, match=r"bad:2: expected a token and a tag"):
        read_conll(file)
    file.write_text("Lima X-LOC\n")
    with pytest.raises(XlingError, match=r"bad:1: 'X-LOC' is not a NER tag"):
        read_conll(file)


def test_labels_drop_map_and_order(tmp_path):
    sentences = read_conll(synthetic_conll(tmp_path / "d", 20, 0))
    sentences[0].tags[0] = "B-MISC"
    assert label_list(sentences) == ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-PER", "I-PER"]
    dropped = relabel(sentences, drop=["MISC"], mapping=parse_label_map("PER=PERSON"))
    assert label_list(dropped) == ["O", "B-LOC", "I-LOC", "B-PERSON", "I-PERSON"]
    with pytest.raises(XlingError):
        parse_label_map("PER")


def test_named_source_through_datasets_on_local_files(tmp_path):
    from datasets import ClassLabel, Features, Sequence, Value, load_dataset

    rows = [{"tokens": ["Qusqu", "llaqta"], "ner_tags": [3, 4]}, {"tokens": ["Juan"], "ner_tags": [1]}]
    (tmp_path / "qu.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    features = Features(
        {
            "tokens": Sequence(Value("string")),
            "ner_tags": Sequence(ClassLabel(names=["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])),
        }
    )
    asked = {}

    def local_loader(name, config, split):
        asked.update(name=name, config=config, split=split)
        return load_dataset("json", data_files=str(tmp_path / "qu.jsonl"), features=features, split="train")

    sentences = load_ner("wikiann:qu", "dev", loader=local_loader)
    assert asked == {"name": "unimelb-nlp/wikiann", "config": "qu", "split": "validation"}
    assert [(s.tokens, s.tags) for s in sentences] == [(["Qusqu", "llaqta"], ["B-LOC", "I-LOC"]), (["Juan"], ["B-PER"])]
    assert sentences_from_dataset(local_loader("x", "y", "z"))[1].tags == ["B-PER"]
    with pytest.raises(XlingError, match="no such file"):
        load_ner("nowhere/train")


def test_hub_token_classification_datasets_by_id_come_out_in_iob2(tmp_path):
    from datasets import ClassLabel, Features, Sequence, Value, load_dataset

    def rows_with(features, rows):
        (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return lambda name, config, split: (
            asked.update(name=name, config=config, split=split)
            or load_dataset("json", data_files=str(tmp_path / "rows.jsonl"), features=Features(features), split="train")
        )

    asked = {}
    bioes = ClassLabel(names=["O", "S-PER", "B-LOC", "E-LOC", "I-LOC"])  # as MasakhaNER-style sets name them
    loader = rows_with(
        {"tokens": Sequence(Value("string")), "ner_tags": Sequence(bioes)},
        [{"tokens": list("abcd"), "ner_tags": [1, 2, 4, 3]}],
    )
    sentences = load_ner("hf:masakhane/masakhaner2:yor", "dev", loader=loader)
    assert asked == {"name": "masakhane/masakhaner2", "config": "yor", "split": "validation"}
    assert sentences[0].tags == ["B-PER", "B-LOC", "I-LOC", "I-LOC"]
    io_strings = {"words": Sequence(Value("string")), "tags": Sequence(Value("string"))}  # IO tags as strings
    loader = rows_with(io_strings, [{"words": ["Juan", "Perez", "in", "Lima"], "tags": ["PER", "PER", "O", "LOC"]}])
    assert load_ner("hf:conll2003::test", "train", loader=loader)[0].tags == ["B-PER", "I-PER", "O", "B-LOC"]
    assert asked == {"name": "conll2003", "config": None, "split": "test"}
    loader = rows_with({"text": Value("string")}, [{"text": "no tags here"}])
    with pytest.raises(XlingError, match="hf:squad has no token column .* its columns: text"):
        load_ner("hf:squad", loader=loader)


# ---- alignment and prediction ------------------------------------------------------------------


def test_first_subtoken_carries_the_label_and_long_sentences_are_windowed():
    _, tokenizer = tiny_model("bert")
    windows = windows_for([["qusqupi", "lima"]], tokenizer, max_len=16, stride=4)
    assert len(windows) == 1
    pieces = tokenizer.convert_ids_to_tokens(windows[0].input_ids)
    starts = [i for i, w in enumerate(windows[0].word_index) if w >= 0]
    assert [pieces[i] for i in starts] == ["▁qusqu", "▁lima"] and len(pieces) > 4
    long_sentence = [["runa", "wasi"][i % 2] + "x" for i in range(100)]
    windows = windows_for([long_sentence], tokenizer, max_len=24, stride=6)
    assert len(windows) > 5 and all(len(w.input_ids) <= 24 for w in windows)
    covered = {w for window in windows for w in window.word_index if w >= 0}
    assert covered == set(range(100))


def test_prediction_covers_every_word_and_is_valid_bio():
    encoder, tokenizer = tiny_model("xlm-roberta")
    model = AdaptedModel(encoder)
    torch.manual_seed(0)
    model.add_head("ner", TaggingHead(32, TaggingHeadConfig(["O", "B-LOC", "I-LOC", "B-PER", "I-PER"])))
    with torch.no_grad():
        model.heads["ner"].classifier.weight.mul_(50)  # confident, varied tags
    sentences = [["qusqu", "llaqtapi"], ["runa"] * 150, [], ["lima", "peru", "juan"]]
    probabilities = predict_probabilities(model, tokenizer, sentences, "ner", batch_size=2, max_len=20, stride=4)
    predicted = [decode(p, model.heads["ner"].labels) for p in probabilities]
    assert [len(p) for p in predicted] == [2, 150, 0, 3]
    for tags in predicted:
        for i, (tag, prob) in enumerate(tags):
            assert 0 < prob <= 1
            if tag.startswith("I-"):
                assert i > 0 and tags[i - 1][0][2:] == tag[2:] and tags[i - 1][0] != "O"


def test_seqeval_strict_scores():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    predicted = [["B-PER", "I-PER", "O", "B-PER"], ["I-ORG", "O"]]
    result = score(gold, predicted)
    assert result.support == 3
    # strict mode: a lone I-ORG is no entity, so 2 predicted entities, 1 right
    assert result.precision == pytest.approx(1 / 2) and result.recall == pytest.approx(1 / 3)
    assert result.per_type["PER"].f1 == pytest.approx(2 / 3)
    assert result.per_type["ORG"].f1 == 0  # strict: an entity must start with B-
    from seqeval.metrics import classification_report
    from seqeval.scheme import IOB2

    seqevals = classification_report(gold, predicted, mode="strict", scheme=IOB2, output_dict=True, zero_division=0)
    assert set(result.seqeval_report) == set(seqevals)  # its keys and averages, as dashboards read them
    for label, values in seqevals.items():
        assert result.seqeval_report[label] == pytest.approx({key: float(v) for key, v in values.items()})
    assert {"micro avg", "macro avg", "weighted avg"} <= set(result.seqeval_report)
    assert result.seqeval_report["micro avg"]["f1-score"] == pytest.approx(result.f1)


# ---- training and evaluation -------------------------------------------------------------------


@pytest.fixture
def setup_dirs(trained_workspace):
    return trained_workspace


def task_options(setup_dirs, **overrides):
    root, model_dir, train, dev = setup_dirs
    training = overrides.pop(
        "training", TrainConfig(epochs=4, batch_size=16, learning_rate=5e-3, eval_every=None, patience=2)
    )
    fields = {
        "lang": "en",
        "train": str(train),
        "dev": str(dev),
        "model": str(model_dir),
        "workspace": str(root / "ws"),
    }
    return TaskAdapterOptions(training=training, **{**fields, **overrides})


def test_train_task_stacks_on_frozen_lang_adapter_and_selects_best(setup_dirs):
    root = setup_dirs[0]
    lang_before = load_file(root / "ws" / "tinybert" / "lang" / "en" / "xling_adapter.safetensors")
    report = train_task_adapter(task_options(setup_dirs, name="ner-check"))
    saved = Path(report.saved_to)
    assert saved == root / "ws" / "tinybert" / "task" / "ner-check"
    task = json.loads((saved / "task.json").read_text())
    assert task["method"] == "adapter" and task["labels"] == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert json.loads((saved / "xling_adapter.json").read_text())["config"]["reduction_factor"] == 8
    log = TrainLog.read(saved / "train_log.jsonl").evaluations
    assert report.best.f1 == max(e.metrics["f1"] for e in log)
    assert report.best.f1 > 0.5  # the synthetic entities are easy to learn
    lang_after = load_file(root / "ws" / "tinybert" / "lang" / "en" / "xling_adapter.safetensors")
    assert all(torch.equal(lang_before[k], lang_after[k]) for k in lang_before)
    result = evaluate(
        EvaluationOptions(
            data=str(setup_dirs[3]),
            tagger=TaggerSpec(
                lang="en", task_adapter="ner-check", model=str(setup_dirs[1]), workspace=str(root / "ws")
            ),
        )
    )
    assert result.f1 == pytest.approx(report.best.f1)  # the saved weights are the selected ones
    assert result.setup == "Stack(en, ner-check)" and set(result.per_type) == {"LOC", "PER"}


def test_also_train_runs_each_language_through_its_own_adapter(setup_dirs):
    root, model_dir, train, dev = setup_dirs
    model, tokenizer, _ = load_task_model(str(model_dir), root / "ws" / "tinybert" / "task" / "ner-en")
    for lang in ("en", "qu"):
        load(model, root / "ws" / "tinybert" / "lang" / lang, name=f"lang-{lang}", head=False)
    with torch.no_grad():  # five masked-LM steps leave both near their identity start: make them differ
        for param in model.adapters["lang-qu"].parameters():
            param.add_(torch.randn_like(param), alpha=0.1)
    english, quechua = Stack("lang-en", "ner-en"), Stack("lang-qu", "ner-en")
    model.train_adapter(english, train=["ner-en"])
    sentences = read_conll(train)
    objective = TaggingObjective(
        "ner-en", sentences[:120], read_conll(dev), tokenizer, model, seed=1, more_train=[(quechua, sentences[120:])]
    )
    batches = list(objective.batches(0, 16))
    assert len(batches) == objective.micro_batches_per_epoch(16) == 8 + 5
    for batch in batches:  # a batch holds one language's windows
        assert set(batch["windows"]) <= set(objective.group_windows[batch["group"]])
    model.eval()
    tensors = objective.prepare(next(b for b in batches if b["group"] == 1), 0)

    def summed_loss(setup):
        with model.activated(setup):
            logits = model.heads["ner-en"](
                model(input_ids=tensors["input_ids"], attention_mask=tensors["attention_mask"])
            )
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), tensors["labels"].view(-1), reduction="sum")

    with torch.no_grad():
        loss = objective.loss(model, tensors, 1.0)
        assert torch.allclose(loss, summed_loss(quechua)) and not torch.allclose(loss, summed_loss(english))
    assert model.active == english  # training and dev evaluation go on in the main language

    with pytest.raises(XlingError, match="LANG=DATA"):
        task_options(setup_dirs, also_train=["corpus:conll2002-es/train"])
    also_train = [f"qu={train}", f"qu = {dev}"]  # one language's sources are read one after the other
    report = train_task_adapter(task_options(setup_dirs, name="ner-en-qu", also_train=also_train))
    assert report.also_train_sentences == {"qu": 240} and report.options.also_train == also_train
    assert Path(report.resolved.other_lang_adapters["qu"]) == root / "ws" / "tinybert" / "lang" / "qu"
    result = evaluate(
        EvaluationOptions(
            data=str(dev),
            tagger=TaggerSpec(lang="en", task_adapter="ner-en-qu", model=str(model_dir), workspace=str(root / "ws")),
        )
    )
    assert result.f1 == pytest.approx(report.best.f1)  # selected on English dev through lang-en


@pytest.mark.parametrize("method, name", [("full", "ner-en-full"), ("head", "ner-en-head")])
def test_baselines(setup_dirs, method, name):
    report = train_task_adapter(
        task_options(
            setup_dirs,
            method=method,
            # fp32: where auto picks bf16, a barely trained head's near-ties fall by batch shape
            training=TrainConfig(epochs=2, batch_size=16, learning_rate=1e-3, eval_every=None, precision="fp32"),
        )
    )
    assert report.name == name and report.method == method
    result = evaluate(
        EvaluationOptions(
            data=str(setup_dirs[3]),
            tagger=TaggerSpec(
                lang="en",
                task_adapter=name,
                model=str(setup_dirs[1]),
                workspace=str(setup_dirs[0] / "ws"),
                precision="fp32",
            ),
        )
    )
    assert result.f1 == pytest.approx(report.best.f1) and result.setup == "no adapters"
    if method == "full":
        assert (Path(report.saved_to) / "encoder" / "model.safetensors").is_file()


def test_no_lang_adapter_and_few_shot_continuation(setup_dirs):
    report = train_task_adapter(task_options(setup_dirs, use_lang_adapter=False))
    assert report.name == "ner-en-nolang" and "lang_adapter" not in report.to_record()  # unset: left out of the report
    output = io.StringIO()
    few = train_task_adapter(
        task_options(
            setup_dirs,
            lang="qu",
            name="ner-qu",
            use_lang_adapter=False,
            init_from="ner-en-nolang",
            adapter=BottleneckConfig(reduction_factor=4),  # ignored: the continued adapter keeps its architecture
            training=TrainConfig(max_steps=2, batch_size=8, eval_every=None),
        ),
        Console(file=output, width=300),
    )
    assert "ner-en-nolang continues its bottleneck adapter as trained" in output.getvalue()
    assert few.name == "ner-qu"
    assert few.options.adapter == report.options.adapter and few.options.adapter.config.reduction_factor == 8
    start = load_file(Path(report.saved_to) / "head_model.safetensors")
    continued = load_file(Path(few.saved_to) / "head_model.safetensors")
    assert continued.keys() == start.keys() and not all(torch.equal(start[k], continued[k]) for k in start)
    # trained alone, it tags alone: the workspace's qu language adapter is never put under it
    where = dict(model=str(setup_dirs[1]), workspace=str(setup_dirs[0] / "ws"), precision="fp32")
    assert (setup_dirs[0] / "ws" / "tinybert" / "lang" / "qu").is_dir()
    assert Tagger.load("qu", task_adapter="ner-qu", **where).setup == "ner-qu"
    assert Tagger.load("qu", task_adapter="ner-en", **where).setup == Stack("lang-qu", "ner-en")  # trained over en
    with pytest.raises(XlingError, match="^task adapter ner-qu was trained without a language adapter; tag with"):
        Tagger.load("qu", task_adapter="ner-qu", lang_adapter="qu", **where)


def test_missing_language_adapter_says_how_to_train_it(setup_dirs):
    with pytest.raises(XlingError, match="xling train-lang de CORPUS"):
        train_task_adapter(task_options(setup_dirs, lang="de"))
    with pytest.raises(XlingError, match="xling train-lang de CORPUS"):
        evaluate(
            EvaluationOptions(
                data=str(setup_dirs[3]),
                tagger=TaggerSpec(
                    lang="de", task_adapter="ner-en", model=str(setup_dirs[1]), workspace=str(setup_dirs[0] / "ws")
                ),
            )
        )


@pytest.mark.slow
def test_evaluate_cli_json(setup_dirs):
    root, model_dir, _, dev = setup_dirs
    result = run_xling(
        "evaluate", "ner", str(dev), "--lang", "en", "--model", str(model_dir), "-w", str(root / "ws"), "--json"
    )
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert {"precision", "recall", "f1", "per_type", "support"} <= set(scores)
    assert scores["seqeval_report"]["micro avg"]["f1-score"] == pytest.approx(scores["f1"])
    assert set(scores["seqeval_report"]) == set(scores["per_type"]) | {"micro avg", "macro avg", "weighted avg"}
    table = run_xling(
        "evaluate",
        "ner",
        str(dev),
        "--lang",
        "en",
        "--model",
        str(model_dir),
        "-w",
        str(root / "ws"),
        env={"COLUMNS": "120"},
    )
    assert "overall" in table.stdout and "PER" in table.stdout and scores["types_not_predicted"] == []


@pytest.mark.slow
def test_evaluate_names_gold_types_the_head_cannot_predict(setup_dirs, tmp_path):
    root, model_dir, _, dev = setup_dirs
    with_misc = tmp_path / "dev-misc"
    with_misc.write_text(dev.read_text().replace("-PER", "-MISC"))
    command = ["evaluate", "ner", with_misc, "--lang", "en", "--model", model_dir, "-w", root / "ws", "--json"]
    result = run_xling(*command)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["types_not_predicted"] == ["MISC"]
    assert "never predicts (MISC)" in result.stderr and "--drop-labels MISC" in result.stderr
    dropped = run_xling(*command, "--drop-labels", "MISC")
    assert json.loads(dropped.stdout)["types_not_predicted"] == [] and "never predicts" not in dropped.stderr
