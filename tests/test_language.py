"""Language adapters: text handling, masking, the masked-LM head and loss, train-lang end to end."""

from __future__ import annotations

import io
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from rich.console import Console
from safetensors.torch import load_file, save_file

from tests.tiny import run_xling, save_tiny_model, tiny_model, tiny_tokenizer
from xling.adapters import AdaptedModel, BottleneckConfig
from xling.adapters.heads import MaskedLMHead, MaskedLMHeadConfig
from xling.data.text import read_text
from xling.errors import XlingError
from xling.train.config import MaskingConfig, TrainConfig
from xling.train.language import mlm_head, split_held_out, train_language_adapter
from xling.train.log_lines import TrainLog
from xling.train.mlm import MaskedLMObjective, pack_blocks
from xling.train.text_config import LanguageAdapterOptions

WORDS = "qusqu llaqta pi runa wasi the city of lima peru juan maria".split()


def write_corpus(path: Path, lines: int = 300, seed: int = 0) -> Path:
    rng = random.Random(seed)
    path.write_text(
        "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(lines)) + "\n"
    )
    return path


@pytest.fixture
def tiny_dir(tmp_path_factory):
    return save_tiny_model("bert", tmp_path_factory.mktemp("model") / "tinybert")


# ---- text ----------------------------------------------------------------------------------


def test_text_is_cleaned_and_deduplicated(tmp_path):
    (tmp_path / "a.txt").write_text("Qusqu llaqta\n\n  Qusqu llaqta  \nCafe\u0301 wasi\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("Café wasi\nruna\n", encoding="utf-8")
    lines, files = read_text([str(tmp_path)])
    assert lines == ["Qusqu llaqta", "Café wasi", "runa"]  # NFC makes the two cafés one line
    assert [f.name for f in files] == ["a.txt", "b.txt"]
    assert read_text([str(tmp_path / "*.txt")])[0] == ["Qusqu llaqta", "Café wasi"]


def test_conll_files_count_as_text(tmp_path):
    (tmp_path / "train").write_text("en:Juan\tB-PER\nen:lives\tO\n\nen:Lima\tB-LOC\n", encoding="utf-8")
    assert read_text([str(tmp_path / "train")])[0] == ["Juan lives", "Lima"]


def test_non_utf8_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"runa\nwasi\nQusqu \xe9\n")
    with pytest.raises(XlingError, match=r"bad.txt:3: not UTF-8"):
        read_text([str(bad)])


def test_held_out_share():
    lines = [f"line {i}" for i in range(1000)]
    train, held = split_held_out(lines, 0.02, seed=1)
    assert len(held) == 20 and len(train) == 980 and not set(held) & set(train)
    assert len(split_held_out(lines, 0.5, seed=1)[1]) == 50  # capped at 5%
    assert len(split_held_out(lines[:10], 0.02, seed=1)[1]) == 1


# ---- blocks and masking ----------------------------------------------------------------------


def test_pack_blocks_and_too_small_corpus():
    tokenizer = tiny_tokenizer()
    blocks = pack_blocks(["qusqu llaqtapi", "the city of lima"], tokenizer, 8, allow_partial=True)
    assert blocks[:, 0].eq(tokenizer.cls_token_id).all() and blocks.shape == (2, 8)
    assert tokenizer.convert_ids_to_tokens(blocks[0].tolist()) == [
        "<s>",
        "▁qusqu",
        "▁llaqta",
        "pi",
        "</s>",
        "▁the",
        "▁city",
        "</s>",
    ]
    with pytest.raises(XlingError, match="corpus too small"):
        pack_blocks(["runa"], tokenizer, 64, allow_partial=False)


def _objective(blocks, tokenizer, **kwargs):
    return MaskedLMObjective("qu", blocks, blocks[:2], tokenizer, MaskingConfig(**kwargs), seed=0)


def test_masking_rates():
    tokenizer = tiny_tokenizer()
    ids = torch.randint(5, len(tokenizer) - 1, (400, 64))
    objective = _objective(ids, tokenizer)
    inputs, chosen = objective.mask(ids, torch.Generator().manual_seed(0))
    assert abs(chosen.float().mean().item() - 0.15) < 0.01
    masked = inputs[chosen] == tokenizer.mask_token_id
    kept = inputs[chosen] == ids[chosen]
    assert abs(masked.float().mean().item() - 0.8) < 0.02
    assert abs(kept.float().mean().item() - 0.1 - 0.1 / len(tokenizer)) < 0.02
    assert torch.equal(inputs[~chosen], ids[~chosen])


def test_whole_word_masking_masks_all_pieces_of_a_word():
    tokenizer = tiny_tokenizer()
    blocks = pack_blocks([" ".join(["qusqupi llaqtapi"] * 30)] * 20, tokenizer, 64, allow_partial=False)
    objective = _objective(blocks, tokenizer, whole_word=True)
    _, chosen = objective.mask(blocks, torch.Generator().manual_seed(0))
    starts = objective.word_start[blocks]
    for row, mask in zip(starts, chosen):
        word_ids = torch.cumsum(row.long(), 0)
        for word in word_ids[mask].unique():
            members = (word_ids == word) & ~objective.special[blocks[0]]
            assert mask[members].all()
    assert 0.08 < chosen.float().mean() < 0.25


# ---- head and loss ---------------------------------------------------------------------------


def test_masked_only_loss_equals_full_vocabulary_loss(tmp_path):
    """Computing logits at masked positions only gives the plain path's loss exactly."""
    encoder, tokenizer = tiny_model("bert")
    model = AdaptedModel(encoder)
    model.add_adapter("qu", BottleneckConfig.preset("madx-lang"))
    model.add_head("qu", mlm_head(model, str(tmp_path), "fresh"))
    model.set_active("qu")
    model.eval()
    blocks = pack_blocks([" ".join(WORDS)] * 40, tokenizer, 32, allow_partial=False)
    objective = _objective(blocks, tokenizer)
    batch = objective.prepare({"index": torch.arange(4)}, step=3)
    with torch.no_grad():
        loss = objective.loss(model, batch, scale=1 / int((batch["labels"] != -100).sum()))
        ids = blocks[:4]
        inputs, chosen = objective.mask(ids, torch.Generator().manual_seed(3))  # seed 0 * 1_000_003 + step
        hidden = model(input_ids=inputs, attention_mask=torch.ones_like(inputs))
        head = model.heads["qu"]
        all_logits = head.logits(model.invert_embeddings(head.transform(hidden)))
        labels = torch.where(chosen, ids, torch.full_like(ids, -100))
        plain = F.cross_entropy(all_logits.view(-1, all_logits.shape[-1]), labels.view(-1), ignore_index=-100)
    assert torch.allclose(loss, plain, atol=1e-5)


def test_vocab_from_corpus_restricts_the_softmax(tmp_path):
    encoder, tokenizer = tiny_model("bert")
    model = AdaptedModel(encoder)
    model.add_adapter("qu", BottleneckConfig.preset("madx-lang"))
    model.add_head("qu", mlm_head(model, str(tmp_path), "fresh"))
    model.set_active("qu")
    blocks = pack_blocks(["qusqu llaqta runa"] * 40, tokenizer, 16, allow_partial=False)
    objective = MaskedLMObjective("qu", blocks, blocks, tokenizer, MaskingConfig(), seed=0, vocab_from_corpus=True)
    assert set(objective.vocab_ids.tolist()) == set(blocks.unique().tolist()) | set(tokenizer.all_special_ids)
    assert len(objective.vocab_ids) < len(tokenizer)
    full_objective = MaskedLMObjective("qu", blocks, blocks, tokenizer, MaskingConfig(), seed=0)
    loss, full = (
        o.loss(model, o.prepare({"index": torch.arange(4)}, step=0), 1.0) for o in (objective, full_objective)
    )
    assert loss < full  # fewer competitors in the softmax
    assert math.isfinite(objective.evaluate(model)["perplexity"])


def test_new_head_is_tied_and_trained_checkpoint_head_is_reused(tmp_path):
    encoder, _ = tiny_model("bert")
    model = AdaptedModel(encoder)
    console = Console(file=io.StringIO(), width=1000)  # one line, whatever the length of the temporary path
    head = mlm_head(model, str(tmp_path), "pretrained", console)
    assert not head.config.from_checkpoint and head.embeddings is encoder.get_input_embeddings()
    assert "embeddings.weight" not in dict(head.named_parameters())
    assert "has no pretrained one, so a fresh head trains" in console.file.getvalue()
    from transformers import AutoModelForMaskedLM

    mlm = AutoModelForMaskedLM.from_config(encoder.config)
    mlm.save_pretrained(tmp_path / "with-head")
    reused = mlm_head(model, str(tmp_path / "with-head"), "pretrained", console)
    assert reused.config.from_checkpoint
    assert torch.equal(reused.dense.weight, mlm.cls.predictions.transform.dense.weight)
    assert not mlm_head(model, str(tmp_path / "with-head"), "fresh", console).config.from_checkpoint


# ---- train-lang ------------------------------------------------------------------------------


def _options(tmp_path, tiny_dir, corpus, **overrides):
    training = overrides.pop(
        "training", TrainConfig(max_steps=12, eval_every=4, checkpoint_every=3, batch_size=4, learning_rate=1e-3)
    )
    return LanguageAdapterOptions(
        lang="qu",
        corpus=[str(corpus)],
        model=str(tiny_dir),
        workspace=str(tmp_path / "ws"),
        training=training,
        seq_len=32,
        **overrides,
    )


def test_train_lang_saves_adapter_head_report_and_log(tmp_path, tiny_dir):
    corpus = write_corpus(tmp_path / "qu.txt")
    report = train_language_adapter(_options(tmp_path, tiny_dir, corpus))
    saved = Path(report.saved_to)
    assert saved == tmp_path / "ws" / "tinybert" / "lang" / "qu"
    assert {p.name for p in saved.iterdir()} == {
        "xling_adapter.json",
        "xling_adapter.safetensors",
        "head_config.json",
        "head_model.safetensors",
        "report.json",
        "train_log.jsonl",
        "README.md",  # the model card
    }
    assert not (saved.parent / "qu.partial").exists()
    config = json.loads((saved / "xling_adapter.json").read_text())
    assert (
        config["config"]["placement"] == "pfeiffer"
        and config["config"]["reduction_factor"] == 2
        and config["config"]["invertible"]
    )
    log = TrainLog.read(saved / "train_log.jsonl")
    assert [e.step for e in log.evaluations] == [0, 4, 8, 12]
    # every --log-every (10) steps and at the last: the mean loss, the learning rate, the step time
    assert [line.step for line in log.training] == [10, 12] and all(line.loss > 0 for line in log.training)
    assert log.training[1].learning_rate < log.training[0].learning_rate and log.training[0].step_seconds > 0
    assert report.steps == 12 and report.tokens_seen > 0
    # 12 steps move a tiny random model's perplexity by noise (0.04 of 12.5 here, up on a GPU): that training
    # lowers it is test_embedded_model_on_real_quechua_lowers_perplexity's check
    assert all(math.isfinite(p) for p in (report.held_out_perplexity_before, report.held_out_perplexity_after))
    assert json.loads((saved / "report.json").read_text())["steps"] == 12


# ---- the shipped masked-LM head ---------------------------------------------------------------


@pytest.fixture
def shipped_head(tmp_path, tiny_dir, monkeypatch) -> dict[str, torch.Tensor]:
    """A head file standing in for the one xling ships with the embedded model, made for the tiny model."""
    encoder, _ = tiny_model("bert")
    embeddings = encoder.get_input_embeddings()
    head = MaskedLMHead(encoder.config.hidden_size, MaskedLMHeadConfig(embeddings.num_embeddings), embeddings)
    with torch.no_grad():
        for tensor in head.parameters():
            tensor.normal_()
    file = tmp_path / "mlm_head.safetensors"
    save_file({name: tensor.contiguous() for name, tensor in head.state_dict().items()}, str(file))
    monkeypatch.setattr("xling.train.language.shipped_mlm_head", lambda label: file)
    return load_file(str(file))


def test_the_shipped_head_is_loaded_and_frozen_while_the_adapter_trains(tmp_path, tiny_dir, shipped_head):
    corpus = write_corpus(tmp_path / "qu.txt")
    report = train_language_adapter(_options(tmp_path, tiny_dir, corpus, mlm_head="pretrained"))
    saved = Path(report.saved_to)
    head = load_file(str(saved / "head_model.safetensors"))
    assert head.keys() == shipped_head.keys() and all(torch.equal(head[k], shipped_head[k]) for k in head)
    assert report.mlm_head == "pretrained" and json.loads((saved / "head_config.json").read_text())["from_checkpoint"]
    # the adapter alone trained: its parameters, not the head's, are the trainable ones
    assert report.trainable_parameters == sum(
        t.numel() for t in load_file(str(saved / "xling_adapter.safetensors")).values()
    )


def test_a_fresh_head_trains_beside_the_adapter_under_a_name_of_its_own(tmp_path, tiny_dir, shipped_head):
    corpus = write_corpus(tmp_path / "qu.txt")
    report = train_language_adapter(_options(tmp_path, tiny_dir, corpus, mlm_head="fresh", name="qu-fresh"))
    saved = Path(report.saved_to)
    assert saved == tmp_path / "ws" / "tinybert" / "lang" / "qu-fresh"
    assert report.mlm_head == "fresh" and report.lang == "qu"
    head = load_file(str(saved / "head_model.safetensors"))
    assert not torch.equal(head["dense.weight"], shipped_head["dense.weight"])


def test_an_unknown_head_choice_is_refused():
    with pytest.raises(XlingError, match="mlm-head must be one of pretrained, fresh"):
        LanguageAdapterOptions(lang="qu", corpus=["x.txt"], mlm_head="shared")


class Crash(BaseException):
    """Stands in for kill -9: nothing is saved on the way out."""


def test_resume_after_crash_finishes_like_an_uninterrupted_run(tmp_path, tiny_dir, monkeypatch):
    corpus = write_corpus(tmp_path / "qu.txt")
    uninterrupted = train_language_adapter(_options(tmp_path / "a", tiny_dir, corpus))

    original = MaskedLMObjective.prepare

    def crashing(self, batch, step):
        if step == 7:
            raise Crash
        return original(self, batch, step)

    monkeypatch.setattr(MaskedLMObjective, "prepare", crashing)
    with pytest.raises(Crash):
        train_language_adapter(_options(tmp_path / "b", tiny_dir, corpus))
    partial = tmp_path / "b" / "ws" / "tinybert" / "lang" / "qu.partial"
    assert json.loads((partial / "checkpoint" / "state.json").read_text())  # step 6 checkpoint is there
    monkeypatch.setattr(MaskedLMObjective, "prepare", original)
    resumed = train_language_adapter(_options(tmp_path / "b", tiny_dir, corpus))

    a = load_file(Path(uninterrupted.saved_to) / "xling_adapter.safetensors")
    b = load_file(Path(resumed.saved_to) / "xling_adapter.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert resumed.held_out_perplexity_after == uninterrupted.held_out_perplexity_after
    log = TrainLog.read(Path(resumed.saved_to) / "train_log.jsonl")
    assert [e.step for e in log.evaluations] == [0, 4, 8, 12] and [line.step for line in log.training] == [10, 12]


def test_changed_options_do_not_silently_resume(tmp_path, tiny_dir, monkeypatch):
    corpus = write_corpus(tmp_path / "qu.txt")
    monkeypatch.setattr(MaskedLMObjective, "loss", lambda *a: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        train_language_adapter(_options(tmp_path, tiny_dir, corpus))
    monkeypatch.undo()
    with pytest.raises(XlingError, match="other options.*--restart"):
        train_language_adapter(_options(tmp_path, tiny_dir, corpus, vocab_from_corpus=True))
    assert (
        train_language_adapter(_options(tmp_path, tiny_dir, corpus, vocab_from_corpus=True, restart=True)).steps == 12
    )


def run_cli(*args, cwd=None):
    return run_xling(*args, cwd=cwd)


@pytest.mark.slow
def test_kill_9_then_rerun_resumes(tmp_path, tiny_dir):
    corpus = write_corpus(tmp_path / "qu.txt", lines=2000)
    args = [
        "train-lang",
        "qu",
        str(corpus),
        "--model",
        str(tiny_dir),
        "-w",
        str(tmp_path / "ws"),
        "--seq-len",
        "32",
        "--steps",
        "400",
        "--checkpoint-every",
        "10",
        "--eval-every",
        "1000",
        "--batch-size",
        "4",
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "xling", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    state = tmp_path / "ws" / "tinybert" / "lang" / "qu.partial" / "checkpoint" / "state.json"
    deadline = time.time() + 120
    while not state.exists() and time.time() < deadline:
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert state.exists() and not (tmp_path / "ws" / "tinybert" / "lang" / "qu").exists()
    step_at_kill = json.loads(state.read_text())
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    assert "resuming" in result.stderr
    assert (tmp_path / "ws" / "tinybert" / "lang" / "qu" / "xling_adapter.safetensors").is_file()
    assert step_at_kill


@pytest.mark.parametrize(
    "case, expected",
    [
        ("empty", "corpus is empty"),
        ("tiny", "corpus too small"),
        ("binary", "not UTF-8"),
        ("missing", "no such file"),
        ("lang", "invalid language code"),
        ("window", "--seq-len 128 is above the 64 positions the model has"),
    ],
)
def test_bad_input_is_a_one_line_error_and_writes_nothing(tmp_path, tiny_dir, case, expected):
    corpus = tmp_path / "corpus.txt"
    lang = "qu"
    if case == "empty":
        corpus.write_text("\n  \n")
    elif case == "tiny":
        corpus.write_text("runa\nwasi\n")
    elif case == "binary":
        corpus.write_bytes(b"\xff\xfe\x00runa\n")
    elif case in ("lang", "window"):
        write_corpus(corpus)
        lang = "q/u!" if case == "lang" else lang
    seq_len = "128" if case == "window" else "32"  # the tiny model has 64 positions
    where = ["--model", str(tiny_dir), "-w", str(tmp_path / "ws"), "--seq-len", seq_len]
    result = run_cli("train-lang", lang, str(corpus), *where)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and expected in last and "Traceback" not in result.stderr
    assert not (tmp_path / "ws").exists()


def test_existing_adapter_is_refused_without_overwrite(tmp_path, tiny_dir):
    corpus = write_corpus(tmp_path / "qu.txt")
    train_language_adapter(_options(tmp_path, tiny_dir, corpus))
    result = run_cli(
        "train-lang", "qu", str(corpus), "--model", str(tiny_dir), "-w", str(tmp_path / "ws"), "--seq-len", "32"
    )
    assert result.returncode == 1 and "already exists" in result.stderr and "--overwrite" in result.stderr
    assert sorted(p.name for p in (tmp_path / "ws" / "tinybert" / "lang").iterdir()) == ["qu"]


@pytest.mark.slow
def test_embedded_model_on_real_quechua_lowers_perplexity(tmp_path, corpora_root, embedded):
    options = LanguageAdapterOptions(
        lang="qu",
        corpus=[str(corpora_root / "text" / "qu" / "qubert-docs-dw_2019.txt")],
        workspace=str(tmp_path),
        training=TrainConfig(max_steps=30, eval_every=30, checkpoint_every=30, batch_size=8, learning_rate=1e-3),
        seq_len=64,
        vocab_from_corpus=True,
        held_out=0.05,
    )
    report = train_language_adapter(options)
    assert report.held_out_perplexity_after < 0.5 * report.held_out_perplexity_before
