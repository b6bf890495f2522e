"""`xling evaluate ner`: tag a labelled data set with a trained task (or fusion) and score it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xling.data.labels import relabel
from xling.data.sources import load_ner
from xling.tagging.options import EvaluationOptions

if TYPE_CHECKING:
    from xling.tagging.tagger import Tagger


def evaluate(options: EvaluationOptions, tagger: Tagger | None = None) -> dict:
    sentences = relabel(load_ner(options.data, "validation"), options.drop_labels, options.label_map)[: options.limit]
    from xling.scoring.entities import score  # seqeval, and torch with the tagger: when evaluating, not for --help
    from xling.tagging.tagger import Tagger

    tagger = tagger or Tagger.from_options(options)
    predicted = tagger.tag_words([s.tokens for s in sentences])
    result = score([s.tags for s in sentences], [[tag for tag, _ in p] for p in predicted])
    # Gold types the head has no label for count as missed entities: say so rather than let F1 drop silently.
    predictable = {label[2:] for label in tagger.labels if label != "O"}
    gold_types = {tag[2:] for s in sentences for tag in s.tags if tag != "O"}
    result.update(
        {
            "data": options.data,
            "lang": options.lang,
            "task_adapter": tagger.head,
            "setup": str(tagger.setup) if tagger.setup is not None else "no adapters",
            "decoder": tagger.decoder,
            "computed_in": tagger.computed_in,
            "runtime": tagger.runtime,
            "types_not_predicted": sorted(gold_types - predictable),
        }
    )
    return result
