"""The fast start for tagging (`xling.models.light`): the same hidden states as Transformers' BERT with adapters
attached, the same token ids and word ids as its tokenizer, weights mapped rather than copied."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file

from tests.tiny import random_madx_adapters, save_tiny_model
from xling.adapters import AdaptedModel, Stack
from xling.adapters.saving import load
from xling.models import load_model
from xling.models.embedded import embedded_dir
from xling.models.light import LightTokenizer, load_light_encoder, mapped_safetensors

SENTENCES = [
    ["Qusqu", "llaqtaqa", "Perú", "suyupi", "kachkan", "."],
    ["Machu", "Picchuqa", "Qusqu", "suyupi", ",", "Urubamba", "mayu", "patapi", "kachkan", "."],
    ["Túpac", "Amaru", "II", "nisqa", "runaqa", "1780", "watapi", "hatarirqan"],
]


def padded_batch(tokenizer, sentences):
    encoded = tokenizer(sentences, is_split_into_words=True, add_special_tokens=False)
    rows = [[tokenizer.cls_token_id, *ids, tokenizer.sep_token_id] for ids in encoded["input_ids"]]
    width = max(map(len, rows))
    ids = torch.tensor([row + [tokenizer.pad_token_id] * (width - len(row)) for row in rows])
    return ids, (ids != tokenizer.pad_token_id).long()


def test_the_light_encoder_with_adapters_gives_transformers_hidden_states(tmp_path):
    directory = save_tiny_model("bert", tmp_path / "bert")
    full, tokenizer = load_model(str(directory))
    lang_dir, task_dir = random_madx_adapters(AdaptedModel(full), tmp_path)
    outputs = []
    for encoder in (full, load_light_encoder(directory)):
        model = AdaptedModel(encoder)
        model.set_active(Stack(load(model, lang_dir, name="qu", head=False), load(model, task_dir, name="ner")))
        ids, mask = padded_batch(tokenizer, [["qusqu", "llaqta", "pi"], ["juan", "of", "lima", "peru", "wasi"]])
        with torch.inference_mode():
            outputs.append(model(ids, mask)[mask.bool()])
        assert model.fingerprint == AdaptedModel(full).fingerprint
    assert (outputs[0] - outputs[1]).abs().max() <= 1e-5


def test_the_embedded_model_loads_light_for_tagging_with_the_same_ids_and_states(embedded):
    full, full_tokenizer = embedded
    light, tokenizer = load_model("e5-small", inference_only=True)
    assert type(tokenizer) is LightTokenizer and not isinstance(light, type(full))
    # the folder it was converted into, named by its path, is the same model: tagging loads it light too
    by_path = load_model(str(embedded_dir()), inference_only=True)
    assert type(by_path[1]) is LightTokenizer and type(by_path[0]) is type(light)
    assert type(load_model(str(embedded_dir()))[1]) is not LightTokenizer  # training: Transformers' model
    mine, theirs = (
        t(SENTENCES, is_split_into_words=True, add_special_tokens=False) for t in (tokenizer, full_tokenizer)
    )
    assert mine["input_ids"] == theirs["input_ids"]
    assert all(mine.word_ids(i) == theirs.word_ids(i) for i in range(len(SENTENCES)))
    for role in ("cls", "sep", "pad"):
        assert getattr(tokenizer, f"{role}_token_id") == getattr(full_tokenizer, f"{role}_token_id")
    ids, mask = padded_batch(tokenizer, SENTENCES)
    with torch.inference_mode():
        difference = light(input_ids=ids, attention_mask=mask).last_hidden_state - full(ids, mask).last_hidden_state
    assert difference[mask.bool()].abs().max() <= 1e-5


def test_weights_are_mapped_from_the_file_not_copied(tmp_path):
    save_file(
        {"a": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.ones(4, dtype=torch.float16)},
        str(tmp_path / "w.safetensors"),
    )
    tensors = mapped_safetensors(tmp_path / "w.safetensors")
    assert tensors["a"].tolist() == [[0, 1, 2], [3, 4, 5]] and tensors["b"].dtype == torch.float16
    tensors["a"] += 1  # copy-on-write: the file stays as it was
    assert mapped_safetensors(tmp_path / "w.safetensors")["a"][0, 0] == 0


def test_the_light_tokenizer_saves_the_files_it_was_read_from(embedded, tmp_path):
    _, tokenizer = load_model("e5-small", inference_only=True)
    tokenizer.save_pretrained(tmp_path)
    assert (tmp_path / "tokenizer.json").read_bytes() == (tokenizer.directory / "tokenizer.json").read_bytes()
    assert LightTokenizer(tmp_path)(SENTENCES)["input_ids"] == tokenizer(SENTENCES)["input_ids"]


TRICKY = ["<mask>", "a<mask>b", "</s>x", "<unk>", "😀", "中文字", "ǅ", "ﬁ", "x\u200bx", "Ⅻ", "é́́", "𝔘𝔫𝔦", "1780", "-"]


def subset_and_whole(tokenizer, sentences):
    """Each sentence's ids and word ids through a vocabulary subset (where it covers the text) and the whole model."""
    pieces, ids = tokenizer.vocabulary.subset_tokenizer(sentences)
    from xling.models.light import Encoded

    mine = Encoded(pieces.encode_batch(sentences, is_pretokenized=True, add_special_tokens=False), ids)
    whole = tokenizer.full.encode_batch(sentences, is_pretokenized=True, add_special_tokens=False)
    covered = [i for i, s in enumerate(sentences) if tokenizer.vocabulary.covers([s])]
    return [(mine["input_ids"][i], mine.word_ids(i)) for i in covered], [
        (whole[i].ids, whole[i].word_ids) for i in covered
    ]


def test_a_vocabulary_subset_tokenizes_as_the_whole_model(embedded):
    import random

    _, tokenizer = load_model("e5-small", inference_only=True)
    rng = random.Random(0)
    letters = "aeiouqkptchlmnrswyñáéíóúAQKPÑ'-.,0123456789😀中ǅﬁ"
    words = [["".join(rng.choice(letters) for _ in range(rng.randint(1, 14))) for _ in range(8)] for _ in range(300)]
    for batch in (SENTENCES, words, [TRICKY]):
        mine, whole = subset_and_whole(tokenizer, batch)
        assert mine == whole
    assert not tokenizer.vocabulary.covers([TRICKY])  # added tokens (<mask>, </s>) go through the whole model
    whole = [ids for ids, _ in subset_and_whole(tokenizer, words)[1]]
    tokenizer._full = None
    # however long the job, subsets serve it: the whole model's trie would hold about 270 MB
    assert tokenizer(words * 2, add_special_tokens=False)["input_ids"] == whole * 2 and tokenizer._full is None
    assert {word for sentence in words for word in sentence} <= set(tokenizer.vocabulary.found)
    tokenizer([TRICKY])  # text holding an added token goes through the whole model
    assert tokenizer._full is not None


def test_the_pieces_remembered_of_words_are_bounded(embedded, monkeypatch):
    _, tokenizer = load_model("e5-small", inference_only=True)
    monkeypatch.setattr(type(tokenizer.vocabulary), "REMEMBERED_WORDS", 3)
    first = tokenizer([["Qusqu", "llaqtaqa", "Perú", "suyupi", "kachkan"]])["input_ids"]
    assert len(tokenizer.vocabulary.found) == 5  # forgotten before a call, never within one
    again = tokenizer([["Qusqu", "llaqtaqa", "Perú", "suyupi", "kachkan"]])["input_ids"]
    assert again == first and len(tokenizer.vocabulary.found) == 5  # forgotten, then found again
    assert tokenizer([["Qusqu"]])["input_ids"] and set(tokenizer.vocabulary.found) == {"Qusqu"}


@pytest.mark.slow
def test_a_vocabulary_subset_tokenizes_the_real_corpora_as_the_whole_model(embedded, corpora_root):
    import random

    from xling.data.conll import read_conll

    _, tokenizer = load_model("e5-small", inference_only=True)
    sentences = [
        line.split()
        for f in sorted((corpora_root / "text" / "qu").glob("*.txt"))
        for line in f.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    for split in ("wikiann-en/train", "wikiann-qu/extra", "conll2002-es/train"):
        sentences += [s.tokens for s in read_conll(corpora_root / "ner" / split)]
    sample = random.Random(0).sample(sentences, 20_000)
    for start in range(0, len(sample), 500):
        mine, whole = subset_and_whole(tokenizer, sample[start : start + 500])
        assert mine == whole


def test_a_tagger_trains_on_the_embedded_model_with_the_light_tokenizer(embedded, tmp_path):
    """Training a tagger asks of its tokenizer only what tagging asks (pre-tokenised words): the embedded model's
    comes without Transformers' 250,000-piece model (300 MB held for the run), with the same ids."""
    from rich.console import Console

    from xling.train.config import TaskAdapterOptions
    from xling.train.task import task_model
    from xling.workspace import Workspace

    options = TaskAdapterOptions(lang="en", train=["unused.conll"], dev=["unused.conll"], workspace=str(tmp_path))
    sentences = [["Lima", "llaqta"], ["Ana", "Cusco", "-pi", "kachkan", "."]]
    _, tokenizer, labels = task_model(options, Workspace(str(tmp_path), "e5-small"), "ner-en", [], Console())
    _, full = load_model("e5-small")
    assert isinstance(tokenizer, LightTokenizer) and not isinstance(full, LightTokenizer)
    assert len(tokenizer) == len(full)
    assert tokenizer(sentences)["input_ids"] == full(sentences, is_split_into_words=True)["input_ids"]
