"""xling's export in the AdapterHub `adapters` library, which pins Transformers 4.x: in a virtual environment of
its own over this torch, built once and kept in pytest's cache; skipped with the reason when it cannot be built.
The model card's snippet runs as written (its placeholders filled in) and gives xling's logits and entities."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.tiny import random_madx_adapters
from xling.adapters import AdaptedModel, Stack
from xling.adapters.adapterhub import export_adapterhub
from xling.adapters.lora import LoraConfig
from xling.adapters.saving import load
from xling.models import load_model, resolve_model_dir
from xling.roles import TASK
from xling.tagging.tagger import Tagger
from xling.train.cards.adapter import library_snippet

LIBRARY = ["adapters==1.3.0", "transformers==4.57.6"]
# `pipeline()` takes a piece that starts with a space for a word's start (its fallback for tokenizers without a
# sub-word prefix), so a word whose first piece is a bare "▁" (punctuation after a space, some letters such as
# "ñ") is two words there and one in xling: these sentences have none, which the test checks.
SENTENCES = [
    "Arguedas José Maríaqa Andahuaylas llaqtapi paqarirqan",
    "Qusqu llaqtaqa Perú mama llaqtap uma llaqtanmi karqan",
    "Túpac Amaru II nisqaqa 1780 watapi Tinta llaqtapi hatarirqan",
    "Hatun Mayu nisqa mayuqa Amazonas suyupi purin",
    "Mariano Melgar sutiyuq runam Arequipa llaqtapi yacharqan",
]
AFTER_THE_SNIPPET = """
import json, sys, torch
batch = json.load(open(sys.argv[1]))
with torch.no_grad():
    logits = model(input_ids=torch.tensor(batch["input_ids"]), attention_mask=torch.tensor(batch["attention_mask"]))
entities = [[[e["entity_group"], s[e["start"] : e["end"]].strip()] for e in ner(s)] for s in batch["sentences"]]
json.dump({"logits": logits.logits.tolist(), "entities": entities}, open(sys.argv[2], "w"))
"""


def see_our_packages(python: Path) -> None:
    """Let the library's venv import this interpreter's packages (torch), after its own: a `.pth` file naming our
    site-packages folders. `--system-site-packages` would not do inside a venv, where it sees the base
    interpreter's packages rather than the venv's."""
    ours = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "xling-test-parent.pth").write_text("\n".join(ours) + "\n")


def library_venv(pytestconfig, name: str, requirements: list[str]) -> Path:
    """The python of a venv kept in pytest's cache under `name`, with `requirements` over this interpreter's
    packages (torch); built again when they change; the test skipped with pip's reason when it cannot be built."""
    venv = Path(pytestconfig.cache.mkdir(name))
    python, installed = venv / "bin" / "python", venv / "installed"
    if not installed.is_file() or installed.read_text() != " ".join(requirements):
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        see_our_packages(python)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *requirements], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot install {' '.join(requirements)}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
        installed.write_text(" ".join(requirements))
    return python


@pytest.fixture(scope="session")
def library_python(pytestconfig) -> Path:
    return library_venv(pytestconfig, "adapters-library", LIBRARY)


@pytest.mark.slow
@pytest.mark.parametrize("task_kind", ["bottleneck", "lora"])
def test_the_cards_snippet_loads_an_export_in_the_library_with_xlings_logits_and_entities(
    xling_home, tmp_path, library_python, task_kind
):
    encoder, tokenizer = load_model("e5-small")  # its own: adapters hook into the encoder they wrap
    task_config = LoraConfig(rank=8, alpha=16) if task_kind == "lora" else None
    lang_dir, task_dir = random_madx_adapters(AdaptedModel(encoder), tmp_path, task_config)
    model = AdaptedModel(encoder)
    model.set_active(Stack(load(model, lang_dir, name="qu", head=False), load(model, task_dir, name="ner")))
    model.eval()
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    assert "▁" not in {piece for ids in batch["input_ids"] for piece in tokenizer.convert_ids_to_tokens(ids)}
    with torch.no_grad():
        mine = model.heads["ner"](model(batch["input_ids"], batch["attention_mask"]))
    tagger = Tagger(model, tokenizer, "ner", model.active, decoder="repair", precision="fp32")
    my_entities = [[[span.label, span.text] for span in tagger(text)] for text in SENTENCES]

    export_adapterhub(lang_dir, tmp_path / "hub-qu")
    export_adapterhub(task_dir, tmp_path / "hub-ner")
    snippet = re.search(r"```python\n(.*?)```", library_snippet(TASK, "ner", None, embedded=True), re.S).group(1)
    for placeholder, value in {"BASE_DIR": resolve_model_dir("e5-small"), "LANG_DIR": tmp_path / "hub-qu"}.items():
        snippet = snippet.replace(placeholder, str(value))
    (tmp_path / "library.py").write_text(snippet.replace('"DIR"', repr(str(tmp_path / "hub-ner"))) + AFTER_THE_SNIPPET)
    inputs = {"input_ids": batch["input_ids"].tolist(), "attention_mask": batch["attention_mask"].tolist()}
    (tmp_path / "batch.json").write_text(json.dumps({**inputs, "sentences": SENTENCES}))
    command = [str(library_python), str(tmp_path / "library.py"), str(tmp_path / "batch.json"), str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads((tmp_path / "out").read_text())

    real = batch["attention_mask"].bool()
    library_logits = torch.tensor(theirs["logits"])
    assert (mine - library_logits).abs()[real].max() <= 1e-4
    assert torch.equal(mine.argmax(-1)[real], library_logits.argmax(-1)[real])
    assert any(my_entities) and theirs["entities"] == my_entities
