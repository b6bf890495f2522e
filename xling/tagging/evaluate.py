"""`xling evaluate ner`: tag a labelled data set with a trained task (or fusion) and score it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xling.data.labels import parse_label_map, relabel
from xling.data.sources import load_ner
from xling.device import INFERENCE_PRECISION_HELP, check_precision
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.options import at_least, comma_list, opt
from xling.tagging.decoding import DECODER_HELP, DEFAULT_DECODER, check_decoder
from xling.workspace import LANG_ADAPTER_HELP, WORKSPACE_HELP

if TYPE_CHECKING:
    from xling.tagging.tagger import Tagger


@dataclass
class EvaluationOptions:
    data: str = opt(help="Labelled data: a CoNLL file, corpus:NAME/SPLIT, wikiann:LANG or hf:DATASET[:CONFIG[:SPLIT]].")
    lang: str = opt(help="Language of the data: its language adapter is stacked under the task adapter.")
    task_adapter: str | None = opt(
        None, "Trained task: a name, a directory or hf:ORG/NAME (default: ner-LANG if trained, else ner-en)."
    )
    fusion: str | None = opt(None, "A trained fusion to evaluate instead of a single task adapter.")
    model: str = opt(DEFAULT_MODEL, MODEL_HELP)
    workspace: str | None = opt(None, WORKSPACE_HELP)
    use_lang_adapter: bool = opt(
        True, "Evaluate the task adapter without any language adapter.", name="no_lang_adapter", invert=True
    )
    lang_adapter: str | None = opt(None, LANG_ADAPTER_HELP)
    drop_labels: list[str] = opt(
        factory=list, help="Entity types to turn into O in the gold data, e.g. MISC.", parse=comma_list
    )
    label_map: dict[str, str] = opt(
        factory=dict, help="Rename entity types in the gold data, e.g. PERSON=PER.", parse=parse_label_map
    )
    batch_size: int = opt(64, "Sentences per batch.")
    limit: int | None = opt(None, "Score the first N sentences only.")
    decoder: str = opt(DEFAULT_DECODER, DECODER_HELP)
    precision: str = opt("auto", INFERENCE_PRECISION_HELP)

    def __post_init__(self):
        check_decoder(self.decoder)
        check_precision(self.precision, inference=True)
        at_least("limit", self.limit, 1)
        at_least("batch_size", self.batch_size, 1)


def evaluate(options: EvaluationOptions, tagger: Tagger | None = None) -> dict:
    sentences = relabel(load_ner(options.data, "validation"), options.drop_labels, options.label_map)[: options.limit]
    from xling.scoring.entities import score  # seqeval, and torch with the tagger: when evaluating, not for --help
    from xling.tagging.tagger import Tagger

    tagger = tagger or Tagger.from_options(options)
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
            "computed_in": tagger.computed_in,
            "types_not_predicted": sorted(gold_types - predictable),
        }
    )
    return result
