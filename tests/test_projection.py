"""Annotation projection: word alignment by names and by vectors, entities carried to the target side, and
`xling project` end to end on a hand-made parallel text, never writing a sentence of an evaluation split."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.tiny import run_xling
from xling.data.conll import read_conll
from xling.errors import XlingError
from xling.projection.alignment import argmax_links, name_links, same_name
from xling.projection.options import ProjectOptions
from xling.projection.project import carry, project
from xling.tagging.spec import TaggerSpec


def test_names_are_matched_through_quechua_suffixes_and_accents():
    assert same_name("Lima", "Limapi") and same_name("Perú", "Perupa") and same_name("Ayacucho", "ayacuchomanta")
    assert not same_name("Lima", "Qusqu") and not same_name("en", "enero")  # too short to trust
    assert same_name("Huamanga", "Huamangaq") and not same_name("Juan", "Pedro")


def test_mutual_best_matches_above_the_floor_are_linked():
    similarity = np.array([[0.9, 0.1, 0.0], [0.2, 0.3, 0.8], [0.1, 0.35, 0.7]])
    assert argmax_links(similarity, floor=0.5) == {(0, 0), (1, 2)}  # word 2's best target prefers word 1
    assert argmax_links(similarity, floor=0.85) == {(0, 0)}


def test_lima_is_carried_to_limapi_as_loc_and_an_unaligned_entity_is_dropped():
    source = "Juan vive en Lima .".split()
    target = "Limapi tiyan .".split()
    tags = ["B-PER", "O", "O", "B-LOC", "O"]
    names = name_links(source, target, {0, 3})
    assert names == {(3, 0)}
    result = carry(source, tags, target, names, vectors=set())
    assert result.tags == ["B-LOC", "O", "O"] and result.by_name == 1 and result.dropped == ["PER"]


def test_an_entity_split_across_the_target_onto_another_or_onto_a_lowercase_word_is_dropped():
    source, target = "el Banco Central de Cusco".split(), "Cusco Banco Central wasi kaq".split()
    tags = ["O", "B-ORG", "I-ORG", "O", "B-LOC"]
    apart = carry(source, tags, target, names=set(), vectors={(1, 0), (2, 3), (4, 1)})
    assert apart.dropped == ["ORG"] and apart.tags == ["O", "B-LOC", "O", "O", "O"]
    together = carry(source, tags, target, names=set(), vectors={(1, 1), (2, 2), (4, 2)})
    assert together.tags == ["O", "B-ORG", "I-ORG", "O", "O"] and together.dropped == ["LOC"]
    lowercase = carry(source, tags, target, names=set(), vectors={(1, 3), (2, 4), (4, 0)})
    assert lowercase.dropped == ["ORG"] and lowercase.tags == ["B-LOC", "O", "O", "O", "O"]


def test_a_word_without_a_name_link_takes_its_vector_link_and_an_opening_word_needs_a_name():
    source, target = "Visité el Teatro Cívico".split(), "Teatro Civivo nisqata watukurqani".split()
    tags = ["O", "O", "B-ORG", "I-ORG"]
    names = name_links(source, target, {2, 3})
    assert names == {(2, 0)}  # "Cívico" and "Civivo" share too few letters to count as one name
    assert carry(source, tags, target, names, vectors={(3, 1)}).tags == ["B-ORG", "I-ORG", "O", "O"]
    opening = carry(["Rincón", "."], ["B-LOC", "O"], ["Kuchu", "."], names=set(), vectors={(0, 0)})
    assert opening.dropped == ["LOC"]  # capitalised for standing first, not shown to be a name


class SourceTagger:
    """The source side's tags, as a trained Spanish tagger would give them (the projection under test is what
    happens after tagging)."""

    TAGS = {"Lima": "B-LOC", "Juan": "B-PER", "Cusco": "B-LOC"}

    def tag_words(self, sentences):
        return [[(self.TAGS.get(word, "O"), 0.9) for word in words] for words in sentences]


@pytest.fixture
def parallel(tmp_path):
    folder = tmp_path / "parallel"
    folder.mkdir()
    (folder / "pairs.es").write_text("Vivo en Lima .\nJuan vive en Lima .\nEl gato duerme .\nVoy a Cusco mañana .\n")
    (folder / "pairs.qu").write_text("Limapi tiyani .\nLimapi tiyan .\nMisi puñun .\nCuscoman paqarin risaq .\n")
    evaluation = tmp_path / "eval.conll"
    evaluation.write_text("Cuscoman\tB-LOC\nparqarin\tO\n\nCuscoman\tB-LOC\npaqarin\tO\nrisaq\tO\n.\tO\n\n")
    return folder, evaluation


def test_project_writes_only_confident_sentences_and_never_an_evaluation_sentence(
    tmp_path, parallel, trained_workspace, monkeypatch
):
    from xling.tagging.tagger import Tagger

    _, model_dir, _, _ = trained_workspace
    folder, evaluation = parallel
    monkeypatch.setattr(Tagger, "load", classmethod(lambda cls, spec: SourceTagger()))
    options = ProjectOptions(
        parallel=[str(folder)],
        output=str(tmp_path / "projected"),
        tagger=TaggerSpec(model=str(model_dir)),
        floor=1.0,  # no vector links: only names carry entities here
        empty_share=1.0,
        dev_share=0.0,
        exclude=[str(evaluation)],
    )
    report = project(options)
    written = {" ".join(s.tokens): s.tags for s in read_conll(tmp_path / "projected" / "train.conll")}
    assert written == {"Limapi tiyani .": ["B-LOC", "O", "O"], "Misi puñun .": ["O", "O", "O"]}
    counts = report.files[0]
    assert counts.in_evaluation_splits == 1 and counts.source_entities == 3 and counts.dropped == 1
    assert counts.carried_by_name == 2 and counts.kept_entities == {"LOC": 1} and report.train == 2
    written_report = json.loads((tmp_path / "projected" / "report.json").read_text())
    assert written_report["train"] == 2 and written_report["files"][0]["carried_by_name"] == 2
    with pytest.raises(XlingError, match="already exists"):
        project(options)


def test_unaligned_files_are_a_one_line_error(tmp_path, parallel):
    folder, _ = parallel
    (folder / "pairs.qu").write_text("Limapi tiyani .\n")
    done = run_xling("project", str(folder), "--output", str(tmp_path / "out"), "-t", "ner-en")  # a shipped tagger
    assert done.returncode == 1 and "pairs.es has 4 lines but" in done.stderr and "not line-aligned" in done.stderr
    assert not (tmp_path / "out").exists()
    (folder / "pairs.qu").unlink()
    done = run_xling("project", str(folder), "--output", str(tmp_path / "out"), "-t", "ner-en")
    assert done.returncode == 1 and "has no translation beside it: pairs.qu is missing" in done.stderr
