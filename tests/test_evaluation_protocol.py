"""Numbers a reviewer can trust: clean silver splits, overlap and leakage found, intervals and paired tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.tiny import run_xling, synthetic_conll
from xling.data.conll import Sentence, conll_text, read_conll
from xling.data.fetch import resolve
from xling.data.fingerprints import fingerprint
from xling.scoring.bootstrap import interval, mean_f1, paired, sentence_counts
from xling.scoring.cells import difference_cell, p_cell
from xling.tagging.spec import TaggerSpec


def write(path: Path, sentences: list[Sentence]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(conll_text(sentences), encoding="utf-8")
    return path


def silver_root(tmp_path: Path, monkeypatch, extra: list[Sentence], labelled: list[Sentence]) -> Path:
    """A local corpora root with WikiANN-qu's train, dev and extra, and a fresh corpus cache."""
    root = tmp_path / "corpora"
    write(root / "ner" / "wikiann-qu" / "train", labelled[:2])
    write(root / "ner" / "wikiann-qu" / "dev", labelled[2:])
    write(root / "ner" / "wikiann-qu" / "extra", extra)
    monkeypatch.setenv("XLING_CORPORA", str(root))
    monkeypatch.setenv("XLING_HOME", str(tmp_path / "home"))
    return root


def silver_splits() -> dict[str, list[str]]:
    return {
        split: [fingerprint(s.tokens) for s in read_conll(resolve(f"corpus:wikiann-qu/{split}"))]
        for split in ("silver-dev", "silver-pool")
    }


def test_the_silver_splits_are_stable_disjoint_deduplicated_and_free_of_labelled_sentences(tmp_path, monkeypatch):
    distinct = [Sentence([f"Llaqta{i}", "sutiyuq", "kan", "."], ["B-LOC", "O", "O", "O"]) for i in range(300)]
    labelled = [Sentence(["Qusqu", "llaqta", "."], ["B-LOC", "O", "O"]), Sentence(["Inti", "."], ["B-PER", "O"])]
    labelled += [Sentence(["Lima", "Piruwpa", "umallaqtanmi", "."], ["B-LOC", "B-LOC", "O", "O"])]
    planted = [Sentence(["lima", "piruwpa", "umallaqtanmi."], ["B-LOC", "B-LOC", "O"])]  # dev's, respaced and cased
    extra = distinct + distinct[:40] + planted + labelled[:1]
    root = silver_root(tmp_path, monkeypatch, extra, labelled)
    splits = silver_splits()
    dev, pool = splits["silver-dev"], splits["silver-pool"]
    assert len(set(dev)) == len(dev) and len(set(pool)) == len(pool) and not set(dev) & set(pool)
    assert set(dev) | set(pool) == {fingerprint(s.tokens) for s in distinct}  # no labelled sentence, none lost
    assert 0.15 < len(dev) / 300 < 0.45
    # the same sentences in another order, with others added, keep their sides
    more = [Sentence([f"Mayu{i}", "."], ["B-LOC", "O"]) for i in range(50)]
    write(root / "ner" / "wikiann-qu" / "extra", more + list(reversed(extra)))
    again = silver_splits()
    assert set(dev) <= set(again["silver-dev"]) and set(pool) <= set(again["silver-pool"])
    assert len(again["silver-dev"]) + len(again["silver-pool"]) == 350


def test_overlap_counts_shared_sentences_and_their_entities(tmp_path):
    a = write(tmp_path / "a.conll", [Sentence(["Inti", "chayamun"], ["B-PER", "O"]), Sentence(["Ñawi"], ["O"])])
    b = write(tmp_path / "b.conll", [Sentence(["inti", "chayamun"], ["B-PER", "O"]), Sentence(["Puka"], ["O"])])
    text = tmp_path / "c.txt"
    text.write_text("Ñawi\nMana kanchu\n", encoding="utf-8")
    result = json.loads(run_xling("corpora", "overlap", a, b, "--json").stdout)
    assert result["shared_sentences"] == 1 and result["a"]["entities_in_other"] == 1
    assert result["a"]["same_tags"] == 1 and result["shared_entity_mentions"] == 1
    shown = run_xling("corpora", "overlap", a, text)
    assert shown.returncode == 0 and "1 distinct sentences in both" in shown.stdout, shown.stderr
    none = json.loads(run_xling("corpora", "overlap", b, text, "--json").stdout)
    assert none["shared_sentences"] == 0 and none["a"]["sentences_in_other"] == 0


def test_counts_give_seqevals_f1_and_a_perfect_tagger_has_no_spread():
    from xling.scoring.entities import score

    gold = [["B-PER", "I-PER", "O"], ["B-LOC", "O"], ["O", "B-ORG"], ["O"]]
    predicted = [["B-PER", "I-PER", "O"], ["B-LOC", "B-LOC"], ["O", "I-ORG"], ["O"]]
    counts = sentence_counts(gold, predicted)
    assert counts.tolist() == [[1, 1, 1], [1, 2, 1], [0, 0, 1], [0, 0, 0]]  # strict IOB2: a lone I- is no entity
    assert mean_f1(counts) == pytest.approx(score(gold, predicted).f1)
    assert interval(sentence_counts(gold, gold)) == (1.0, 1.0)


def test_the_interval_of_a_small_example_is_the_one_worked_by_hand():
    # Two sentences, one right (1 of 1) and one wrong (0 of 1): a resample holds both twice over with
    # probability 1/4 each (F1 1 and 0) and one of each with 1/2 (F1 0.5); the 2.5% and 97.5% points are 0 and 1.
    counts = [[1, 1, 1], [0, 1, 1]]
    assert interval(counts, samples=2000) == (0.0, 1.0)
    draws = np.random.default_rng(0).multinomial(2, [0.5, 0.5], size=2000)  # the same check of the shares
    assert abs((draws[:, 0] == 1).mean() - 0.5) < 0.05


def test_a_paired_test_of_a_system_against_itself_finds_nothing_and_finds_a_real_gap():
    rng = np.random.default_rng(1)
    gold = rng.integers(1, 3, size=(3, 200))
    good = np.stack([gold, gold, gold], axis=-1)  # every entity found
    half = np.stack([gold // 2, gold, gold], axis=-1)
    same = paired(good, good)
    assert same["difference"] == 0 and same["p"] == pytest.approx(1.0) and same["low"] == same["high"] == 0
    gap = paired(good, half)
    assert gap["difference"] > 0.3 and gap["low"] > 0 and gap["p"] < 0.01
    # no resampled difference reached zero: the tables give the bound, not "p = 0.00"
    assert difference_cell(gap).endswith(", p < 0.001") and difference_cell(same) == "+0.0 [+0.0, +0.0], p = 1.00"
    assert p_cell(0.002, 1000) == "p = 0.002" and p_cell(0.0123, 1000) == "p = 0.01"  # small p keeps a digit


@pytest.mark.slow
def test_evaluate_warns_of_sentences_seen_in_training_and_carries_the_interval(trained_workspace, tmp_path):
    root, model_dir, train, dev = trained_workspace
    where = ["--model", str(model_dir), "-w", str(root / "ws")]
    seen = read_conll(train)[:3]
    trained_on = {fingerprint(s.tokens) for s in read_conll(train)}
    unseen = [
        s for s in read_conll(synthetic_conll(tmp_path / "other", 60, 7)) if fingerprint(s.tokens) not in trained_on
    ]
    mixed = write(tmp_path / "mixed.conll", seen + unseen)
    done = run_xling("evaluate", "ner", mixed, "--lang", "qu", "-t", "ner-en", "--bootstrap", "500", "--json", *where)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["seen_in_training"] == 3 and "3 of the" in done.stderr and "training data of ner-en" in done.stderr
    low, high = result["f1_interval"]
    assert low <= result["f1"] <= high and len(result["sentence_counts"]) == len(seen + unseen)
    (tmp_path / "a.json").write_text(done.stdout)
    compared = json.loads(run_xling("compare", tmp_path / "a.json", tmp_path / "a.json", "--json").stdout)
    assert compared["difference"] == 0 and compared["p"] == pytest.approx(1.0)
    from xling.tagging.evaluate import EvaluationOptions, evaluate

    clean = write(tmp_path / "clean.conll", unseen)
    options = EvaluationOptions(
        data=str(clean),
        tagger=TaggerSpec(lang="qu", task_adapter="ner-en", model=str(model_dir), workspace=str(root / "ws")),
    )
    assert evaluate(options).seen_in_training == 0


def test_no_training_pool_shares_a_sentence_with_an_evaluation_split(corpora_root, monkeypatch, tmp_path):
    monkeypatch.setenv("XLING_CORPORA", str(corpora_root))
    monkeypatch.setenv("XLING_HOME", str(tmp_path / "home"))
    split = {
        name: {fingerprint(s.tokens) for s in read_conll(resolve(f"corpus:wikiann-qu/{name}"))}
        for name in ("train", "dev", "silver-dev", "silver-pool")
    }
    for pool, evaluation in (("silver-pool", "silver-dev"), ("silver-pool", "dev"), ("train", "silver-dev")):
        assert not split[pool] & split[evaluation], (pool, evaluation)
    assert 350 <= len(split["silver-dev"]) <= 450


def test_a_recipe_row_carries_its_interval_and_its_paired_test_against_a_baseline(trained_workspace, tmp_path):
    from xling.errors import XlingError
    from xling.recipes.reading import read_recipe
    from xling.recipes.running import run_recipe

    root, model_dir, _, dev = trained_workspace
    steps = [("plain", None), ("split decoder", "plain")]
    text = f'[recipe]\nname = "paired"\nmodel = "{model_dir}"\nworkspace = "{tmp_path / "ws"}"\n'
    for title, baseline in steps:
        text += (
            f'\n[[step]]\ntitle = "{title}"\nrun = "evaluate"\ndata = "{dev}"\nlang = "qu"\ntask_adapter = "ner-en"\n'
        )
        text += 'decoder = "split"\n' if baseline else ""
        text += f'baseline = "{baseline}"\n' if baseline else ""
    import shutil

    shutil.copytree(root / "ws", tmp_path / "ws")
    recipe = tmp_path / "paired.toml"
    recipe.write_text(text)
    plain, split = run_recipe(recipe)
    low, high = plain.f1_interval
    assert low <= plain.f1 <= high and plain.sentences == len(read_conll(dev))
    assert "sentence_counts" not in plain.to_record()  # the results file holds the interval, not the counts
    versus = split.versus
    assert versus["baseline"] == "plain" and versus["difference"] == pytest.approx(split.f1 - plain.f1)
    assert versus["low"] <= versus["difference"] <= versus["high"] and 0 <= versus["p"] <= 1
    recipe.write_text(text.replace('baseline = "plain"', 'baseline = "nowhere"'))
    with pytest.raises(XlingError, match="baseline 'nowhere' is no earlier evaluate step"):
        run_recipe(read_recipe(recipe).file)


def test_an_adapter_continued_from_one_that_keeps_no_fingerprints_claims_none(copied_workspace, tmp_path):
    from xling.data.fingerprints import FINGERPRINTS_FILE, read_fingerprints
    from xling.train.config import TaskAdapterOptions, TrainConfig
    from xling.train.task import train_task_adapter

    workspace, model_dir, model_folder, dev = copied_workspace
    (model_folder / "task" / "ner-en" / FINGERPRINTS_FILE).unlink()  # as an adapter saved before xling kept them
    training = TrainConfig(epochs=1, batch_size=16, eval_every=None)
    where = {"model": str(model_dir), "workspace": str(workspace), "training": training}
    train_task_adapter(
        TaskAdapterOptions(lang="qu", train=str(dev), dev=str(dev), init_from="ner-en", name="more", **where)
    )
    assert read_fingerprints(model_folder / "task" / "more") is None  # unknown, not "only dev's sentences"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"sentence_counts": []}, "sentence_counts is empty"),
        ({"sentence_counts": [[3, 1, 5]]}, "more correct entities than predicted or gold"),
        ({"sentence_counts": [[1, 2, -1]]}, "whole numbers"),
        ({"sentence_counts": [[1, 2, 10**30]]}, "whole numbers"),
        ({"sentence_counts": [[1, 2.0, 3]]}, "whole numbers"),
        ({"sentences_digest": None}, "sentences_digest"),
    ],
)
def test_compare_reads_its_inputs_through_their_schema(tmp_path, change, said):
    from xling.errors import XlingError
    from xling.scoring.compare import compare

    good = {"f1": 0.5, "sentences_digest": "abc", "sentence_counts": [[1, 2, 2], [0, 1, 0]]}
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "b.json").write_text(json.dumps({k: v for k, v in (good | change).items() if v is not None}))
    with pytest.raises(XlingError, match=said):
        compare(str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    done = run_xling("compare", tmp_path / "a.json", tmp_path / "b.json", "--json")
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1 and "NaN" not in done.stdout


def test_compare_takes_each_f1_from_the_counts_not_from_what_a_file_states(tmp_path):
    from xling.scoring.compare import compare

    counts = [[1, 2, 2], [0, 1, 0]]  # 2 x 1 / (3 + 2) = 0.4
    (tmp_path / "a.json").write_text(json.dumps({"f1": 0.99, "sentences_digest": "d", "sentence_counts": counts}))
    (tmp_path / "b.json").write_text(json.dumps({"sentences_digest": "d", "sentence_counts": counts}))
    result = compare(str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert result["f1_a"] == result["f1_b"] == pytest.approx(0.4) and result["difference"] == 0


def test_overlap_reads_a_book_on_one_line_in_pieces_keeping_counts_not_text(tmp_path):
    import tracemalloc

    from xling.data.overlap import overlap

    words = [f"simi{n}" for n in range(400_000)]  # 4.4 MB on one line, every piece distinct
    (tmp_path / "book.txt").write_text(" ".join(words) + "\n")
    (tmp_path / "other.txt").write_text(" ".join(words[:10]) + "\nmana kanchu\n")
    tracemalloc.start()
    result = overlap(str(tmp_path / "book.txt"), str(tmp_path / "book.txt"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert result.a.sentences == result.shared_sentences > 300  # pieces of at most 10,000 characters
    assert peak < 10e6  # the 4.4 MB line is never held whole, nor as words: counts per piece (1.4 MB measured)
    assert overlap(str(tmp_path / "other.txt"), str(tmp_path / "book.txt")).shared_sentences == 0
