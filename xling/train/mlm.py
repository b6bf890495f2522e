"""Masked-language modelling: the objective that trains language adapters, and the encoder itself.

Speed matters because users train many languages. The vocabulary projection is the
costliest layer of a small multilingual encoder (250k pieces), so xling computes it only
at the masked positions, and `vocab_from_corpus` restricts the training softmax to the
pieces that occur in the training corpus (plus special tokens). Held-out perplexity is
always computed over the full vocabulary, so both modes report comparable numbers.

Adapting the encoder trains on a mix (`BlockMix`): the target language's text, the source languages' (so that
the encoder keeps what it knows of them, as in MAFT, Alabi et al. 2022) and translation pairs (translation language
modelling, Conneau & Lample 2019: a sentence and its translation in one block, masked on both sides).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from xling.adapters import AdaptedModel
from xling.data.labels import IGNORE
from xling.errors import XlingError
from xling.models.families import family_of
from xling.train.config import MaskingConfig


def word_start_table(tokenizer) -> torch.Tensor:
    """For each vocabulary id: does this piece begin a word? (SentencePiece, byte-BPE or WordPiece)."""
    pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    pieces = [p or "" for p in pieces]
    if sum(p.startswith("▁") for p in pieces) > len(pieces) / 10:
        starts = [p.startswith("▁") for p in pieces]
    elif sum(p.startswith("Ġ") for p in pieces) > len(pieces) / 10:
        starts = [p.startswith("Ġ") for p in pieces]
    else:
        starts = [not p.startswith("##") for p in pieces]
    return torch.tensor(starts, dtype=torch.bool)


def check_window(encoder, seq_len: int) -> None:
    """--seq-len within the positions the encoder has (512 for most), before any block is cut."""
    from xling.models.families import family_of

    positions = getattr(encoder.config, "max_position_embeddings", None)
    usable = positions - family_of(encoder.config).position_offset if positions is not None else None
    if usable is not None and seq_len > usable:
        raise XlingError(f"--seq-len {seq_len} is above the {usable} positions the model has; give at most {usable}")


def pack_blocks(lines: list[str], tokenizer, seq_len: int, allow_partial: bool) -> torch.Tensor:
    """Tokenise lines, join them with the separator, cut into blocks of `seq_len` with specials."""
    if seq_len < 8:
        raise XlingError("sequence length must be at least 8")
    body = seq_len - 2
    stream: list[int] = []
    for start in range(0, len(lines), 4096):
        for ids in tokenizer(lines[start : start + 4096], add_special_tokens=False, verbose=False)["input_ids"]:
            stream.extend(ids)
            stream.append(tokenizer.sep_token_id)
    full, rest = divmod(len(stream), body)
    if full == 0 and not allow_partial:
        raise XlingError(
            f"corpus too small: {len(stream)} tokens, but one training block needs {body} (give more text or a smaller --seq-len)"
        )
    if allow_partial and rest:
        stream += [tokenizer.pad_token_id] * (body - rest)
        full += 1
    content = torch.tensor(stream[: full * body], dtype=torch.long).view(full, body)
    blocks = torch.cat(
        [torch.full((full, 1), tokenizer.cls_token_id), content, torch.full((full, 1), tokenizer.pad_token_id)], dim=1
    )
    # The closing separator goes right after each block's last real token.
    lengths = (content != tokenizer.pad_token_id).sum(1) if allow_partial and rest else torch.full((full,), body)
    blocks[torch.arange(full), lengths + 1] = tokenizer.sep_token_id
    return blocks


def pack_pairs(pairs: list[tuple[str, str]], tokenizer, seq_len: int) -> torch.Tensor:
    """Translation pairs as blocks `[CLS] a [SEP] b [SEP] a' [SEP] b' [SEP] ...`, padded: a pair is never cut
    between blocks, and each side of a pair too long for one block keeps its first half of the block."""
    if seq_len < 8:
        raise XlingError("sequence length must be at least 8")
    side = (seq_len - 3) // 2
    rows, row = [], [tokenizer.cls_token_id]
    for start in range(0, len(pairs), 4096):
        chunk = pairs[start : start + 4096]
        left = tokenizer([a for a, _ in chunk], add_special_tokens=False, verbose=False)["input_ids"]
        right = tokenizer([b for _, b in chunk], add_special_tokens=False, verbose=False)["input_ids"]
        for a, b in zip(left, right):
            if len(a) + len(b) + 3 > seq_len:
                a, b = a[:side], b[:side]
            pair = a + [tokenizer.sep_token_id] + b + [tokenizer.sep_token_id]
            if len(row) + len(pair) > seq_len:
                rows.append(row)
                row = [tokenizer.cls_token_id]
            row += pair
    if len(row) > 1:
        rows.append(row)
    blocks = torch.full((len(rows), seq_len), tokenizer.pad_token_id, dtype=torch.long)
    for i, ids in enumerate(rows):
        blocks[i, : len(ids)] = torch.tensor(ids)
    return blocks


def temperature_shares(sizes: dict[str, int], temperature: float) -> dict[str, float]:
    """Each source's share of the training rows: its size to the power 1 / temperature, normalised (1: by size;
    higher: flatter, towards equal shares)."""
    # in logarithms, less the largest: size ** (1 / T) overflows a float for a small T (10,000 ** 1,000)
    logs = {name: math.log(max(size, 1)) / temperature for name, size in sizes.items()}
    weights = {name: math.exp(value - max(logs.values())) for name, value in logs.items()}
    total = sum(weights.values())
    return {name: weight / total for name, weight in weights.items()}


class BlockMix:
    """Blocks of several sources (languages, translation pairs) in one tensor, drawn by share: each row of an
    epoch's order picks a source by its share, then that source's next block in a seeded shuffle (a small source
    repeats within an epoch, a large one is sampled). An epoch has as many rows as there are blocks."""

    def __init__(self, blocks: dict[str, torch.Tensor], shares: dict[str, float]):
        self.names = list(blocks)
        self.blocks = torch.cat([blocks[name] for name in self.names])
        sizes = [len(blocks[name]) for name in self.names]
        self.starts = [sum(sizes[:i]) for i in range(len(sizes))]
        self.sizes = sizes
        self.shares = torch.tensor([shares[name] for name in self.names], dtype=torch.double)

    def order(self, generator: torch.Generator) -> torch.Tensor:
        rows = len(self.blocks)
        source = torch.multinomial(self.shares, rows, replacement=True, generator=generator)
        order = torch.empty(rows, dtype=torch.long)
        for i, (start, size) in enumerate(zip(self.starts, self.sizes)):
            picked = (source == i).nonzero().squeeze(1)
            rounds = max(1, math.ceil(len(picked) / size))
            shuffled = torch.cat([torch.randperm(size, generator=generator) for _ in range(rounds)])
            order[picked] = shuffled[: len(picked)] + start
        return order


def perplexity_of(loss: float) -> float:
    return math.exp(min(loss, 50.0))  # capped: an untrained model's loss would overflow


class MaskedLMObjective:
    evaluate_at_start = True
    selects_best = False

    def __init__(
        self,
        name: str,
        train_blocks: torch.Tensor | BlockMix,
        held_out_blocks: torch.Tensor,
        tokenizer,
        masking: MaskingConfig,
        seed: int,
        vocab_from_corpus: bool = False,
        eval_batch_size: int = 16,
        max_eval_blocks: int = 64,
        other_held_out: dict[str, torch.Tensor] | None = None,
    ):
        """`train_blocks` a tensor of blocks in a seeded shuffle per epoch, or a mix of sources drawn by share;
        `other_held_out`: other languages' held-out blocks, whose perplexity is reported as `perplexity_LANG`."""
        self.name = name
        self.mix = train_blocks if isinstance(train_blocks, BlockMix) else None
        self.train_blocks = train_blocks.blocks if self.mix else train_blocks
        # a fixed sample keeps evaluation quick
        self.held_out = {"": held_out_blocks[:max_eval_blocks]} | {
            f"_{lang}": blocks[:max_eval_blocks] for lang, blocks in (other_held_out or {}).items()
        }
        self.masking = masking
        self.seed = seed
        self.eval_batch_size = eval_batch_size
        self.pad_id = tokenizer.pad_token_id
        self.mask_id = tokenizer.mask_token_id
        if self.mask_id is None:
            raise XlingError("the tokenizer has no mask token, so it cannot be used for masked-language modelling")
        vocab = len(tokenizer)
        self.special = torch.zeros(vocab, dtype=torch.bool)
        self.special[tokenizer.all_special_ids] = True
        self.word_start = word_start_table(tokenizer) | self.special
        if vocab_from_corpus:
            present = torch.zeros(vocab, dtype=torch.bool)
            present[self.train_blocks.unique()] = True  # the mix's blocks too
            present |= self.special
            self.vocab_ids = present.nonzero().squeeze(1)
            self.to_restricted = torch.full((vocab,), -1, dtype=torch.long)
            self.to_restricted[self.vocab_ids] = torch.arange(len(self.vocab_ids))
        else:
            self.vocab_ids = None
        pool = self.vocab_ids if self.vocab_ids is not None else torch.arange(vocab)
        self.random_pool = pool[~self.special[pool]]

    # -- data -----------------------------------------------------------------------

    def micro_batches_per_epoch(self, batch_size: int) -> int:
        return math.ceil(len(self.train_blocks) / batch_size)

    def batches(self, epoch: int, batch_size: int) -> Iterator[dict]:
        generator = torch.Generator().manual_seed(self.seed * 7919 + epoch)
        order = self.mix.order(generator) if self.mix else torch.randperm(len(self.train_blocks), generator=generator)
        for start in range(0, len(order), batch_size):
            yield {"index": order[start : start + batch_size]}

    def mask(self, ids: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """BERT masking: pick 15% of pieces (or of words), then 80% <mask>, 10% random, 10% kept."""
        candidates = ~self.special[ids]
        draw = torch.rand(ids.shape, generator=generator)
        if self.masking.whole_word:
            starts = self.word_start[ids]
            positions = torch.arange(ids.shape[1]).expand_as(ids)
            word_of = torch.where(starts, positions, torch.zeros_like(positions)).cummax(dim=1).values
            draw = draw.gather(1, word_of)  # every piece of a word shares its first piece's draw
        chosen = candidates & (draw < self.masking.probability)
        if not chosen.any():
            chosen = candidates & (draw == draw[candidates].min())
        action = torch.rand(ids.shape, generator=generator)
        inputs = ids.clone()
        inputs[chosen & (action < 0.8)] = self.mask_id
        randomised = chosen & (action >= 0.8) & (action < 0.9)
        picks = torch.randint(len(self.random_pool), (int(randomised.sum()),), generator=generator)
        inputs[randomised] = self.random_pool[picks]
        return inputs, chosen

    # -- model ------------------------------------------------------------------------

    def _masked_logits(self, model: AdaptedModel, inputs, chosen, vocab_ids):
        hidden = model(input_ids=inputs, attention_mask=(inputs != self.pad_id).long())
        head = model.heads[self.name]
        transformed = model.invert_embeddings(head.transform(hidden[chosen]))
        return head.logits(transformed, None if vocab_ids is None else vocab_ids.to(hidden.device))

    def prepare(self, batch: dict, step: int) -> dict[str, torch.Tensor]:
        """Mask the whole batch (the masks follow the seed and step, whichever process trains which rows)."""
        ids = self.train_blocks[batch["index"]]
        inputs, chosen = self.mask(ids, torch.Generator().manual_seed(self.seed * 1_000_003 + step))
        targets = ids if self.vocab_ids is None else self.to_restricted[ids]
        return {
            "input_ids": inputs,
            "attention_mask": (ids != self.pad_id).long(),
            "labels": torch.where(chosen, targets, torch.full_like(targets, IGNORE)),
        }

    def loss(self, model: AdaptedModel, batch: dict[str, torch.Tensor], scale: float) -> torch.Tensor:
        chosen = batch["labels"] != IGNORE
        logits = self._masked_logits(model, batch["input_ids"], chosen, self.vocab_ids)
        return F.cross_entropy(logits.float(), batch["labels"][chosen], reduction="sum") * scale

    @torch.no_grad()
    def evaluate(self, model: AdaptedModel) -> dict[str, float]:
        """Held-out masked-LM loss and perplexity over the full vocabulary, with fixed masks: the language's
        (`held_out_loss`, `perplexity`), then each other language's (`perplexity_en`, ...)."""
        metrics = {}
        for suffix, blocks in self.held_out.items():
            loss = self._held_out_loss(model, blocks)
            metrics |= {"held_out_loss": loss} if not suffix else {}
            metrics[f"perplexity{suffix}"] = perplexity_of(loss)
        return metrics

    def perplexity(self, model: AdaptedModel) -> float:
        """The language's own held-out perplexity (`evaluate`'s `perplexity`)."""
        return perplexity_of(self._held_out_loss(model, self.held_out[""]))

    def _held_out_loss(self, model: AdaptedModel, held_out: torch.Tensor) -> float:
        generator = torch.Generator().manual_seed(self.seed + 12345)
        total, count = 0.0, 0
        for start in range(0, len(held_out), self.eval_batch_size):
            ids = held_out[start : start + self.eval_batch_size]
            inputs, chosen = self.mask(ids, generator)
            device = next(model.parameters()).device
            logits = self._masked_logits(model, inputs.to(device), chosen.to(device), None)
            total += float(F.cross_entropy(logits.float(), ids[chosen].to(logits.device), reduction="sum"))
            count += int(chosen.sum())
        return total / max(1, count)

    def describe(self, loss: float) -> str:
        return f"loss {loss:.3f}  ppl {math.exp(min(loss, 50.0)):,.1f}"


def pretrained_mlm_head(model_dir: str, config) -> dict[str, torch.Tensor] | None:
    """The checkpoint's masked-LM head weights (the names its family gives), renamed for MaskedLMHead, or None if
    it has none."""
    import json

    from safetensors import safe_open
    from transformers.utils import cached_file

    prefixes = family_of(config).mlm_head
    if not prefixes:
        return None
    files = []
    single = cached_file(model_dir, "model.safetensors", _raise_exceptions_for_missing_entries=False)
    if single:
        files = [single]
    else:
        index = cached_file(model_dir, "model.safetensors.index.json", _raise_exceptions_for_missing_entries=False)
        if index:
            shards = set(json.loads(open(index).read())["weight_map"].values())
            files = [cached_file(model_dir, shard) for shard in sorted(shards)]
    state = {}
    for file in files:
        with safe_open(file, framework="pt") as weights:
            for key in weights.keys():
                for prefix, target in prefixes.items():
                    if key.startswith(prefix):
                        state[target + key[len(prefix) :] if target.endswith(".") else target] = weights.get_tensor(key)
    if not {"dense.weight", "norm.weight", "bias"} <= set(state):
        return None
    for name in ("dense.bias", "norm.bias"):  # a head without these biases (ModernBERT's) has them at zero
        state.setdefault(name, torch.zeros_like(state["norm.weight"]))
    return state
