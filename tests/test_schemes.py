"""Every tagging scheme is read into IOB2, detected or given, from CoNLL files and `hf:` data sets; a tag that fits
no scheme, or not the one given, is refused in one line naming where it is."""

from __future__ import annotations

import pytest

from xling.data.conll import read_conll
from xling.data.hub_datasets import sentences_from_dataset
from xling.data.schemes import detect, to_iob2
from xling.errors import XlingError

IOB2 = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "O", "B-ORG"]
# the same entities, as each scheme writes them: Juan Pérez | en | Lima | Perú Sur | . | ONU
WRITTEN = {
    "iob1": ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC", "O", "I-ORG"],
    "iob2": IOB2,
    "ioe": ["I-PER", "E-PER", "O", "E-LOC", "I-LOC", "E-LOC", "O", "E-ORG"],
    "bioes": ["B-PER", "E-PER", "O", "S-LOC", "B-LOC", "E-LOC", "O", "S-ORG"],
    "biluo": ["B-PER", "L-PER", "O", "U-LOC", "B-LOC", "L-LOC", "O", "U-ORG"],
}


@pytest.mark.parametrize("scheme", sorted(WRITTEN))
def test_each_scheme_reads_into_the_same_iob2_detected_or_given(scheme):
    tags = WRITTEN[scheme]
    assert to_iob2(tags, scheme) == IOB2
    assert to_iob2(tags) == IOB2  # detected
    assert detect(tags) == {"iob1": "iob2"}.get(scheme, scheme)  # IOB1 and IOB2 are read alike


def test_io_joins_a_run_of_one_type_and_biluo_is_never_a_type_of_its_own():
    assert to_iob2(["PER", "PER", "O", "LOC"]) == ["B-PER", "I-PER", "O", "B-LOC"]
    assert to_iob2(["U-LOC", "B-PER", "L-PER"]) == ["B-LOC", "B-PER", "I-PER"]


def test_a_tag_that_fits_no_scheme_or_not_the_given_one_is_refused():
    with pytest.raises(XlingError, match="'X-LOC' is not a NER tag"):
        to_iob2(["X-LOC"])
    with pytest.raises(XlingError, match="'U-LOC' is not BIOES"):
        to_iob2(["U-LOC"], "bioes")
    with pytest.raises(XlingError, match="'LOC' is a bare type beside prefixed tags"):
        to_iob2(["B-PER", "LOC"])


def test_conll_files_are_detected_whole_and_name_the_line_of_a_misfit(tmp_path):
    file = tmp_path / "biluo.conll"
    words = ["Juan", "Pérez", "en", "Lima", "Perú", "Sur", ".", "ONU"]
    file.write_text("".join(f"{w}\t{t}\n" for w, t in zip(words, WRITTEN["biluo"])) + "\nCusco\tU-LOC\n")
    assert [s.tags for s in read_conll(file)] == [IOB2, ["B-LOC"]]
    assert [s.tags for s in read_conll(file, "biluo")] == [IOB2, ["B-LOC"]]
    with pytest.raises(XlingError, match=r"biluo.conll:2: tag 'L-PER' is not IOB2"):
        read_conll(file, "iob2")
    mixed = tmp_path / "mixed.conll"
    mixed.write_text("Lima\tB-LOC\n\nCusco\tS-LOC\n\nPuno\tLOC\n")
    with pytest.raises(XlingError, match=r"mixed.conll:5: tag 'LOC' is a bare type"):
        read_conll(mixed)
    io = tmp_path / "io.conll"
    io.write_text("Juan\tPER\nPérez\tPER\nen\tO\n")
    assert read_conll(io)[0].tags == ["B-PER", "I-PER", "O"]


def test_a_biluo_hub_dataset_reads_into_iob2_not_into_new_types():
    datasets = pytest.importorskip("datasets")
    names = ["O", "B-PER", "I-PER", "L-PER", "U-PER", "B-LOC", "I-LOC", "L-LOC", "U-LOC"]
    features = datasets.Features(
        {
            "tokens": datasets.Sequence(datasets.Value("string")),
            "ner_tags": datasets.Sequence(datasets.ClassLabel(names=names)),
        }
    )
    rows = {"tokens": [["Juan", "Pérez", "en", "Lima"]], "ner_tags": [[1, 3, 0, 8]]}
    dataset = datasets.Dataset.from_dict(rows, features=features)
    assert sentences_from_dataset(dataset, "hf:biluo")[0].tags == ["B-PER", "I-PER", "O", "B-LOC"]
    with pytest.raises(XlingError, match="hf:biluo, row 1: tag 'L-PER' is not IOB2"):
        sentences_from_dataset(dataset, "hf:biluo", "iob2")


@pytest.mark.slow
def test_train_task_takes_the_scheme_option(trained_workspace, tmp_path):
    from tests.tiny import run_xling

    _, model_dir, train, dev = trained_workspace
    bioes = tmp_path / "bioes.conll"
    bioes.write_text("juan\tS-PER\nlima\tS-LOC\n\n")
    where = ["-m", str(model_dir), "-w", str(tmp_path / "ws"), "--no-lang-adapter", "--steps", "1"]
    done = run_xling("train-task", "ner", "--lang", "en", "--train", bioes, "--dev", dev, "--scheme", "iob2", *where)
    assert (
        done.returncode == 1
        and done.stderr.strip() == f"error: {bioes}:1: tag 'S-PER' is not IOB2, which writes O and prefixes B-, I-"
    )
    done = run_xling("train-task", "ner", "--lang", "en", "--train", bioes, "--dev", dev, "--scheme", "bioes", *where)
    assert done.returncode == 0, done.stderr
