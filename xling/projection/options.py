"""The options of the commands that carry labels into a language without any: `xling project` (parallel text, the
source side's tagger, how words align, what is kept), `xling translate` (labelled data through a bilingual lexicon)
and `xling match` (labelled data's names found in unlabelled text)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xling.errors import XlingError
from xling.fileio import check_output_name
from xling.names import check_lang
from xling.options import at_least, comma_list, opt
from xling.tagging.spec import TaggerSpec

# The evaluation splits of Quechua: a projected file never holds one of their sentences.
QUECHUA_EVALUATION = ["corpus:wikiann-qu/dev", "corpus:wikiann-qu/silver-dev"]


@dataclass
class ProjectOptions:
    parallel: list[str] = opt(
        help="Parallel text: folders, files or corpus:NAME holding line-aligned NAME.SOURCE beside NAME.LANG "
        "(e.g. dev.es and dev.qu).",
        argument=1,
    )
    output: str = opt(
        help="The folder to write: train.conll, dev.conll (a share held out to choose epochs), report.json."
    )
    source_lang: str = opt("es", "Language of the side that is tagged (its files' suffix).")
    lang: str = opt("qu", "Language of the side the labels are carried to (its files' suffix).")
    # the source side's tagger: its `lang` is the source language
    tagger: TaggerSpec = opt(
        factory=TaggerSpec,
        without=("lang", "task", "fusion", "ensemble", "runtime"),
        overrides={"task_adapter": {"help": "Task adapter that tags the source side (default: ner-SOURCE_LANG)."}},
    )
    layer: int = opt(8, "Encoder layer whose word vectors align the words not named alike (at most the last).")
    floor: float = opt(0.4, "Lowest cosine similarity of two words aligned by their vectors.")
    # WikiANN-like targets hold an entity in every sentence: a few all-O sentences teach O without swamping it
    empty_share: float = opt(0.1, "Share of the pairs without entities kept, all O.")
    dev_share: float = opt(0.1, "Share of the kept sentences written to dev.conll instead of train.conll.")
    # a dictionary's headwords and glosses ("Rincón." / "Kuchu.") are capitalised for standing first, not as names
    min_words: int = opt(3, "Leave out pairs whose source has fewer words (dictionary entries, not sentences).")
    exclude: list[str] = opt(
        factory=lambda: list(QUECHUA_EVALUATION), help="Evaluation splits whose sentences are never written."
    )
    overwrite: bool = opt(False, "Replace an existing output file.")

    def __post_init__(self):
        self.source_lang, self.lang = check_lang(self.source_lang), check_lang(self.lang)
        self.tagger.lang = self.source_lang
        self.tagger.task_adapter = self.tagger.task_adapter or f"ner-{self.source_lang}"
        at_least("layer", self.layer, 0)
        at_least("min_words", self.min_words, 1)
        if not -1 <= self.floor <= 1:
            raise XlingError(f"floor is a cosine similarity, between -1 and 1, not {self.floor}")
        check_share("empty_share", self.empty_share)
        check_share("dev_share", self.dev_share)
        check_output_folder(self.output)

    def output_file(self) -> str:
        return self.output


def check_share(name: str, value: float) -> None:
    if not 0 <= value <= 1:
        raise XlingError(f"{name.replace('_', '-')} must be between 0 and 1, not {value}")


def check_output_folder(output: str) -> None:
    path = check_output_name(Path(output or "."))  # below folders only, and a folder if it exists
    if path.exists() and not path.is_dir():
        raise XlingError(f"--output {path} is a file, not a folder; give a folder to write")


@dataclass
class TranslateOptions:
    data: list[str] = opt(
        help="Labelled data of the source language (CoNLL files or corpus:NAME/SPLIT), translated word by word.",
        argument=1,
    )
    output: str = opt(help="The folder to write: train.conll, dev.conll, lexicon.tsv (the one used), report.json.")
    lexicon: list[str] = opt(
        factory=list,
        help="Bilingual lexicon files: SOURCE<TAB>TARGET a line (first entry of a word wins; an empty TARGET drops "
        "the word, a TARGET starting with - is a suffix put on the entity that follows).",
    )
    parallel: list[str] = opt(
        factory=list,
        help="Parallel text to add entries from (NAME.SOURCE beside NAME.LANG): one-word pairs as a dictionary's, "
        "then the words that keep company across the sentence pairs (Dice).",
    )
    source_lang: str = opt("es", "Language of the labelled data (its parallel files' suffix).")
    lang: str = opt("qu", "Language to translate into (its parallel files' suffix).")
    # a pair of words seen together once is chance on a few thousand sentence pairs
    min_pairs: int = opt(2, "Sentence pairs two words must share before parallel text links them.")
    min_dice: float = opt(0.3, "Lowest Dice coefficient of two words linked by parallel text.")
    drop_labels: list[str] = opt(factory=list, help="Entity types to turn into O, e.g. MISC.", parse=comma_list)
    limit: int | None = opt(None, "Translate the first N sentences only.")
    dev_share: float = opt(0.1, "Share of the sentences written to dev.conll instead of train.conll.")
    overwrite: bool = opt(False, "Replace an existing output folder.")

    def __post_init__(self):
        self.source_lang, self.lang = check_lang(self.source_lang), check_lang(self.lang)
        at_least("min_pairs", self.min_pairs, 1)
        at_least("limit", self.limit, 1)
        check_share("min_dice", self.min_dice)
        check_share("dev_share", self.dev_share)
        check_output_folder(self.output)

    def output_file(self) -> str:
        return self.output


# What a name may carry after it in running text (Lima -> Limapi, Limamantam, Limakunapipas), by language. For
# Quechua: the case suffixes, the plural and the enclitics (topic, evidentials, additive, limitative, ...).
SUFFIXES = {
    "qu": (
        "pi", "man", "manta", "pa", "p", "q", "ta", "wan", "kama", "paq", "rayku", "hina", "pura", "kuna", "qa",
        "m", "mi", "s", "si", "ch", "cha", "chá", "taq", "pas", "puni", "lla", "ña", "raq", "yá", "chu",
    ),
}  # fmt: skip


@dataclass
class MatchOptions:
    corpus: list[str] = opt(
        help="Unlabelled text of the target language: files, folders or corpus:NAME, a sentence a line.", argument=1
    )
    entities: list[str] = opt(
        help="Labelled data whose entity names are looked for in the text (CoNLL files or corpus:NAME/SPLIT)."
    )
    output: str = opt(
        help="The folder to write: train.conll, dev.conll, names.tsv (the names looked for), report.json."
    )
    # the zero-shot tagger that may veto a match's type: its `lang` is the text's
    tagger: TaggerSpec = opt(
        factory=TaggerSpec,
        without=("task", "fusion", "ensemble", "runtime"),
        overrides={
            "task_adapter": {"help": "Task adapter whose tags may veto a match (default: ner-LANG, else ner-en)."}
        },
    )
    suffixes: list[str] | None = opt(
        None,
        "Suffixes a name may carry in the text (Limapi, Limamanta), comma-separated (default: the language's "
        f"case and discourse suffixes, for {', '.join(sorted(SUFFIXES))}; none for another language).",
        parse=comma_list,
    )
    veto: bool = opt(True, "Keep every match, whatever the tagger says of its words.", name="no_veto", invert=True)
    drop_labels: list[str] = opt(factory=list, help="Entity types not looked for, e.g. MISC.", parse=comma_list)
    # WikiANN and CoNLL hold names tagged two ways (Washington as PER and LOC): such a name is no evidence
    min_share: float = opt(0.9, "Share of a name's mentions in the labelled data that its type must have.")
    min_letters: int = opt(3, "Letters a name needs (shorter ones match too many words).")
    limit: int | None = opt(None, "Keep at most N matched sentences (a fixed draw by their hashes).")
    dev_share: float = opt(0.1, "Share of the sentences written to dev.conll instead of train.conll.")
    exclude: list[str] = opt(
        factory=lambda: list(QUECHUA_EVALUATION), help="Evaluation splits whose sentences are never written."
    )
    overwrite: bool = opt(False, "Replace an existing output folder.")

    def __post_init__(self):
        at_least("min_letters", self.min_letters, 1)
        at_least("limit", self.limit, 1)
        check_share("min_share", self.min_share)
        check_share("dev_share", self.dev_share)
        check_output_folder(self.output)
        if bad := [s for s in self.suffixes or () if not s.isalpha()]:
            raise XlingError(f"suffixes are letters only, not {bad[0]!r}")

    def suffix_list(self) -> tuple[str, ...]:
        """--suffixes, else the text's language's (its `lang` is known once every option is read)."""
        return tuple(self.suffixes) if self.suffixes is not None else SUFFIXES.get(self.tagger.lang, ())

    def output_file(self) -> str:
        return self.output
