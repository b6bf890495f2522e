"""Token classification: the objective that trains NER task adapters (and fusion layers)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from xling.adapters import AdaptedModel
from xling.data.conll import Sentence
from xling.data.labels import IGNORE
from xling.errors import XlingError
from xling.tagging.align import window_labels, windows_for
from xling.tagging.decoding import DEFAULT_DECODER, check_decoder, decode
from xling.tagging.predict import max_window, pad_batch, predict_probabilities


class TaggingObjective:
    evaluate_at_start = False
    selects_best = True  # model selection on dev entity F1

    def __init__(
        self,
        head: str,
        train: list[Sentence],
        dev: list[Sentence],
        tokenizer,
        model: AdaptedModel,
        seed: int,
        max_len: int | None = None,
        eval_batch_size: int = 64,
        decoder: str = DEFAULT_DECODER,
    ):
        self.head = head
        self.decoder = check_decoder(decoder)
        self.tokenizer = tokenizer
        self.dev = dev
        self.seed = seed
        self.eval_batch_size = eval_batch_size
        self.max_len = max_window(model, tokenizer, max_len)
        labels = model.heads[head].labels
        label_ids = {label: i for i, label in enumerate(labels)}
        unknown = {t for s in train for t in s.tags} - set(label_ids)
        if unknown:
            raise XlingError(f"training tags not in the head's label set: {', '.join(sorted(unknown))}")
        self.windows = windows_for([s.tokens for s in train], tokenizer, self.max_len, stride=32)
        self.labels = [window_labels(w, train[w.sentence].tags, label_ids) for w in self.windows]

    def micro_batches_per_epoch(self, batch_size: int) -> int:
        return math.ceil(len(self.windows) / batch_size)

    def batches(self, epoch: int, batch_size: int) -> Iterator[dict]:
        """Shuffled, then sorted by length within pools of 50 batches: little padding, still random."""
        generator = torch.Generator().manual_seed(self.seed * 7919 + epoch)
        order = torch.randperm(len(self.windows), generator=generator).tolist()
        pool = 50 * batch_size
        batches = []
        for start in range(0, len(order), pool):
            chunk = sorted(order[start : start + pool], key=lambda i: len(self.windows[i].input_ids))
            batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
        for index in torch.randperm(len(batches), generator=generator).tolist():
            yield {"windows": batches[index]}

    def prepare(self, batch: dict, step: int) -> dict[str, torch.Tensor]:
        windows = [self.windows[i] for i in batch["windows"]]
        ids, mask = pad_batch(windows, self.tokenizer.pad_token_id, "cpu")
        labels = torch.full(ids.shape, IGNORE, dtype=torch.long)
        for row, index in enumerate(batch["windows"]):
            labels[row, : len(self.labels[index])] = torch.tensor(self.labels[index])
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}

    def loss(self, model: AdaptedModel, batch: dict[str, torch.Tensor], scale: float) -> torch.Tensor:
        logits = model.heads[self.head](model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]))
        summed = F.cross_entropy(
            logits.float().view(-1, logits.shape[-1]), batch["labels"].view(-1), ignore_index=IGNORE, reduction="sum"
        )
        return summed * scale + model.fusion_penalty()

    def evaluate(self, model: AdaptedModel) -> dict[str, float]:
        probabilities = predict_probabilities(
            model, self.tokenizer, [s.tokens for s in self.dev], self.head, self.eval_batch_size, self.max_len
        )
        labels = model.heads[self.head].labels
        predicted = [
            [tag for tag, _ in decode(p, labels, self.decoder, s.tokens)] for p, s in zip(probabilities, self.dev)
        ]
        from xling.scoring import score  # seqeval brings scikit-learn (100+ MB): loaded once there is a dev set

        result = score([s.tags for s in self.dev], predicted)
        return {"f1": result["f1"], "precision": result["precision"], "recall": result["recall"], "score": result["f1"]}

    def describe(self, loss: float) -> str:
        return f"loss {loss:.4f}"
