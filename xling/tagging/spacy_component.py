"""`nlp.add_pipe("xling_ner", config={...})`: xling's tagger as a spaCy component that sets `doc.ents`.

An optional extra (`pip install -e ".[spacy]"` from a clone); spaCy finds the factory through the `spacy_factories`
entry point. The config keys are `TaggerSpec`'s fields (`Tagger.load`'s settings). Entities are xling's character spans on
`doc.text` (the same as `xling tag` and `Tagger` give), widened to whole spaCy tokens where the two
tokenisers cut a word differently; each keeps its score as `span._.score` (the mean probability of its tags).

`nlp.to_disk(DIR)` copies the adapters the component uses into `DIR/<component>/` and `spacy.load(DIR)` tags
from that copy, so a saved pipeline moves to another machine (and `spacy package` builds it) without the
workspace it was made from. A new component's tagger loads on first use, a saved one's when the pipeline loads
(its settings checked); a loaded pipeline never reads the config's workspace, and the saved `config.cfg` names
no workspace or adapter folder of the machine that saved it.
"""

from __future__ import annotations

import inspect
import json
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import filter_spans
from thinc.api import Config

from xling.data.decoding import check_decoder
from xling.device import check_device, check_precision
from xling.errors import XlingError, naming
from xling.fileio import read_json
from xling.models.loading import DEFAULT_MODEL
from xling.options import from_record
from xling.tagging.base import check_batch_size
from xling.tagging.spec import TaggerSpec
from xling.tagging.tagger import Tagger
from xling.workspace import check_lang, is_path

SAVED = "xling.json"
LOCAL_PATH_KEYS = ("workspace", "task_adapter", "lang_adapter", "fusion")
if not Span.has_extension("score"):
    Span.set_extension("score", default=None)


@dataclass
class SavedComponent:
    """`xling.json` in a saved pipeline's component folder: how to tag with the adapters copied beside it."""

    lang: str
    paragraphs: bool
    lang_adapter: bool
    decoder: str | None = None
    model: str = DEFAULT_MODEL
    batch_size: int = 32
    precision: str = "auto"
    device: str = "auto"

    def __post_init__(self):
        check_lang(self.lang)
        check_decoder(self.decoder)
        check_batch_size(self.batch_size)
        check_precision(self.precision, inference=True)
        check_device(self.device)


class XlingNER:
    def __init__(self, load: dict, paragraphs: bool, name: str = "xling_ner"):
        self.load, self.paragraphs, self.name = load, paragraphs, name
        self._tagger: Tagger | None = None

    @property
    def tagger(self) -> Tagger:
        if self._tagger is None:
            self._tagger = Tagger.load(**self.load)
        return self._tagger

    def __call__(self, doc: Doc) -> Doc:
        return next(self.pipe([doc]))

    def pipe(self, docs: Iterable[Doc], batch_size: int = 256) -> Iterator[Doc]:
        docs = iter(docs)
        while batch := [doc for _, doc in zip(range(batch_size), docs)]:
            for doc, tagged in zip(batch, self.tagger.tag_texts([doc.text for doc in batch], self.paragraphs)):
                spans = []
                for found in tagged.spans:
                    span = doc.char_span(found.start, found.end, found.label, alignment_mode="expand")
                    if span is not None:
                        span._.score = found.score
                        spans.append(span)
                doc.ents = filter_spans(spans)
                yield doc

    def to_disk(self, path: str | Path, exclude: Iterable[str] = ()) -> None:
        """The adapters (copied) and the settings that tag with them."""
        tagger, path = self.tagger, Path(path)
        if "task" not in tagger.directories:
            raise XlingError("a spaCy pipeline with a fusion cannot be saved yet; use a single task adapter")
        path.mkdir(parents=True, exist_ok=True)
        for role, directory in tagger.directories.items():
            if Path(directory).resolve() != (path / role).resolve():  # saved again where it was loaded from: kept
                shutil.rmtree(path / role, ignore_errors=True)
                shutil.copytree(directory, path / role)
        settings = {k: self.load[k] for k in ("lang", "model", "batch_size", "precision", "device") if k in self.load}
        settings |= {
            "decoder": tagger.decoder,
            "paragraphs": self.paragraphs,
            "lang_adapter": "lang" in tagger.directories,
        }
        (path / SAVED).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        self._forget_local_paths(path.parent / "config.cfg")

    def _forget_local_paths(self, config_file: Path) -> None:
        """`nlp.to_disk` writes `config.cfg` before any component: this component's section would keep the
        workspace and adapter paths of the machine that saved it, which loading never reads (the copies above
        serve instead). Clear them, so that the saved pipeline names no local folder."""
        if not config_file.is_file():
            return
        config = Config().from_disk(config_file, interpolate=False)
        section = config.get("components", {}).get(self.name)
        if not section or section.get("factory") != "xling_ner":
            return
        for key in LOCAL_PATH_KEYS:
            if isinstance(section.get(key), str) and (key == "workspace" or is_path(section[key])):
                section[key] = None
        config.to_disk(config_file)

    def from_disk(self, path: str | Path, exclude: Iterable[str] = ()) -> XlingNER:
        """The saved settings, checked, and the tagger loaded from the copied adapters: a damaged pipeline is
        refused by `spacy.load`, not at its first document."""
        path = Path(path).resolve()
        saved = from_record(SavedComponent, read_json(path / SAVED), str(path / SAVED))
        settings = {k: v for k, v in asdict(saved).items() if k not in ("paragraphs", "lang_adapter")}
        self.paragraphs = saved.paragraphs
        self.load = settings | {"task_adapter": str(path / "task"), "use_lang_adapter": saved.lang_adapter}
        if saved.lang_adapter:
            self.load["lang_adapter"] = str(path / "lang")
        self._tagger = None
        with naming(str(path / SAVED)):
            self.tagger  # noqa: B018 (loads it)
        return self


def make_xling_ner(nlp: Language, name: str, paragraphs: bool = False, **load) -> XlingNER:
    return XlingNER(load, paragraphs, name)


# The config's keys, types and defaults are TaggerSpec's (spaCy reads them from the signature): they cannot drift.
_own = list(inspect.signature(make_xling_ner).parameters.values())[:3]
_load = [
    inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
    for f in fields(TaggerSpec)
]
make_xling_ner.__signature__ = inspect.Signature(_own + _load)
Language.factory("xling_ner", func=make_xling_ner)
