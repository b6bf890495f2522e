"""`nlp.add_pipe("xling_ner", config={...})`: xling's tagger as a spaCy component that sets `doc.ents`.

An optional extra (`pip install -e ".[spacy]"` from a clone); spaCy finds the factory through the
`spacy_factories` entry point. The config keys are `TaggerSpec`'s fields (`Tagger.load`'s settings), `paragraphs`
and `overwrite_ents`. xling tags spaCy's own tokens, so every entity is whole spaCy tokens, and keeps its score as
`span._.score` (the mean probability of its tags; None on an entity another component set). With `paragraphs`,
each sentence is tagged apart: the pipeline's own sentences where a component before sets them, else xling's
splitter. Entities already in `doc.ents` (an `entity_ruler`'s, a gazetteer's) are kept and xling's are added where
they overlap none, as spaCy's own `ner` does; with `overwrite_ents`, xling's replace those they overlap.
`nlp.evaluate` reports `ents_p`, `ents_r`, `ents_f` and `ents_per_type` through the component's `score`.

`nlp.to_disk(DIR)` copies the adapters the component uses (a fusion with the task adapters it fuses) into a
workspace of its own, `DIR/<component>/workspace/`, and `spacy.load(DIR)` tags from that copy, so a saved pipeline
moves to another machine (and `spacy package` builds it) without the workspace it was made from. A new component's
config is checked at `add_pipe` (its values, and the workspace and adapters it names) and its tagger loads on
first use, a saved one's when the pipeline loads (its settings checked); a loaded pipeline never reads the
config's workspace, and the saved `config.cfg` names no workspace or adapter folder of the machine that saved it.
The saved `meta.json` says what the pipeline needs: xling with its `spacy` extra, from its repository (it is not
on PyPI), at the version that saved it.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path

from packaging.requirements import Requirement
from spacy.language import Language
from spacy.scorer import get_ner_prf
from spacy.tokens import Doc, Span
from thinc.api import Config

from xling import __version__
from xling.adapters.composition import check_name
from xling.data.decoding import check_decoder
from xling.data.iob2 import entities
from xling.device import check_device, check_precision
from xling.errors import XlingError, naming
from xling.models.loading import DEFAULT_MODEL
from xling.names import check_lang
from xling.records import Record
from xling.roles import TASK
from xling.tagging.base import check_batch_size
from xling.tagging.spec import TaggerSpec
from xling.tagging.tagger import Tagger
from xling.tagging.words import split_sentences
from xling.workspace import Workspace

SAVED = "xling.json"
WORKSPACE = "workspace"  # the component folder's own workspace, holding copies of the adapters it tags with
LOCAL_PATH_KEYS = ("workspace", "task_adapter", "lang_adapter", "fusion")
if not Span.has_extension("score"):
    Span.set_extension("score", default=None)


@dataclass
class SavedComponent(Record):
    """`xling.json` in a saved pipeline's component folder: how to tag with the adapters in its workspace, named
    as there."""

    lang: str
    paragraphs: bool
    lang_adapter: str | None  # None: tagged without a language adapter
    task_adapter: str | None = None
    fusion: str | None = None
    overwrite_ents: bool = False
    decoder: str | None = None
    model: str = DEFAULT_MODEL
    batch_size: int = 32
    precision: str = "auto"
    device: str = "auto"
    ensemble: list[str] = field(default_factory=list)  # task adapters averaged with task_adapter's

    def __post_init__(self):
        check_lang(self.lang)
        for name in (self.lang_adapter, self.task_adapter, self.fusion, *self.ensemble):
            if name is not None:
                check_name(name)
        if (self.task_adapter is None) == (self.fusion is None):
            raise XlingError("a saved component names a task adapter or a fusion, one of them")
        check_decoder(self.decoder)
        check_batch_size(self.batch_size)
        check_precision(self.precision, inference=True)
        check_device(self.device)


class XlingNER:
    def __init__(self, load: dict, paragraphs: bool, overwrite_ents: bool = False, name: str = "xling_ner"):
        self.load, self.paragraphs, self.overwrite_ents, self.name = load, paragraphs, overwrite_ents, name
        self._tagger: Tagger | None = None
        self._loaded_in = os.getpid()

    @property
    def tagger(self) -> Tagger:
        """Loaded on first use, and again in a process forked after it loaded (`nlp.pipe(n_process=N)`): a
        child computing with the parent's thread pools hangs, so it takes threads and a tagger of its own."""
        if self._tagger is not None and self._loaded_in != os.getpid():
            import torch

            torch.set_num_threads(1)  # the children share the cores; the parent's pools are not theirs
            self._tagger = None
        if self._tagger is None:
            self._tagger, self._loaded_in = Tagger.load(**self.load), os.getpid()
        return self._tagger

    def __call__(self, doc: Doc) -> Doc:
        return next(self.pipe([doc]))

    def pipe(self, docs: Iterable[Doc], batch_size: int = 256) -> Iterator[Doc]:
        docs = iter(docs)
        while batch := [doc for _, doc in zip(range(batch_size), docs)]:
            pieces = [(doc, [t.i for t in piece if not t.is_space]) for doc in batch for piece in self._pieces(doc)]
            pieces = [(doc, kept) for doc, kept in pieces if kept]
            tagged = self.tagger.tag_words([[doc[i].text for i in kept] for doc, kept in pieces])
            found: dict[int, list[tuple[Span, float]]] = {id(doc): [] for doc in batch}
            for (doc, kept), words in zip(pieces, tagged):
                for kind, first, end in entities([tag for tag, _ in words]):
                    span = Span(doc, kept[first], kept[end - 1] + 1, label=kind)
                    found[id(doc)].append((span, round(sum(p for _, p in words[first:end]) / (end - first), 4)))
            for doc in batch:
                self._set_entities(doc, found[id(doc)])
                yield doc

    def _pieces(self, doc: Doc) -> list[Span]:
        """What is tagged as one sequence: the whole doc, or with `paragraphs` each sentence (the pipeline's, else
        xling's splitter's, widened to whole tokens)."""
        if not self.paragraphs:
            return [doc[:]]
        if doc.has_annotation("SENT_START"):
            return list(doc.sents)
        pieces, covered = [], 0
        for start, end in split_sentences(doc.text):
            piece = doc.char_span(start, end, alignment_mode="expand")
            if piece is not None and piece.end > covered:
                pieces.append(doc[max(piece.start, covered) : piece.end])
                covered = piece.end
        return pieces

    def _set_entities(self, doc: Doc, scored: list[tuple[Span, float]]) -> None:
        """xling's spans beside the entities already set: where they overlap, the earlier ones stay (or, with
        `overwrite_ents`, xling's replace them). Only the spans of xling's kept get its score: spaCy keeps a
        span's extensions by its offsets and label, so an earlier entity equal to one of xling's would show it."""
        spans, earlier = [span for span, _ in scored], list(doc.ents)
        first, second = (spans, earlier) if self.overwrite_ents else (earlier, spans)
        taken = {i for span in first for i in range(span.start, span.end)}
        kept = first + [span for span in second if taken.isdisjoint(range(span.start, span.end))]
        chosen = {id(span) for span in kept}
        for span, score in scored:
            if id(span) in chosen:
                span._.score = score
        doc.set_ents(sorted(kept, key=lambda span: span.start), default="outside")

    def score(self, examples: Iterable, **kwargs) -> dict:
        """Entity precision, recall and F1, overall and per type, as spaCy's own `ner` scores them."""
        return get_ner_prf(examples, **kwargs)

    def to_disk(self, path: str | Path, exclude: Iterable[str] = ()) -> None:
        """The adapters, copied into the component's own workspace, and the settings that tag with them."""
        tagger, path = self.tagger, Path(path)
        workspace = Workspace(path / WORKSPACE, self.load.get("model", DEFAULT_MODEL))
        copies = [(role, folder.name, folder) for role, folder in tagger.directories.by_role()]
        others = getattr(tagger, "ensemble", {})  # an ensemble's task adapters beside the first's
        copies += [(TASK, name, directory) for name, directory in (tagger.fused | others).items()]  # found by name
        staging = path / f"{WORKSPACE}.new"
        shutil.rmtree(staging, ignore_errors=True)
        for role, name, directory in copies:
            shutil.copytree(directory, staging / workspace.model_dir.name / role.name / name)
        shutil.rmtree(path / WORKSPACE, ignore_errors=True)
        staging.rename(path / WORKSPACE)  # after the copy: the folder may be where this tagger loaded from
        folders = tagger.directories
        settings = {k: self.load[k] for k in ("lang", "model", "batch_size", "precision", "device") if k in self.load}
        settings |= {
            "decoder": tagger.decoder,
            "paragraphs": self.paragraphs,
            "overwrite_ents": self.overwrite_ents,
            "lang_adapter": folders.lang and folders.lang.name,
            "task_adapter": folders.task and folders.task.name,
            "fusion": folders.fusion and folders.fusion.name,
            "ensemble": list(others),
        }
        (path / SAVED).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        self._forget_local_paths(path.parent / "config.cfg")
        self._say_requirements(path.parent / "meta.json")

    def _forget_local_paths(self, config_file: Path) -> None:
        """`nlp.to_disk` writes `config.cfg` before any component: this component's section would keep the
        workspace and adapter paths of the machine that saved it, which loading never reads (the copies above
        serve instead, named in `xling.json`). Clear them, so that the saved pipeline names no local folder and
        its factory checks none."""
        if not config_file.is_file():
            return
        config = Config().from_disk(config_file, interpolate=False)
        section = config.get("components", {}).get(self.name)
        if not section or section.get("factory") != "xling_ner":
            return
        for key in LOCAL_PATH_KEYS:
            section[key] = None
        config.to_disk(config_file)

    def _say_requirements(self, meta_file: Path) -> None:
        """spaCy writes a requirement on xling's minor-version range, as for any package on PyPI; the pipeline
        needs xling with its spaCy extra, installed from its repository, of the adapters' format."""
        if not meta_file.is_file():
            return
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        others = [r for r in meta.get("requirements", []) if Requirement(r).name != "xling"]
        meta["requirements"] = [f"xling[spacy]>={__version__},<{next_minor(__version__)}", *others]
        if REQUIREMENT_NOTE not in meta.get("notes", ""):
            meta["notes"] = f"{meta.get('notes', '')}\n\n{REQUIREMENT_NOTE}".strip()
        meta_file.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    def from_disk(self, path: str | Path, exclude: Iterable[str] = ()) -> XlingNER:
        """The saved settings, checked, and the tagger loaded from the copied adapters: a damaged pipeline is
        refused by `spacy.load`, not at its first document."""
        path = Path(path).resolve()
        saved = SavedComponent.read(path / SAVED)
        self.paragraphs, self.overwrite_ents = saved.paragraphs, saved.overwrite_ents
        settings = {k: v for k, v in asdict(saved).items() if k not in ("paragraphs", "overwrite_ents")}
        self.load = settings | {"workspace": str(path / WORKSPACE), "use_lang_adapter": saved.lang_adapter is not None}
        self._tagger = None
        with naming(str(path / SAVED)):
            self.tagger  # noqa: B018 (loads it)
        return self


REQUIREMENT_NOTE = (
    'Needs xling with its spaCy extra (`pip install -e ".[spacy]"` from a clone of xling\'s repository; xling '
    "is not on PyPI yet) and the Python packages it installs; the adapters are in the xling_ner folder."
)


def next_minor(version: str) -> str:
    major, minor = (int(part) for part in version.split(".")[:2])
    return f"{major}.{minor + 1}.0"


def make_xling_ner(
    nlp: Language, name: str, paragraphs: bool = False, overwrite_ents: bool = False, **load
) -> XlingNER:
    """The component, its config checked now, so that `add_pipe` refuses a bad one rather than the first
    document: its values, and where it names a workspace or an adapter, that they are there (a saved pipeline's
    config names neither: `spacy.load` reads its own copies, and checks them). The model loads on first use."""
    with naming(f"the {name} component's config"):
        spec = TaggerSpec(**load)
        if any(load.get(key) for key in LOCAL_PATH_KEYS):
            spec.check_now()
    return XlingNER(load, paragraphs, overwrite_ents, name)


# The config's keys, types and defaults are TaggerSpec's (spaCy reads them from the signature): they cannot drift.
_own = list(inspect.signature(make_xling_ner).parameters.values())[:4]
_load = [
    inspect.Parameter(
        f.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=f.default_factory() if f.default is MISSING else f.default,  # a list's default is made by a factory
        annotation=f.type,
    )
    for f in fields(TaggerSpec)
]
make_xling_ner.__signature__ = inspect.Signature(_own + _load)
# what `nlp.evaluate` and `spacy train` weigh among the scores, as for spaCy's own `ner`
SCORE_WEIGHTS = {"ents_f": 1.0, "ents_p": 0.0, "ents_r": 0.0, "ents_per_type": None}
Language.factory("xling_ner", func=make_xling_ner, default_score_weights=SCORE_WEIGHTS)
