"""Data and trackers from Python: `datasets.Dataset`s and lists of sentences train as files do, and a run reports
loss, learning rate and evaluations to accelerate's trackers (`--report-to`; TensorBoard here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xling.data.conll import read_conll
from xling.data.sources import data_name, load_ner
from xling.errors import XlingError
from xling.train.config import TaskAdapterOptions, TrainConfig
from xling.train.language import train_language_adapter
from xling.train.task import train_task_adapter
from xling.train.text_config import LanguageAdapterOptions

SHORT = TrainConfig(max_steps=3, batch_size=8, eval_every=None, learning_rate=5e-3, precision="fp32")


def test_sentences_in_memory_read_as_a_file_does(trained_workspace):
    _, _, train, _ = trained_workspace
    from_file = read_conll(train)
    as_pairs = [(s.tokens, s.tags) for s in from_file]
    as_dicts = [{"tokens": s.tokens, "tags": s.tags} for s in from_file]
    assert load_ner(as_pairs) == load_ner(as_dicts) == load_ner(from_file) == from_file
    bioes = [(["juan", "perez"], ["B-PER", "E-PER"])]
    assert load_ner(bioes)[0].tags == ["B-PER", "I-PER"]
    with pytest.raises(XlingError, match="sentence 2: give"):
        load_ner([(["a"], ["O"]), (["a", "b"], ["O"])])
    assert data_name(as_pairs) == data_name(as_dicts) != data_name(as_pairs[:-1])


def test_train_task_takes_a_dataset_and_records_what_identifies_it(trained_workspace, tmp_path):
    datasets = pytest.importorskip("datasets")
    root, model_dir, train, dev = trained_workspace
    sentences = read_conll(train)
    names = sorted({tag for s in sentences for tag in s.tags})
    features = datasets.Features(
        {
            "tokens": datasets.Sequence(datasets.Value("string")),
            "ner_tags": datasets.Sequence(datasets.ClassLabel(names=names)),
        }
    )
    rows = {"tokens": [s.tokens for s in sentences], "ner_tags": [[names.index(t) for t in s.tags] for s in sentences]}
    dataset = datasets.Dataset.from_dict(rows, features=features)
    where = dict(model=str(model_dir), workspace=str(tmp_path / "ws"), use_lang_adapter=False, training=SHORT)
    report = train_task_adapter(TaskAdapterOptions(lang="en", train=dataset, dev=str(dev), **where))
    assert report.train_sentences == len(sentences)
    assert report.options.train.startswith("datasets.Dataset ") and f"{len(sentences):,} rows" in report.options.train
    listed = [(s.tokens, s.tags) for s in sentences]
    again = train_task_adapter(TaskAdapterOptions(lang="en", train=listed, dev=str(dev), name="listed", **where))
    assert again.train_sentences == len(sentences) and "sentences in memory" in again.options.train


def test_train_lang_takes_tokenised_sentences_and_a_text_dataset(trained_workspace, tmp_path):
    datasets = pytest.importorskip("datasets")
    _, model_dir, train, _ = trained_workspace
    words = [s.tokens for s in read_conll(train)]
    where = dict(model=str(model_dir), workspace=str(tmp_path / "ws"), seq_len=32, training=SHORT)
    report = train_language_adapter(LanguageAdapterOptions(lang="qu", corpus=words, **where))
    assert report.lines["train"] + report.lines["held_out"] == len({" ".join(w) for w in words})
    assert len(report.options.corpus) == 1 and "sentences in memory" in report.options.corpus[0]
    text = datasets.Dataset.from_dict({"text": [" ".join(w) for w in words]})
    report = train_language_adapter(LanguageAdapterOptions(lang="en", corpus=text, **where))
    assert report.options.corpus[0].startswith("datasets.Dataset ")


def test_report_to_tensorboard_logs_loss_learning_rate_and_dev_f1(trained_workspace, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _, model_dir, train, dev = trained_workspace
    training = TrainConfig(max_steps=4, batch_size=8, eval_every=2, learning_rate=5e-3, report_to="tensorboard")
    where = dict(model=str(model_dir), workspace=str(tmp_path / "ws"), use_lang_adapter=False)
    train_task_adapter(TaskAdapterOptions(lang="en", train=str(train), dev=str(dev), training=training, **where))
    events = list((tmp_path / "ws" / Path(model_dir).name / "logs").rglob("events.out.tfevents.*"))
    assert events, "no TensorBoard event file"
    scalars = {}
    for file in events:
        accumulator = EventAccumulator(str(file))
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            scalars[tag] = [event.step for event in accumulator.Scalars(tag)]
    assert scalars["train/loss"] == [1, 2, 3, 4] and scalars["train/learning_rate"] == [1, 2, 3, 4]
    assert scalars["eval/f1"] == [2, 4]


def test_a_tagger_maps_over_a_dataset_in_batches_as_the_docs_show(trained_workspace):
    datasets = pytest.importorskip("datasets")
    from xling import Tagger

    root, model_dir, _, _ = trained_workspace
    tagger = Tagger.load(lang="qu", task_adapter="ner-en", model=str(model_dir), workspace=str(root / "ws"))
    texts = ["juan lima the city of qusqu", "maria of peru", "runa wasi"]
    dataset = datasets.Dataset.from_dict({"id": ["a", "b", "c"], "text": texts})

    def entities(batch):
        return {"entities": [[span.to_dict() for span in spans] for spans in tagger(batch["text"])]}

    tagged = dataset.map(entities, batched=True, batch_size=2)
    assert tagged["id"] == ["a", "b", "c"]
    assert tagged["entities"] == [[span.to_dict() for span in spans] for spans in tagger(texts)]


@pytest.mark.slow
def test_ray_data_maps_one_tagger_per_actor_as_the_docs_show(trained_workspace, tmp_path):
    import ray

    from xling import Tagger

    root, model_dir, _, _ = trained_workspace
    where = {"lang": "qu", "task_adapter": "ner-en", "model": str(model_dir), "workspace": str(root / "ws")}
    texts = ["juan lima the city of qusqu", "maria of peru", "runa wasi", "qusqu llaqta lima"]
    (tmp_path / "quechua.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")

    class Entities:
        def __init__(self):
            self.tagger = Tagger.load(**where)

        def __call__(self, batch):
            spans = self.tagger(list(batch["text"]))
            return batch | {"entities": [[span.to_dict() for span in found] for found in spans]}

    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)  # two actors and the reading tasks
    try:
        data = ray.data.read_text(str(tmp_path / "quechua.txt"))
        rows = data.map_batches(Entities, compute=ray.data.ActorPoolStrategy(size=2), batch_size=2).take_all()
    finally:
        ray.shutdown()
    expected = {text: [span.to_dict() for span in spans] for text, spans in zip(texts, Tagger.load(**where)(texts))}
    assert any(expected.values())
    assert {row["text"]: [dict(e) for e in row["entities"]] for row in rows} == expected


def test_a_token_holding_spaces_is_one_token_to_every_reader(tmp_path):
    from xling.annotation.select import corpus_sentences
    from xling.data.conll import read_lines, read_tokens

    conll = tmp_path / "qu.conll"  # QuBERT's place names are such tokens
    conll.write_text("Killki phaqcha\tB-LOC\ndistritu\tI-LOC\n\nLima\tB-LOC\n", encoding="utf-8")
    expected = [["Killki phaqcha", "distritu"], ["Lima"]]
    assert [s.tokens for s in read_conll(conll)] == list(read_tokens(read_lines(conll))) == expected
    (text, words), _ = corpus_sentences([conll])  # what xling select picks from
    assert text == "Killki phaqcha distritu" and [text[start:end] for start, end in words] == expected[0]


def labelled_dataset(sentences):
    datasets = pytest.importorskip("datasets")
    return datasets.Dataset.from_dict({"tokens": [s.tokens for s in sentences], "tags": [s.tags for s in sentences]})


def test_every_data_option_takes_a_name_a_dataset_or_sentences_in_memory_as_the_option_checks_say(trained_workspace):
    """docs/python-api.md's rule, through `build` as recipes and the retraining of `annotate` build options: each
    labelled-data option takes a name, a `Dataset` or a list of sentences; each text option names or a `Dataset`
    or tokenised sentences; anything else is one line naming what it takes."""
    from xling.analysis.options import AnalyzeOptions
    from xling.exporting import ExportOptions
    from xling.options import build
    from xling.tagging.options import EvaluationOptions
    from xling.train.config import FusionOptions, SelfTrainingOptions

    _, _, train, _ = trained_workspace
    sentences = read_conll(train)
    labelled = (str(train), labelled_dataset(sentences), [(s.tokens, s.tags) for s in sentences])
    text = ([str(train)], labelled_dataset(sentences), [s.tokens for s in sentences])
    given = {"lang": "qu", "task": "ner", "dev": str(train), "train": str(train), "corpus": [str(train)]}
    given |= {"adapters": ["ner-en"], "adapter": "ner-en", "target": "out", "format": "onnx", "data": str(train)}
    cases = [(TaskAdapterOptions, f, labelled) for f in ("train", "dev")] + [(FusionOptions, "train", labelled)]
    cases += [(EvaluationOptions, "data", labelled), (AnalyzeOptions, "data", labelled)]
    cases += [(ExportOptions, "check_data", labelled), (SelfTrainingOptions, "dev", labelled)]
    cases += [(SelfTrainingOptions, "corpus", text), (LanguageAdapterOptions, "corpus", text)]
    for cls, name, values in cases:
        for value in values:
            assert getattr(build(cls, given | {name: value}), name) is value, (cls.__name__, name)
        with pytest.raises(XlingError, match=f"option '{name}' takes .*a datasets.Dataset or a list, not 3"):
            build(cls, given | {name: 3})


def test_evaluate_scores_a_dataset_and_sentences_in_memory_as_it_scores_their_file(trained_workspace):
    from xling.tagging.evaluate import evaluate
    from xling.tagging.options import EvaluationOptions
    from xling.tagging.spec import TaggerSpec
    from xling.tagging.tagger import Tagger

    root, model_dir, _, dev = trained_workspace
    spec = TaggerSpec(lang="qu", model=str(model_dir), workspace=str(root / "ws"))
    tagger, sentences = Tagger.load(spec), read_conll(dev)
    scored = [
        evaluate(EvaluationOptions(data=data, tagger=spec), tagger)
        for data in (str(dev), labelled_dataset(sentences), [(s.tokens, s.tags) for s in sentences])
    ]
    assert [r.f1 for r in scored] == [scored[0].f1] * 3 and [r.sentences for r in scored] == [len(sentences)] * 3
    assert scored[1].data.startswith("datasets.Dataset ") and "sentences in memory" in scored[2].data
