"""Per-word tag probabilities to a valid IOB2 tag sequence.

- `viterbi`: the most probable sequence in which `I-X` only follows `B-X` or `I-X`.
- `split`: the same, and no entity runs across a comma.
- `repair`: the most probable tag per word; a stray `I-X` becomes `B-X` (IOB1 reading).
- `drop`: the most probable tag per word; a stray `I-X` and the `I-X` run after it become
  `O`, which is what seqeval's strict IOB2 mode does with such fragments.

Zero-shot models produce many stray `I-` tags on a new language; repairing them keeps
mostly wrong fragments as entities. A model trained on WikiANN-en, where 9% of the entities
hold a comma ("Sioux Falls , South Dakota"), joins Quechua neighbours across commas ("Punu suyu , Punu
pruwinsya" as one place) where WikiANN-qu splits them: `split` is for such targets, and
costs F1 on English. The default was chosen over seeds (see the README).
"""

from __future__ import annotations

import numpy as np

from xling.data.iob2 import OUTSIDE, continues, is_inside
from xling.data.schemes import to_iob2
from xling.errors import XlingError

DEFAULT_DECODER = "viterbi"


def check_decoder(decoder: str | None) -> str | None:
    """`decoder` if it is one (None: unset, decided later), else an error."""
    if decoder is not None and decoder not in DECODERS:
        raise XlingError(f"unknown decoder {decoder!r}; choose one of {', '.join(DECODERS)}")
    return decoder


def allowed_transitions(labels: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(start, transition) masks: `I-X` may not start a sentence, and only follows `B-X` or `I-X`."""
    start = np.array([not is_inside(label) for label in labels])
    transition = np.ones((len(labels), len(labels)), dtype=bool)
    for current, label in enumerate(labels):
        if is_inside(label):
            transition[:, current] = [continues(label, previous) for previous in labels]
    return start, transition


def viterbi(probabilities: np.ndarray, start: np.ndarray, transition: np.ndarray) -> list[int]:
    """The best label path through (words, labels) probabilities under the allowed transitions."""
    log_probs = np.log(np.maximum(probabilities, 1e-30))
    penalty = np.where(transition, 0.0, -np.inf)
    best = log_probs[0] + np.where(start, 0.0, -np.inf)
    back = np.zeros(probabilities.shape, dtype=np.int64)
    for word in range(1, len(probabilities)):
        candidates = best[:, None] + penalty  # (previous, current)
        back[word] = candidates.argmax(0)
        best = candidates.max(0) + log_probs[word]
    path = [int(best.argmax())]
    for word in range(len(probabilities) - 1, 0, -1):
        path.append(int(back[word, path[-1]]))
    return path[::-1]


def drop_fragments(tags: list[str]) -> list[str]:
    kept: list[str] = []
    for tag in tags:
        previous = kept[-1] if kept else OUTSIDE
        if is_inside(tag) and not continues(tag, previous):
            tag = OUTSIDE
        kept.append(tag)
    return kept


SEPARATORS = {","}


def viterbi_tags(probabilities: np.ndarray, labels: list[str], words: list[str] | None) -> list[str]:
    return [labels[i] for i in viterbi(probabilities, *allowed_transitions(labels))]


def split_tags(probabilities: np.ndarray, labels: list[str], words: list[str] | None) -> list[str]:
    """Viterbi where a comma is O or begins an entity, so an entity before it ends there."""
    separators = [i for i, word in enumerate(words or []) if word in SEPARATORS]
    if separators:
        probabilities = probabilities.copy()
        inside = [i for i, label in enumerate(labels) if is_inside(label)]
        probabilities[np.ix_(separators, inside)] = 0.0
    return viterbi_tags(probabilities, labels, words)


def repair_tags(probabilities: np.ndarray, labels: list[str], words: list[str] | None) -> list[str]:
    return to_iob2([labels[i] for i in probabilities.argmax(-1).tolist()], "iob2")


def drop_tags(probabilities: np.ndarray, labels: list[str], words: list[str] | None) -> list[str]:
    return drop_fragments([labels[i] for i in probabilities.argmax(-1).tolist()])


# Each decoder by name: (words, labels) probabilities, the labels and the words -> one tag per word. The options'
# choices, their help and `decode` read this table.
DECODERS = {"viterbi": viterbi_tags, "split": split_tags, "repair": repair_tags, "drop": drop_tags}
DECODER_HELP = (
    f"From word probabilities to IOB2 tags: {', '.join(DECODERS)} "
    "(viterbi: the best sequence where I-X follows only B-X or I-X; split: also no entity across a comma)."
)
SAVED_DECODER_HELP = (
    DECODER_HELP + f" Default: the one the task adapter was trained with ({DEFAULT_DECODER} for a fusion)."
)


def decode(
    probabilities: np.ndarray, labels: list[str], decoder: str = DEFAULT_DECODER, words: list[str] | None = None
) -> list[tuple[str, float]]:
    """(words, labels) probabilities -> per word (tag, the probability the model gave that tag)."""
    if len(probabilities) == 0:
        return []
    tags = DECODERS[check_decoder(decoder)](probabilities, labels, words)
    index = {label: i for i, label in enumerate(labels)}
    return [(tag, float(probabilities[word, index[tag]])) for word, tag in enumerate(tags)]
