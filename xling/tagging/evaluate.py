"""`xling evaluate ner`: tag a labelled data set with a trained task (or fusion) and score it.

The result carries each sentence's entity counts (`sentence_counts`), from which `--bootstrap` draws its
interval and `xling compare` its paired test, and how many of the sentences the task was trained on
(`seen_in_training`, from the fingerprints saved with it; None when it does not say).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xling.adapters.composition import named_adapters
from xling.data.fingerprints import fingerprint, sentences_digest, trained_on
from xling.data.iob2 import entity_types
from xling.data.sources import data_name, load_scored
from xling.tagging.options import EvaluationOptions

if TYPE_CHECKING:
    from xling.scoring.result import EvaluationResult
    from xling.tagging.tagger import Tagger


def leakage_warning(result: EvaluationResult) -> str | None:
    """One line when the task was trained on some of the sentences it was scored on."""
    if not result.seen_in_training:
        return None
    return (
        f"[yellow]warning:[/] {result.seen_in_training:,} of the {result.sentences:,} sentences of "
        f"{result.data} were in the training data of {result.task_adapter}: their scores are not held-out scores"
    )


def evaluate(options: EvaluationOptions, tagger: Tagger | None = None) -> EvaluationResult:
    sentences = load_scored(options.data, options.limit, options.drop_labels, options.label_map, options.scheme)
    from xling.scoring.bootstrap import interval, sentence_counts  # seqeval, and torch with the tagger: when
    from xling.scoring.entities import score  # evaluating, not for --help
    from xling.scoring.result import EvaluationResult
    from xling.tagging.tagger import Tagger

    tagger = tagger or Tagger.load(options.tagger)
    predicted = tagger.tag_words([s.tokens for s in sentences])
    gold, tags = [s.tags for s in sentences], [[tag for tag, _ in p] for p in predicted]
    counts = sentence_counts(gold, tags)
    seen = trained_on(getattr(tagger, "trained_from", []))
    # Gold types the head has no label for count as missed entities: say so rather than let F1 drop silently.
    predictable = entity_types(tagger.labels)
    gold_types = entity_types(tag for s in sentences for tag in s.tags)
    return EvaluationResult(
        **vars(score(gold, tags)),
        data=data_name(options.data),
        lang=options.tagger.lang,
        task_adapter=tagger.head,
        setup=str(tagger.setup) if tagger.setup is not None else "no adapters",
        adapters=named_adapters(tagger.setup),
        decoder=tagger.decoder,
        computed_in=tagger.computed_in,
        runtime=tagger.runtime,
        types_not_predicted=sorted(gold_types - predictable),
        seen_in_training=None if seen is None else sum(fingerprint(s.tokens) in seen for s in sentences),
        sentences_digest=sentences_digest(s.tokens for s in sentences),
        sentence_counts=counts.tolist(),
        f1_interval=list(interval(counts, options.bootstrap)) if options.bootstrap else None,
        bootstrap_samples=options.bootstrap or None,
    )
