"""Optimum's route to xling's ONNX export: `ORTModelForTokenClassification` and a Transformers `pipeline()` on the
folder `xling export --format onnx` writes, in a virtual environment of its own (Optimum's ONNX Runtime package
pins Transformers 4.x) over this torch, built once and kept in pytest's cache; skipped with pip's reason when it
cannot be built. docs/sharing.md names these versions."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.test_adapters_library import SENTENCES, library_venv
from tests.tiny import run_xling

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")

OPTIMUM = ["optimum-onnx[onnxruntime]==0.1.0", "transformers==4.57.6"]
THE_ROUTE = """
import json, sys
from optimum.onnxruntime import ORTModelForTokenClassification
from transformers import AutoTokenizer, pipeline

model = ORTModelForTokenClassification.from_pretrained(sys.argv[1])
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
ner = pipeline("token-classification", model=model, tokenizer=tokenizer, aggregation_strategy="first")
found = [[[e["entity_group"], s[e["start"] : e["end"]].strip()] for e in ner(s)] for s in json.loads(sys.argv[2])]
print(json.dumps(found))
"""


@pytest.mark.slow
def test_optimum_loads_an_export_and_its_pipeline_finds_xlings_entities(xling_home, pytestconfig, tmp_path):
    from xling.tagging.onnx_tagger import OnnxTagger

    folder = tmp_path / "ner-qu-onnx"  # the shipped Stack(qu, ner-en) on the embedded default
    exported = run_xling("export", "ner-en", folder, "--format", "onnx", "--lang", "qu")
    assert exported.returncode == 0, exported.stderr
    # `first` takes each word's first sub-token's most probable tag: xling's repair decoder
    mine = [[[s.label, s.text] for s in OnnxTagger(folder, decoder="repair")(text)] for text in SENTENCES]
    python = library_venv(pytestconfig, "optimum-onnx", OPTIMUM)
    (tmp_path / "route.py").write_text(THE_ROUTE)
    done = subprocess.run(
        [str(python), str(tmp_path / "route.py"), str(folder), json.dumps(SENTENCES)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert any(mine) and json.loads(done.stdout.strip().splitlines()[-1]) == mine
