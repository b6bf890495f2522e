"""An xling adapter in the AdapterHub `adapters` library: export, load there, compare the outputs.

xling side: the embedded default with a MAD-X language adapter (Pfeiffer, reduction 2, invertible) and a NER
task adapter with its head, either trained ones from a workspace (--lang-adapter, --task-adapter) or fresh
ones with random weights large enough to move every output; `xling export --format adapterhub` writes both.
Library side (its own virtual environment: it pins Transformers 4.57): `load_adapter` on the exported
directories, `Stack(lang, task)` active, the same token ids. Prints the largest difference of the tag logits
and how many tokens' best tag agree. Then the other way: an adapter with a tagging head that the library adds
and saves (`seq_bn`, random weights), loaded into xling, compared the same way.

    bash ../shared/anchor-bench/setup.sh     # once: the library's virtual environment
    python bench/adapterhub_export.py        # [--library-python PATH] [--lang-adapter DIR --task-adapter DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

import torch

from bench.common import missing, parsed
from tests.tiny import random_madx_adapters
from xling.adapters import AdaptedModel, Stack
from xling.adapters.adapterhub import export_adapterhub
from xling.adapters.saving import load
from xling.models import load_model, resolve_model_dir

SENTENCES = [
    "Arguedas José Maríaqa Andahuaylas llaqtapi paqarirqan.",
    "Qusqu llaqtaqa Perú mama llaqtap ñawpa uma llaqtanmi karqan.",
    "Túpac Amaru II nisqaqa 1780 watapi Tinta llaqtapi hatarirqan.",
    "Lima llaqtapim Universidad Nacional Mayor de San Marcos kachkan.",
]

LIBRARY_SIDE = """
import json, sys, torch
from adapters import AutoAdapterModel
from adapters.composition import Stack
model_dir, lang_dir, task_dir, batch_file = sys.argv[1:5]
model = AutoAdapterModel.from_pretrained(model_dir)
lang = model.load_adapter(lang_dir)
task = model.load_adapter(task_dir)  # with its tagging head
model.set_active_adapters(Stack(lang, task))
model.eval()
batch = json.load(open(batch_file))
with torch.no_grad():
    logits = model(input_ids=torch.tensor(batch["input_ids"]), attention_mask=torch.tensor(batch["attention_mask"])).logits
json.dump({"logits": logits.tolist()}, sys.stdout)
"""


LIBRARY_SAVES = """
import json, sys, torch
from adapters import AutoAdapterModel
model_dir, out_dir, batch_file = sys.argv[1:4]
torch.manual_seed(0)
model = AutoAdapterModel.from_pretrained(model_dir)
model.add_adapter("ah", config="seq_bn")
model.add_tagging_head("ah", num_labels=5, id2label=dict(enumerate(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])))
with torch.no_grad():  # fresh adapters are near the identity: make them change the outputs
    for name, parameter in model.named_parameters():
        if ".ah." in name or name.startswith("heads.ah."):
            parameter.normal_(0, 0.05)
model.set_active_adapters("ah")
model.eval()
model.save_adapter(out_dir, "ah", with_head=True)
batch = json.load(open(batch_file))
with torch.no_grad():
    logits = model(input_ids=torch.tensor(batch["input_ids"]), attention_mask=torch.tensor(batch["attention_mask"])).logits
json.dump({"logits": logits.tolist()}, sys.stdout)
"""


def library(python: str, script: str, out: Path, *args) -> torch.Tensor:
    """Run `script` in the library's environment; the logits it prints."""
    (out / "library_side.py").write_text(script)
    done = subprocess.run([python, str(out / "library_side.py"), *map(str, args)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the adapters library failed:\n{done.stderr[-3000:]}")
    return torch.tensor(json.loads(done.stdout)["logits"])


def compare(title: str, mine: torch.Tensor, theirs: torch.Tensor, bare: torch.Tensor, mask: torch.Tensor) -> None:
    real = mask.bool()
    difference = (mine - theirs).abs()[real]
    agree = (mine.argmax(-1) == theirs.argmax(-1))[real].float().mean().item()
    print(f"{title}, {int(real.sum())} tokens")
    print(
        f"  largest |logit difference|: {difference.max().item():.2e}  (logits span {mine[real].abs().max().item():.2f})"
    )
    print(f"  best tag agrees on {100 * agree:.1f}% of tokens")
    print(f"  (for scale: the adapters change the logits by up to {(mine - bare).abs()[real].max().item():.2f})")


def exported(args, out: Path, batch) -> None:
    """xling's Stack(qu, ner) exported and loaded in the library."""
    if args.lang_adapter and args.task_adapter:
        lang_dir, task_dir = Path(args.lang_adapter), Path(args.task_adapter)
    else:
        lang_dir, task_dir = random_madx_adapters(AdaptedModel(load_model("e5-small")[0]), out)
    model = AdaptedModel(load_model("e5-small")[0])
    lang, task = load(model, lang_dir, name="qu", head=False), load(model, task_dir, name="ner")
    model.set_active(Stack(lang, task))
    model.eval()
    with torch.no_grad():
        mine = model.heads[task](model(batch["input_ids"], batch["attention_mask"]))
        model.set_active(None)  # what the head gives with no adapters: the difference the adapters make
        bare = model.heads[task](model(batch["input_ids"], batch["attention_mask"]))
    export_adapterhub(lang_dir, out / "hub-qu")
    export_adapterhub(task_dir, out / "hub-ner")
    theirs = library(
        args.library_python,
        LIBRARY_SIDE,
        out,
        resolve_model_dir("e5-small"),
        out / "hub-qu",
        out / "hub-ner",
        out / "batch.json",
    )
    compare(
        "xling's Stack(qu, ner) exported, in adapters (Transformers 4.57)", mine, theirs, bare, batch["attention_mask"]
    )


def imported(args, out: Path, batch) -> None:
    """An adapter with a tagging head that the library saved, loaded into xling."""
    theirs = library(
        args.library_python, LIBRARY_SAVES, out, resolve_model_dir("e5-small"), out / "ah", out / "batch.json"
    )
    model = AdaptedModel(load_model("e5-small")[0])
    name = load(model, out / "ah")
    model.set_active(name)
    model.eval()
    with torch.no_grad():
        mine = model.heads[name](model(batch["input_ids"], batch["attention_mask"]))
        model.set_active(None)
        bare = model.heads[name](model(batch["input_ids"], batch["attention_mask"]))
    compare("an adapter with head saved by adapters, loaded into xling", mine, theirs, bare, batch["attention_mask"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library-python", default=str(Path(tempfile.gettempdir()) / "anchor-venv" / "bin" / "python"))
    parser.add_argument("--lang-adapter", help="A trained xling language adapter directory (default: a fresh one).")
    parser.add_argument("--task-adapter", help="A trained xling task adapter directory (default: a fresh one).")
    args = parsed(parser, {})  # its smallest real run is its run: fresh adapters, a few sentences
    if not Path(args.library_python).is_file():
        missing(f"the adapters library's environment ({args.library_python}): bash ../shared/anchor-bench/setup.sh")
    batch = load_model("e5-small")[1](SENTENCES, padding=True, return_tensors="pt")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        (out / "batch.json").write_text(json.dumps({k: v.tolist() for k, v in batch.items() if k != "token_type_ids"}))
        exported(args, out, batch)
        imported(args, out, batch)


if __name__ == "__main__":
    main()
