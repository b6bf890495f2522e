"""Token classification: the objective that trains NER task adapters (and fusion layers)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from xling.adapters import AdaptedModel
from xling.adapters.composition import Setup
from xling.data.conll import Sentence
from xling.data.decoding import DEFAULT_DECODER, check_decoder, decode
from xling.data.labels import IGNORE
from xling.data.schemes import UNJUDGED
from xling.errors import XlingError
from xling.tagging.align import STRIDE, window_labels, windows_for
from xling.tagging.predict import max_window, pad_batch, predict_probabilities
from xling.train.config import FusionOptions, TaskAdapterOptions


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
        more_train: list[tuple[Setup | None, list[Sentence]]] = (),
    ):
        """`train` runs through the model's active setup, which also tags `dev`; each of `more_train`'s
        (setup, sentences) through its own setup, e.g. another language's adapter under the same task adapter."""
        self.head = head
        self.decoder = check_decoder(decoder)
        self.tokenizer = tokenizer
        self.dev = dev
        self.seed = seed
        self.eval_batch_size = eval_batch_size
        self.max_len = max_window(model, tokenizer, max_len)
        labels = model.heads[head].labels
        label_ids = {label: i for i, label in enumerate(labels)}
        groups = [train, *(sentences for _, sentences in more_train)]
        unknown = {t for sentences in groups for s in sentences for t in s.tags} - set(label_ids) - {UNJUDGED}
        if unknown:
            raise XlingError(f"training tags not in the head's label set: {', '.join(sorted(unknown))}")
        if any(UNJUDGED in s.tags for s in dev):
            raise XlingError(f"the dev data has words not judged ({UNJUDGED!r} tags): give fully labelled dev data")
        self.setups = [model.active, *(setup for setup, _ in more_train)]
        self.windows, self.labels, self.group_windows = [], [], []
        for sentences in groups:
            windows = windows_for([s.tokens for s in sentences], tokenizer, self.max_len, stride=STRIDE)
            self.group_windows.append(list(range(len(self.windows), len(self.windows) + len(windows))))
            self.windows += windows
            self.labels += [window_labels(w, sentences[w.sentence].tags, label_ids) for w in windows]

    @classmethod
    def from_options(
        cls, head, train, dev, tokenizer, model, options: TaskAdapterOptions | FusionOptions, more_train=()
    ) -> TaggingObjective:
        """The objective of a training command: its seed, window length and decoder."""
        return cls(
            head,
            train,
            dev,
            tokenizer,
            model,
            options.training.seed,
            options.max_len,
            decoder=options.decoder,
            more_train=more_train,
        )

    def micro_batches_per_epoch(self, batch_size: int) -> int:
        return sum(math.ceil(len(members) / batch_size) for members in self.group_windows)

    def batches(self, epoch: int, batch_size: int) -> Iterator[dict]:
        """Shuffled, then sorted by length within pools of 50 batches: little padding, still random. A batch
        holds the windows of one group (one setup) only."""
        generator = torch.Generator().manual_seed(self.seed * 7919 + epoch)
        pool = 50 * batch_size
        batches = []
        for group, members in enumerate(self.group_windows):
            order = [members[i] for i in torch.randperm(len(members), generator=generator).tolist()]
            for start in range(0, len(order), pool):
                chunk = sorted(order[start : start + pool], key=lambda i: len(self.windows[i].input_ids))
                batches += [(group, chunk[i : i + batch_size]) for i in range(0, len(chunk), batch_size)]
        for index in torch.randperm(len(batches), generator=generator).tolist():
            group, windows = batches[index]
            yield {"windows": windows, "group": group}

    def prepare(self, batch: dict, step: int) -> dict[str, torch.Tensor]:
        windows = [self.windows[i] for i in batch["windows"]]
        ids, mask = pad_batch(windows, self.tokenizer.pad_token_id, "cpu")
        labels = torch.full(ids.shape, IGNORE, dtype=torch.long)
        for row, index in enumerate(batch["windows"]):
            labels[row, : len(self.labels[index])] = torch.tensor(self.labels[index])
        # per row, so that distributed processes each get it with their rows
        group = torch.full((len(windows),), batch["group"], dtype=torch.long)
        return {"input_ids": ids, "attention_mask": mask, "labels": labels, "group": group}

    def loss(self, model: AdaptedModel, batch: dict[str, torch.Tensor], scale: float) -> torch.Tensor:
        with model.activated(self.setups[int(batch["group"][0])]):
            hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        logits = model.heads[self.head](hidden)
        summed = F.cross_entropy(
            logits.float().view(-1, logits.shape[-1]), batch["labels"].view(-1), ignore_index=IGNORE, reduction="sum"
        )
        return summed * scale + model.fusion_penalty()

    def evaluate(self, model: AdaptedModel) -> dict[str, float]:
        with model.activated(self.setups[0]):
            probabilities = predict_probabilities(
                model, self.tokenizer, [s.tokens for s in self.dev], self.head, self.eval_batch_size, self.max_len
            )
        labels = model.heads[self.head].labels
        predicted = [
            [tag for tag, _ in decode(p, labels, self.decoder, s.tokens)] for p, s in zip(probabilities, self.dev)
        ]
        from xling.scoring import score  # seqeval brings scikit-learn (100+ MB): loaded once there is a dev set

        result = score([s.tags for s in self.dev], predicted)
        return {"f1": result.f1, "precision": result.precision, "recall": result.recall, "score": result.f1}

    def describe(self, loss: float) -> str:
        return f"loss {loss:.4f}"
