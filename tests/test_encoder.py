"""Adapting the encoder itself (`xling train-encoder`): what trains, the mix of sources and translation pairs, what
never trains, the model folder it writes and every command taking that folder as `-m`. (Exact resume after a
signal: `tests/test_interrupts.py`.)"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.tiny import run_xling, save_tiny_model, synthetic_conll, tiny_tokenizer
from xling.data.fingerprints import lines_holding
from xling.errors import XlingError
from xling.train.config import TrainConfig
from xling.train.encoder import read_sources, train_encoder
from xling.train.log_lines import TrainLog
from xling.train.mlm import BlockMix, pack_pairs, temperature_shares
from xling.train.text_config import EncoderOptions

WORDS = "qusqu llaqta pi runa wasi mayu orqo the city of lima peru juan maria".split()
SHORT = ["--steps", "2", "--seq-len", "32"]
SECRET = "Juan Maria llaqta pi runa wasi mayu kachkan"  # a sentence of the evaluation split


def write_lines(path: Path, lines: int, seed: int, extra: list[str] = ()) -> Path:
    rng = random.Random(seed)
    text = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 10))) for _ in range(lines)]
    path.write_text("\n".join(text + list(extra)) + "\n")
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A tiny BERT, Quechua and English text, Spanish-Quechua pairs, and an evaluation split whose one sentence
    hides in the text (inside a longer line) and in a pair."""
    root = tmp_path_factory.mktemp("encoder")
    model = save_tiny_model("bert", root / "tinybert")
    write_lines(root / "qu.txt", 200, 1, extra=[f"Chaymantaqa {SECRET} nispa nirqan"])
    write_lines(root / "en.txt", 80, 2)
    (root / "pairs").mkdir()
    spanish = [f"el río {i} pasa por Lima" for i in range(40)] + ["Juan y María viven aquí"]
    (root / "pairs" / "a.es").write_text("\n".join(spanish) + "\n")
    (root / "pairs" / "a.qu").write_text("\n".join([f"mayu {i} Lima llaqtata" for i in range(40)] + [SECRET]) + "\n")
    (root / "eval.conll").write_text("".join(f"{word}\tO\n" for word in SECRET.split()) + "\n")
    return root, model


def options(data, tmp_path, **changes) -> EncoderOptions:
    root, model = data
    settings = dict(
        lang="qu",
        corpus=[str(root / "qu.txt")],
        also=[f"en={root / 'en.txt'}"],
        parallel=[str(root / "pairs")],
        exclude=[str(root / "eval.conll")],
        model=str(model),
        workspace=str(tmp_path / "ws"),
        seq_len=32,
        training=TrainConfig(max_steps=4, batch_size=4, eval_every=2, learning_rate=1e-3, precision="fp32"),
    )
    return EncoderOptions(**(settings | changes))


def test_pairs_share_a_block_with_both_sides_each_ending_in_a_separator():
    tokenizer = tiny_tokenizer()
    pairs = [("the city of lima", "lima llaqta"), ("juan", "runa wasi")]
    blocks = pack_pairs(pairs, tokenizer, 32)
    assert blocks.shape == (1, 32)  # both pairs fit one block
    ids = blocks[0].tolist()
    sep, cls = tokenizer.sep_token_id, tokenizer.cls_token_id
    expected = [cls]
    for a, b in pairs:
        expected += tokenizer(a, add_special_tokens=False)["input_ids"] + [sep]
        expected += tokenizer(b, add_special_tokens=False)["input_ids"] + [sep]
    assert ids[: len(expected)] == expected
    assert set(ids[len(expected) :]) == {tokenizer.pad_token_id}
    # a pair that does not fit what is left of a block starts the next one, never cut between two blocks
    assert len(pack_pairs(pairs * 6, tokenizer, 12)) == 12  # 1 + 8 + 5 pieces > 12: a block a pair


def test_shares_follow_the_temperature_and_the_mix_draws_by_them():
    shares = temperature_shares({"qu": 900, "en": 100}, 1.0)
    assert shares == pytest.approx({"qu": 0.9, "en": 0.1})
    flatter = temperature_shares({"qu": 900, "en": 100}, 2.0)
    assert flatter["qu"] == pytest.approx(30 / 40)
    mix = BlockMix({"qu": torch.zeros(900, 4, dtype=torch.long), "en": torch.ones(100, 4, dtype=torch.long)}, flatter)
    order = mix.order(torch.Generator().manual_seed(0))
    assert len(order) == 1000 and torch.equal(order, mix.order(torch.Generator().manual_seed(0)))
    drawn_en = float((mix.blocks[order][:, 0] == 1).float().mean())
    assert drawn_en == pytest.approx(0.25, abs=0.04)  # English oversampled from its 10% to its share
    english = order[order >= 900]
    assert len(set(english[:100].tolist())) == 100  # each English block once before any repeats


def test_a_sentence_of_an_evaluation_split_never_trains(data, tmp_path):
    assert lines_holding(["a b", f"x {SECRET} y", SECRET.lower()], [SECRET.split()]) == {1, 2}
    sources = read_sources(options(data, tmp_path), "qu")
    by_name = {source.name: source for source in sources}
    assert set(by_name) == {"qu", "en", "es-qu"}
    everything = [line for s in sources for line in s.train + s.held_out if isinstance(line, str)]
    everything += [side for s in sources if s.parallel for pair in s.train for side in pair]
    assert not any("juan maria llaqta" in line.lower() for line in everything)
    assert by_name["qu"].left_out == 1 and by_name["es-qu"].left_out == 1
    assert len(by_name["es-qu"].train) == 40


def test_no_embeddings_trains_the_head_with_the_encoder_and_leaves_the_embeddings_bit_identical(data, tmp_path):
    root, model = data
    report = train_encoder(options(data, tmp_path))
    folder = Path(report.saved_to)
    before, after = load_file(model / "model.safetensors"), load_file(folder / "model.safetensors")
    name = "embeddings.word_embeddings.weight"
    assert torch.equal(after[f"bert.{name}"], before[name])
    layer = "encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(after[f"bert.{layer}"], before[layer])
    start = torch.zeros(after["cls.predictions.bias"].shape)  # a tiny model has no head: a fresh one starts at 0
    assert after["cls.predictions.transform.dense.weight"].std() > 0
    assert not torch.equal(after["cls.predictions.bias"], start)
    assert [m.name for m in report.mix] == ["qu", "en", "es-qu"]
    assert sum(m.share for m in report.mix) == pytest.approx(1, abs=1e-3)
    assert set(report.held_out_perplexity) == {"qu", "en"}
    log = TrainLog.read(folder / "train_log.jsonl").evaluations
    assert [entry.step for entry in log] == [0, 2, 4] and all("perplexity_en" in entry.metrics for entry in log)
    card = (folder / "README.md").read_text()
    assert "pipeline_tag: fill-mask" in card and "es-qu (translation pairs)" in card


def test_options_beyond_the_model_are_refused_before_any_block_or_update_is_made(data, tmp_path):
    assert temperature_shares({"qu": 10**7, "en": 100}, 0.001) == pytest.approx({"qu": 1.0, "en": 0.0})  # no overflow
    positions = json.loads((data[1] / "config.json").read_text())["max_position_embeddings"]
    with pytest.raises(XlingError, match=f"--seq-len {positions + 1} is above the {positions} positions the model has"):
        train_encoder(options(data, tmp_path, seq_len=positions + 1))
    with pytest.raises(XlingError, match="--lora-rank 100000 is above the model's hidden size 32"):
        train_encoder(options(data, tmp_path, method="lora", lora_rank=100_000))
    assert not (tmp_path / "ws").exists() or not list((tmp_path / "ws").rglob("*.safetensors"))


def test_vocab_from_corpus_restricts_the_softmax_to_the_pieces_of_every_source_of_the_mix(data, tmp_path):
    from xling.train.config import MaskingConfig
    from xling.train.mlm import MaskedLMObjective

    tokenizer = tiny_tokenizer()
    mix = BlockMix({"qu": torch.tensor([[5, 6, 7]]), "en": torch.tensor([[8, 9, 5]])}, {"qu": 0.5, "en": 0.5})
    objective = MaskedLMObjective("qu", mix, torch.tensor([[5, 6]]), tokenizer, MaskingConfig(), 1, True)
    special = set(tokenizer.all_special_ids)
    assert set(objective.vocab_ids.tolist()) == {5, 6, 7, 8, 9} | special
    report = train_encoder(options(data, tmp_path, vocab_from_corpus=True))  # qu, en and translation pairs
    assert report.steps == 4 and all(0 < p < float("inf") for p in report.held_out_perplexity["qu"].values())


def test_full_trains_the_embeddings_and_lora_is_merged_into_a_plain_encoder(data, tmp_path):
    root, model = data
    before = load_file(model / "model.safetensors")
    full = load_file(Path(train_encoder(options(data, tmp_path / "a", method="full")).saved_to) / "model.safetensors")
    assert not torch.equal(full["bert.embeddings.word_embeddings.weight"], before["embeddings.word_embeddings.weight"])
    report = train_encoder(options(data, tmp_path / "b", method="lora", lora_rank=2))
    lora = load_file(Path(report.saved_to) / "model.safetensors")
    assert set(lora) == set(full)  # no parametrisation left: the same names as any encoder
    weight = "encoder.layer.1.intermediate.dense.weight"
    delta = lora[f"bert.{weight}"] - before[weight]
    assert 0 < torch.linalg.matrix_rank(delta) <= 2  # a rank-2 update, merged
    assert torch.equal(lora["bert.embeddings.word_embeddings.weight"], before["embeddings.word_embeddings.weight"])
    assert report.trainable_parameters < full_count(before) / 4


def full_count(state: dict) -> int:
    return sum(t.numel() for t in state.values())


@pytest.mark.slow
def test_the_folder_is_a_transformers_masked_lm_and_every_command_takes_it_as_m(data, tmp_path):
    from transformers import AutoModelForMaskedLM

    report = train_encoder(options(data, tmp_path))
    folder = report.saved_to
    saved = load_file(Path(folder) / "model.safetensors")
    masked_lm, info = AutoModelForMaskedLM.from_pretrained(folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert torch.equal(
        masked_lm.cls.predictions.transform.dense.weight, saved["cls.predictions.transform.dense.weight"]
    )
    train = synthetic_conll(tmp_path / "train.conll", 60, 1)
    where = ["-m", folder, "-w", str(tmp_path / "ws")]
    for lang, text in (("qu", "qu.txt"), ("en", "en.txt")):
        done = run_xling("train-lang", lang, str(data[0] / text), "--mlm-head", "pretrained", *SHORT, *where)
        assert done.returncode == 0, done.stderr
        assert "masked-LM head" not in done.stderr  # its own head, read from the folder: nothing to say
    task = run_xling("train-task", "ner", "--lang", "en", "--train", train, "--dev", train, "--epochs", "1", *where)
    assert task.returncode == 0, task.stderr
    text = tmp_path / "text.txt"
    text.write_text("qusqu llaqta pi runa\n")
    tagged = run_xling("tag", "--lang", "qu", str(text), *where)
    assert tagged.returncode == 0, tagged.stderr
    assert tagged.stdout.strip().replace("[", "").replace("]", "").startswith("qusqu")
    assert (tmp_path / "ws" / Path(folder).name / "task" / "ner-en").is_dir()  # its own workspace, apart


def test_bad_mixes_are_one_line_each(data, tmp_path):
    with pytest.raises(XlingError, match="LANG=DATA"):
        options(data, tmp_path, also=["english"])
    with pytest.raises(XlingError, match="own language"):
        read_sources(options(data, tmp_path, also=[f"qu={data[0] / 'en.txt'}"]), "qu")
    with pytest.raises(XlingError, match="method must be one of"):
        options(data, tmp_path, method="everything")
    done = run_xling("train-encoder", "qu", str(data[0] / "qu.txt"), "--parallel", str(data[1]), "-m", str(data[1]))
    assert done.returncode != 0 and done.stderr.strip().startswith("error: no parallel files")
