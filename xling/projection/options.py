"""The options of `xling project`: the parallel text, the source side's tagger, how words align, what is kept."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xling.errors import XlingError
from xling.fileio import check_output_name
from xling.names import check_lang
from xling.options import at_least, opt
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
        without=("lang", "task", "fusion", "runtime"),
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
        for name in ("empty_share", "dev_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise XlingError(f"{name.replace('_', '-')} must be between 0 and 1, not {getattr(self, name)}")
        output = check_output_name(Path(self.output or "."))  # below folders only, and a folder if it exists
        if output.exists() and not output.is_dir():
            raise XlingError(f"--output {output} is a file, not a folder; give a folder to write")

    def output_file(self) -> str:
        return self.output
