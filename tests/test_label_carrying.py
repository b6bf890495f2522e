"""Labels carried into a language without any, besides projection: `xling translate` (labelled sentences word by
word through a bilingual lexicon) and `xling match` (labelled data's names found in unlabelled text, with the
zero-shot tagger's veto), from their pieces to the commands, one of them through the embedded model."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.tiny import run_xling
from xling.data.conll import Sentence, read_conll
from xling.errors import XlingError
from xling.projection.lexicon import build_lexicon, cooccurrence_entries, dictionary_entries, read_lexicon
from xling.projection.matching import find_names, labelled, match, name_table, stems
from xling.projection.options import SUFFIXES, MatchOptions
from xling.projection.translate import translate_sentence
from xling.tagging.spec import TaggerSpec

QUECHUA = tuple(SUFFIXES["qu"])


def test_a_lexicon_file_reads_first_entries_drops_and_suffixes_and_names_a_bad_line(tmp_path):
    good = tmp_path / "es-qu.tsv"
    good.write_text("# grammar\nen\t-pi\nEl\t\n\nvive\ttiyan\nvive\tkawsan\n", encoding="utf-8")
    assert read_lexicon(good) == {"en": "-pi", "el": "", "vive": "tiyan"}  # casefolded, the first entry wins
    bad = tmp_path / "bad.tsv"
    bad.write_text("casa\twasi\ngato misi\n", encoding="utf-8")
    with pytest.raises(XlingError, match=r"bad.tsv, line 2: give SOURCE<TAB>TARGET"):
        read_lexicon(bad)


@given(st.binary(max_size=120) | st.text(max_size=120).map(str.encode))
def test_any_bytes_as_a_lexicon_load_or_are_refused_in_one_line_naming_the_file(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "lexicon.tsv"
        path.write_bytes(data)
        try:
            entries = read_lexicon(path)
        except XlingError as err:
            assert str(path) in str(err) and "\n" not in str(err)
        else:
            assert all(isinstance(k, str) and k and isinstance(v, str) for k, v in entries.items())


def test_parallel_text_gives_dictionary_pairs_first_then_words_that_keep_company():
    pairs = [(["casa"], ["wasi"]), (["casa"], ["wasi"]), (["casa"], ["tiyana"])]
    assert dictionary_entries(pairs) == {"casa": "wasi"}  # the gloss given most often
    sentences = [
        (["el", "perro", "come"], ["allqu", "mikun"]),
        (["el", "perro", "duerme"], ["allqu", "puñun"]),
        (["el", "gato", "come"], ["misi", "mikun"]),
        (["el", "gato", "duerme"], ["misi", "puñun"]),
    ]
    linked = cooccurrence_entries(sentences, min_pairs=2, min_dice=0.7)
    assert linked == {"perro": "allqu", "gato": "misi", "come": "mikun", "duerme": "puñun"}
    assert cooccurrence_entries(sentences, min_pairs=2, min_dice=0.6)["el"] == "puñun"  # in every pair: 0.67 each
    assert cooccurrence_entries(sentences, min_pairs=3, min_dice=0.6) == {}  # shared twice each: below 3


def test_the_lexicon_trusts_files_before_parallel_text_and_needs_one_of_them(tmp_path):
    folder = tmp_path / "parallel"
    folder.mkdir()
    (folder / "dict.es").write_text("perro.\ngato.\n", encoding="utf-8")
    (folder / "dict.qu").write_text("allqu.\nmisi.\n", encoding="utf-8")
    file = tmp_path / "mine.tsv"
    file.write_text("perro\tmisti allqu\n", encoding="utf-8")
    lexicon = build_lexicon([str(file)], [str(folder)], "es", "qu", min_pairs=2, min_dice=0.3)
    assert lexicon.entries == {"perro": "misti allqu", "gato": "misi"} and lexicon.origins["dictionary"] == 1
    with pytest.raises(XlingError, match="give a bilingual lexicon"):
        build_lexicon([], [], "es", "qu", 2, 0.3)


def test_a_sentence_is_translated_around_its_entities_with_case_suffixes_on_them():
    entries = {"vive": "tiyan", "en": "-pi", "la": "", "de": "-pa", "ciudad": "llaqta", "hoy": "kunan punchaw"}
    counts = __import__("collections").Counter()
    sentence = Sentence(
        "Hoy Juan vive en la ciudad de Nueva York y en paz .".split(),
        ["O", "B-PER", "O", "O", "O", "O", "O", "B-LOC", "I-LOC", "O", "O", "O", "O"],
    )
    out = translate_sentence(sentence, entries, counts)
    # "de" before an entity is its suffix on the entity's last word; "en" before a common noun is dropped
    assert " ".join(out.tokens) == "Kunan punchaw Juan tiyan llaqta Nueva Yorkpa y paz ."
    assert out.tags == ["O", "O", "B-PER", "O", "O", "B-LOC", "I-LOC", "O", "O", "O"]
    assert counts == {"entity": 3, "translated": 3, "copied": 3, "dropped": 3, "suffixed": 1}


def test_translate_writes_silver_conll_with_the_lexicon_used_and_refuses_to_replace_it(tmp_path):
    data = tmp_path / "es.conll"
    data.write_text("Juan\tB-PER\nvive\tO\nen\tO\nLima\tB-LOC\n.\tO\n\nEl\tO\nReal\tB-MISC\njuega\tO\n\n")
    lexicon = tmp_path / "es-qu.tsv"
    lexicon.write_text("vive\ttiyan\nen\t-pi\nel\t\njuega\tpukllan\n", encoding="utf-8")
    out = tmp_path / "translated"
    command = ("translate", data, "--lexicon", lexicon, "--drop-labels", "MISC", "--dev-share", "0", "-o", out)
    done = run_xling(*command)
    assert done.returncode == 0, done.stderr
    written = read_conll(out / "train.conll")
    assert [(s.tokens, s.tags) for s in written] == [
        (["Juan", "tiyan", "Limapi", "."], ["B-PER", "O", "B-LOC", "O"]),
        (["Real", "pukllan"], ["O", "O"]),  # MISC dropped before translating
    ]
    report = json.loads((out / "report.json").read_text())
    assert report["train"] == 2 and report["dev"] == 0 and report["words"]["suffixed"] == 1
    assert (out / "lexicon.tsv").read_text(encoding="utf-8").splitlines()[0] == "vive\ttiyan"
    again = run_xling(*command)
    assert again.returncode == 1 and "already exists" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    none = run_xling("translate", data, "-o", tmp_path / "other")
    assert none.returncode == 1 and "give a bilingual lexicon (--lexicon FILE)" in none.stderr


def test_names_are_found_through_suffixes_by_case_and_only_where_no_capital_stands_beside_them():
    assert {"Lima", "Limakuna", "Limakunapi"} <= stems("Limakunapipas", QUECHUA)
    names = {("Lima",): "LOC", ("Nueva", "York"): "LOC", ("UMA",): "ORG"}
    found = find_names("Limamantam hamun , Nueva Yorkpi tiyan .".split(), names, 2, QUECHUA)
    assert found == [("LOC", 0, 1), ("LOC", 3, 5)]
    assert find_names("Uma llaqtanqa Lima .".split(), names, 2, QUECHUA) == [("LOC", 2, 3)]  # UMA is not Uma
    assert find_names("San Lima Llaqta".split(), names, 2, QUECHUA) == []  # part of a longer name
    assert find_names("limapi tiyan".split(), names, 2, QUECHUA) == []  # a name starts with a capital


def test_the_names_looked_for_agree_on_a_type_and_are_not_common_words_of_the_text():
    data = [
        Sentence(["Washington", "dijo"], ["B-PER", "O"]),
        Sentence(["en", "Washington"], ["O", "B-LOC"]),
        Sentence(["Lima", "y", "Sol", "y", "Al"], ["B-LOC", "O", "B-ORG", "O", "B-PER"]),
    ]
    table = name_table(data, min_share=0.9, min_letters=3, common={"sol"})
    assert table == {("Lima",): "LOC"}  # Washington two ways, Sol a common word of the text, Al too short


def test_a_match_the_tagger_types_otherwise_is_unjudged_and_so_are_its_other_entities():
    from xling.projection.matching import MatchReport

    report = MatchReport(options={})
    words = "Lima llaqtapi Paris Hilton Juanwan tiyan".split()
    tagged = ["B-LOC", "O", "B-PER", "I-PER", "B-PER", "O"]
    sentence = labelled(words, [("LOC", 0, 1), ("LOC", 2, 3)], tagged, veto=True, report=report)
    assert sentence.tags == ["B-LOC", "O", "?", "?", "?", "O"]
    assert report.kept == {"LOC": 1} and report.vetoed == {"LOC": 1} and report.unjudged_words == 2
    assert labelled(["Paris"], [("LOC", 0, 1)], ["B-PER"], veto=True, report=report) is None  # nothing kept
    kept = labelled(["Paris"], [("LOC", 0, 1)], ["B-PER"], veto=False, report=report)
    assert kept.tags == ["B-LOC"]


class ZeroShotTagger:
    """Tags as a zero-shot tagger might: `Paris` a person, `Qusqumanta` a place (the matching under test is what
    happens after tagging)."""

    TAGS = {"Paris": "B-PER", "Qusqumanta": "B-LOC"}

    def tag_words(self, sentences):
        return [[(self.TAGS.get(word, "O"), 0.9) for word in words] for words in sentences]


def test_match_writes_the_matched_sentences_and_never_an_evaluation_sentence(tmp_path, monkeypatch):
    from xling.tagging.tagger import Tagger

    monkeypatch.setattr(Tagger, "load", classmethod(lambda cls, spec: ZeroShotTagger()))
    corpus = tmp_path / "qu.txt"
    corpus.write_text(
        "Limapi tiyani Qusqumanta hamuspa.\nParis llaqtaqa sumaqmi.\nMana sutiyuq rimay.\nLimaqa hatun llaqtam.\n",
        encoding="utf-8",
    )
    labelled_data = tmp_path / "en.conll"
    labelled_data.write_text("Lima\tB-LOC\nis\tO\n\nParis\tB-LOC\n!\tO\n\n")
    evaluation = tmp_path / "eval.conll"
    evaluation.write_text("Limaqa\tB-LOC\nhatun\tO\nllaqtam\tO\n.\tO\n\n")
    options = MatchOptions(
        corpus=[str(corpus)],
        entities=[str(labelled_data)],
        output=str(tmp_path / "matched"),
        tagger=TaggerSpec(lang="qu"),
        dev_share=1.0,  # all to dev, but for a sentence with unjudged words
        exclude=[str(evaluation)],
    )
    report = match(options)
    assert read_conll(tmp_path / "matched" / "dev.conll") == []  # dev data is labelled whole: `?` always trains
    written = [(s.tokens, s.tags) for s in read_conll(tmp_path / "matched" / "train.conll")]
    assert written == [(["Limapi", "tiyani", "Qusqumanta", "hamuspa", "."], ["B-LOC", "O", "?", "O", "O"])]
    assert report.sentences == 3 and report.matched == 2 and report.vetoed == {"LOC": 1}  # Paris: a person here
    assert (tmp_path / "matched" / "names.tsv").read_text(encoding="utf-8") == "Lima\tLOC\nParis\tLOC\n"
    with pytest.raises(XlingError, match="already exists"):
        match(options)


def test_match_runs_through_the_embedded_model_and_its_shipped_tagger(tmp_path):
    corpus = tmp_path / "qu.txt"
    corpus.write_text("Perúpi tiyani.\nLimamanta hamuni.\n", encoding="utf-8")
    labelled_data = tmp_path / "es.conll"
    labelled_data.write_text("Perú\tB-LOC\nes\tO\n\nLima\tB-LOC\n.\tO\n\n")
    evaluation = tmp_path / "eval.conll"  # in place of WikiANN-qu's splits, which a test may not have
    evaluation.write_text("Qusqu\tB-LOC\n\n")
    out = tmp_path / "matched"
    done = run_xling(
        "match", corpus, "--entities", labelled_data, "--lang", "qu", "-t", "ner-en", "--exclude", evaluation, "-o", out
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["names"] == 2 and report["sentences"] == 2 and report["matched"] == 2
    assert report["options"]["tagger"]["model"] == "e5-small"
    tags = {" ".join(s.tokens): s.tags for s in read_conll(out / "train.conll") + read_conll(out / "dev.conll")}
    assert set(tags) <= {"Perúpi tiyani .", "Limamanta hamuni ."} and len(tags) == sum(report["kept"].values())
    assert all(sentence_tags[0] == "B-LOC" for sentence_tags in tags.values())
