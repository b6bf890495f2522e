"""`xling evaluate ner`: tag a labelled data set with a trained task (or fusion) and score it."""

from __future__ import annotations

from dataclasses import dataclass, field

from xling.data.labels import relabel
from xling.data.sources import load_ner
from xling.models.loading import DEFAULT_MODEL
from xling.scoring.entities import score
from xling.tagging.decoding import DEFAULT_DECODER, check_decoder
from xling.tagging.tagger import Tagger


@dataclass
class EvaluationOptions:
    data: str
    lang: str
    task_adapter: str | None = None  # default resolution as for tagging: ner-<lang>, else ner-en
    fusion: str | None = None
    model: str = DEFAULT_MODEL
    workspace: str | None = None
    use_lang_adapter: bool = True
    drop_labels: list[str] = field(default_factory=list)
    label_map: dict[str, str] = field(default_factory=dict)
    batch_size: int = 64
    limit: int | None = None  # score the first N sentences only
    decoder: str = DEFAULT_DECODER  # how per-word probabilities become IOB2 tags

    def __post_init__(self):
        check_decoder(self.decoder)


def evaluate(options: EvaluationOptions, tagger: Tagger | None = None) -> dict:
    sentences = relabel(load_ner(options.data, "validation"), options.drop_labels, options.label_map)[: options.limit]
    tagger = tagger or Tagger.load(
        lang=options.lang,
        adapter=options.task_adapter,
        fusion=options.fusion,
        model=options.model,
        workspace=options.workspace,
        use_lang_adapter=options.use_lang_adapter,
        batch_size=options.batch_size,
        decoder=options.decoder,
    )
    predicted = tagger.tag_words([s.tokens for s in sentences])
    result = score([s.tags for s in sentences], [[tag for tag, _ in p] for p in predicted])
    # Gold types the head has no label for count as missed entities: say so rather than let F1 drop silently.
    predictable = {label[2:] for label in tagger.model.heads[tagger.head].labels if label != "O"}
    gold_types = {tag[2:] for s in sentences for tag in s.tags if tag != "O"}
    result.update(
        {
            "data": options.data,
            "lang": options.lang,
            "task_adapter": tagger.head,
            "setup": repr(tagger.setup) if tagger.setup is not None else "no adapters",
            "decoder": tagger.decoder,
            "types_not_predicted": sorted(gold_types - predictable),
        }
    )
    return result
