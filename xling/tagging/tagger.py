"""The Python API: `Tagger.load(lang="qu", task="ner")`, then `tagger(text)` or `tagger.pipe(texts)`.

Model, workspace and adapters are resolved like the command line; the task adapter as
`Workspace.task_adapter_name` says (the same rule recipes plan with).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING

from xling.adapters import Stack
from xling.adapters.saving import load
from xling.data.conll import read_tokens
from xling.data.text import pieces
from xling.device import check_precision, pick_device, pick_precision, quantize_int8
from xling.errors import XlingError
from xling.models.loading import DEFAULT_MODEL
from xling.tagging.decoding import DEFAULT_DECODER, check_decoder, decode
from xling.tagging.predict import predict_probabilities
from xling.tagging.reading import ready_chunks
from xling.tagging.words import Token, joined, split_sentences, tokenize
from xling.trained_tasks import load_fusion_model, load_task_model
from xling.workspace import Workspace, check_lang

if TYPE_CHECKING:
    from xling.tagging.options import EvaluationOptions, TagOptions


@dataclass
class Span:
    start: int
    end: int
    text: str
    label: str
    score: float

    def to_dict(self) -> dict:
        return asdict(self)

    def to_pipeline_dict(self) -> dict:
        """The shape of Transformers' `pipeline("token-classification", aggregation_strategy=...)` entities."""
        return {
            "entity_group": self.label,
            "score": self.score,
            "word": self.text,
            "start": self.start,
            "end": self.end,
        }


@dataclass
class TaggedText:
    """One input text: its words with tags and probabilities, and the entity spans."""

    text: str
    tokens: list[Token]
    tags: list[str]
    scores: list[float]
    spans: list[Span]


def spans_from_tags(text: str, tokens: list[Token], tags: list[str], scores: list[float]) -> list[Span]:
    """Entities from IOB2 tags; an entity's score is the mean probability of its words."""
    spans: list[Span] = []
    begin = None
    for i, tag in enumerate(tags + ["O"]):
        if begin is not None and not (tag.startswith("I-") and tag[2:] == tags[begin][2:]):
            start, end = tokens[begin].start, tokens[i - 1].end
            mean = sum(scores[begin:i]) / (i - begin)
            spans.append(Span(start, end, text[start:end], tags[begin][2:], round(mean, 4)))
            begin = None
        if tag.startswith("B-"):
            begin = i
    return spans


def check_batch_size(batch_size: int) -> None:
    if batch_size < 1:
        raise XlingError(f"batch-size must be at least 1, not {batch_size}")


class Tagger:
    def __init__(
        self,
        model,
        tokenizer,
        head: str,
        setup,
        batch_size: int = 32,
        decoder: str = DEFAULT_DECODER,
        precision: str = "auto",
    ):
        self.model, self.tokenizer, self.head, self.setup, self.batch_size = model, tokenizer, head, setup, batch_size
        self.stored_weights: dict = {}  # the Linear weights in bf16 (fp16), kept from call to call
        self.directories: dict[str, Path] = {}  # the adapters' directories, where `load` found them
        self.decoder = check_decoder(decoder)
        self.precision = check_precision(precision, inference=True)
        check_batch_size(batch_size)
        if precision == "int8":
            quantize_int8(model)

    @classmethod
    def load(
        cls,
        lang: str = "qu",
        task: str = "ner",
        adapter: str | None = None,
        fusion: str | None = None,
        model: str = DEFAULT_MODEL,
        workspace: str | None = None,
        use_lang_adapter: bool = True,
        lang_adapter: str | None = None,
        device: str = "auto",
        batch_size: int = 32,
        decoder: str | None = None,
        precision: str = "auto",
    ) -> Tagger:
        """A ready tagger: `Stack(<lang>, <task adapter>)`, or `Stack(<lang>, Fuse(...))` with `fusion`.

        Adapters are workspace names, directories or Hub names (`hf:ORG/NAME`); the language adapter is
        `lang_adapter` if given, else the workspace's adapter for `lang`. `decoder` None: the task adapter's own
        (the one its dev F1 was measured with)."""
        lang = check_lang(lang)
        check_decoder(decoder)
        check_batch_size(batch_size)
        device = pick_device(device)
        pick_precision(precision, device)  # refused before anything loads
        ws = Workspace(workspace, model)
        directories = {}  # what the tagger was loaded from, for a copy that travels (the spaCy component's)
        if fusion:
            loaded, tokenizer, head, setup = load_fusion_model(model, ws, fusion)
            decoder = decoder or DEFAULT_DECODER
        else:
            directory = directories["task"] = ws.task(ws.task_adapter_name(task, lang, adapter))
            loaded, tokenizer, record = load_task_model(model, directory)
            head, setup = record.name, (record.name if record.method == "adapter" else None)
            decoder = decoder or check_decoder(record.decoder)
        if setup is not None and use_lang_adapter:
            directories["lang"] = ws.lang_adapter(lang_adapter or lang)
            setup = Stack(load(loaded, directories["lang"], name=f"lang-{lang}", head=False), setup)
        loaded.set_active(setup)
        loaded.to(device)
        loaded.eval()
        tagger = cls(loaded, tokenizer, head, setup, batch_size, decoder, precision)
        tagger.directories = directories
        return tagger

    @classmethod
    def from_options(cls, options: TagOptions | EvaluationOptions) -> Tagger:
        """The tagger a command's options describe (`xling tag` and `evaluate`, their recipe steps, and any
        command's options with the same names, such as `select`'s); an option it lacks takes `load`'s default."""
        return cls.load(
            lang=options.lang,
            task=getattr(options, "task", "ner"),
            adapter=options.task_adapter,
            fusion=getattr(options, "fusion", None),
            model=options.model,
            workspace=options.workspace,
            use_lang_adapter=getattr(options, "use_lang_adapter", True),
            lang_adapter=options.lang_adapter,
            device=getattr(options, "device", "auto"),
            batch_size=options.batch_size,
            decoder=options.decoder,
            precision=options.precision,
        )

    @property
    def computed_in(self) -> str:
        """fp32, bf16 or fp16: what `precision` picks on the device the model is on now."""
        return pick_precision(self.precision, next(self.model.parameters()).device.type)

    def tag_words(self, sentences: list[list[str]]) -> list[list[tuple[str, float]]]:
        """Pre-tokenised sentences -> per word (tag, probability)."""
        labels = self.model.heads[self.head].labels
        return [
            decode(p, labels, self.decoder, words)
            for p, words in zip(
                predict_probabilities(
                    self.model,
                    self.tokenizer,
                    sentences,
                    self.head,
                    self.batch_size,
                    precision=self.computed_in,
                    stored_weights=self.stored_weights,
                ),
                sentences,
            )
        ]

    def tag_lines(self, lines: Iterable[str], paragraphs: bool = False, conll: bool = False) -> Iterator[TaggedText]:
        """Lines of a file, streamed: one sentence each, running text (`paragraphs`), or pre-tokenised CoNLL
        (`conll`: one result per sentence). A line longer than `MAX_LINE_CHARS` is tagged in pieces cut at
        spaces, one result each."""
        if conll:
            for chunk in self._reads(read_tokens(enumerate(lines, start=1))):
                yield from self.tag_tokens(chunk)
        else:
            yield from self.pipe(pieces(lines), paragraphs=paragraphs)

    def tag_tokens(self, sentences: list[list[str]]) -> list[TaggedText]:
        """Pre-tokenised sentences -> tagged texts, each the tokens joined by single spaces."""
        results = []
        for tokens, tagged in zip(sentences, self.tag_words(sentences)):
            text, words = joined(tokens)
            tags, scores = [t for t, _ in tagged], [p for _, p in tagged]
            results.append(TaggedText(text, words, tags, scores, spans_from_tags(text, words, tags, scores)))
        return results

    def tag_texts(self, texts: list[str], paragraphs: bool = False) -> list[TaggedText]:
        """Raw texts -> tagged texts. With `paragraphs`, each text is split into sentences first."""
        pieces: list[tuple[int, int, int]] = []  # (text index, start, end)
        for index, text in enumerate(texts):
            spans = split_sentences(text) if paragraphs else [(0, len(text))]
            pieces.extend((index, start, end) for start, end in spans)
        token_lists = [
            [Token(t.text, t.start + start, t.end + start) for t in tokenize(texts[i][start:end])]
            for i, start, end in pieces
        ]
        predicted = self.tag_words([[t.text for t in tokens] for tokens in token_lists])
        results = [TaggedText(text, [], [], [], []) for text in texts]
        for (index, _, _), tokens, tagged in zip(pieces, token_lists, predicted):
            result = results[index]
            result.tokens += tokens
            result.tags += [tag for tag, _ in tagged]
            result.scores += [score for _, score in tagged]
        for result in results:
            result.spans = spans_from_tags(result.text, result.tokens, result.tags, result.scores)
        return results

    def __call__(self, text: str | list[str]) -> list[Span] | list[list[Span]]:
        """A text's entity spans; for a list of texts, a list of span lists (batched together)."""
        if isinstance(text, str):
            return self.tag_texts([text])[0].spans
        return [tagged.spans for tagged in self.tag_texts(list(text))]

    def pipe(
        self, texts: Iterable[str], batch_size: int | None = None, paragraphs: bool = False
    ) -> Iterator[TaggedText]:
        """Stream tagged texts, reading up to `batch_size` texts at a time (default: one model batch first,
        then twice as many each time up to 16 model batches), never waiting for texts that have not come.

        Each read is sorted by length into model batches of `self.batch_size`; reading many model batches at
        once keeps the padding small, which is what makes larger model batches pay, and a small first read
        gives the first results quickly."""
        if batch_size is not None:
            check_batch_size(batch_size)
        for chunk in self._reads(texts, batch_size):
            yield from self.tag_texts(chunk, paragraphs)

    def _reads(self, items: Iterable, size: int | None = None) -> Iterator[list]:
        """`items` in lists of up to `size`, or growing from one model batch to 16; a list never waits for
        input that has not come yet (`ready_chunks`), so a slow pipe's lines are tagged as they arrive."""
        largest = size or 16 * self.batch_size
        sizes = (size or min(self.batch_size * 2**n, largest) for n in count())
        return ready_chunks(items, sizes, ahead=largest)
