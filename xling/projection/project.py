"""`xling project`: Quechua training labels carried over from a tagged translation (annotation projection).

The source side of a parallel corpus (Spanish, say) is tagged by a source task adapter; each entity is carried
to the words of the target side it aligns to (`xling.projection.alignment`: names spelled alike first, then
mutual best matches of the encoder's word vectors). A sentence is kept only when every entity of its source
crossed over to one contiguous target span that starts with a capital, as the entity does; a fixed share of the
pairs without entities is kept too, all O, and a fixed share of what is kept goes to a dev file for choosing epochs.
No sentence of an evaluation split is ever written (compared by fingerprint), so a tagger trained on the file
can be scored on those splits.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console

from xling.data.conll import Sentence
from xling.data.fingerprints import fingerprint
from xling.data.iob2 import entities
from xling.data.text import parallel_files, read_parallel
from xling.errors import XlingError
from xling.projection.alignment import argmax_links, cosine, name_links
from xling.projection.options import ProjectOptions
from xling.projection.silver import check_new, drawn, evaluation_prints, write_silver
from xling.tagging.align import split_words
from xling.tagging.words import tokenize


@dataclass
class Carried:
    """One sentence pair's outcome: the target's tags, and how each source entity fared."""

    tags: list[str]
    by_name: int = 0
    by_vectors: int = 0
    dropped: list[str] = field(default_factory=list)  # types of the entities that did not cross


def carry(source: list[str], source_tags: list[str], target: list[str], names: set, vectors: set) -> Carried:
    """Tags for the target: each source entity on the target words its words link to (a word's name link, else
    its vector links), when they make one contiguous span that no other entity holds and that starts with a
    capital, as the entity does; an entity that opens the sentence (capitalised whatever it is) crosses only
    by a name link. Otherwise it is dropped."""
    result = Carried(["O"] * len(target))
    named = {i for i, _ in names}
    for kind, start, end in entities(source_tags):
        aligned = {j for i, j in names | {(i, j) for i, j in vectors if i not in named} if start <= i < end}
        by_name = any(start <= i < end for i in named)
        span = range(min(aligned), max(aligned) + 1) if aligned else range(0)
        if (
            not aligned
            or len(span) != len(aligned)
            or any(result.tags[j] != "O" for j in span)
            or not (source[start][:1].isupper() and target[span.start][:1].isupper())
            or (start == 0 and not by_name)
        ):
            result.dropped.append(kind)
            continue
        result.tags[span.start : span.stop] = [f"B-{kind}"] + [f"I-{kind}"] * (len(span) - 1)
        if by_name:
            result.by_name += 1
        else:
            result.by_vectors += 1
    return result


def read_pairs(source: Path, target: Path) -> list[tuple[list[str], list[str]]]:
    """The files' lines side by side as words; both files must have the same number of lines."""
    return [([t.text for t in tokenize(a)], [t.text for t in tokenize(b)]) for a, b in read_parallel(source, target)]


def word_vectors(encoder, tokenizer, sentences: list[list[str]], layer: int, batch_size: int = 32) -> list[np.ndarray]:
    """Each word's vector: the mean of its pieces' hidden states at `layer` of the bare encoder."""
    import torch

    device = next(encoder.parameters()).device
    vectors = []
    for start in range(0, len(sentences), batch_size):
        batch = sentences[start : start + batch_size]
        encoded = tokenizer(
            split_words(batch, tokenizer), is_split_into_words=True, truncation=True, max_length=256, padding=True
        )
        ids = torch.tensor(encoded["input_ids"], device=device)
        mask = torch.tensor(encoded["attention_mask"], device=device)
        with torch.inference_mode():
            states = encoder(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        hidden = states[min(layer, len(states) - 1)]  # the last layer of an encoder with fewer
        hidden = hidden.float().cpu().numpy()
        for row, words in enumerate(batch):
            pieces = encoded.word_ids(row)
            sums = np.zeros((len(words), hidden.shape[-1]), dtype=np.float32)
            counts = np.zeros(len(words), dtype=np.float32)
            for position, word in enumerate(pieces):
                if word is not None:
                    sums[word] += hidden[row, position]
                    counts[word] += 1
            vectors.append(sums / np.maximum(counts, 1)[:, None])
    return vectors


def words_in(tokens: list[str]) -> int:
    return sum(any(c.isalpha() for c in token) for token in tokens)


def unseen(pairs: list[tuple], held_out: set[str], seen: set[str]) -> list[tuple]:
    """The pairs whose target is in no evaluation split and was not met before (`seen` grows)."""
    usable = []
    for source, target in pairs:
        key = fingerprint(target)
        if key not in held_out and key not in seen:
            seen.add(key)
            usable.append((source, target))
    return usable


@dataclass
class ProjectedFile:
    """What one pair of parallel files gave: its pairs, the source entities found, how each crossed, what was kept."""

    source: str
    target: str
    lines: int
    pairs: int  # of at least `min_words` words, the target side not empty
    in_evaluation_splits: int  # pairs whose target sentence is in an evaluation split: left out
    distinct: int  # the pairs used: not left out, not seen before
    source_entities: int = 0
    carried_by_name: int = 0
    carried_by_vectors: int = 0
    dropped: int = 0  # entities that found no target words
    kept_with_entities: int = 0
    kept_without_entities: int = 0
    kept_entities: dict[str, int] = field(default_factory=dict)  # by type


@dataclass
class ProjectionReport:
    """`report.json` of a projection (`write_silver` fills in the split's sizes)."""

    options: dict
    files: list[ProjectedFile]
    train: int = 0
    dev: int = 0


def project(options: ProjectOptions, console: Console | None = None) -> ProjectionReport:
    """Write the silver files and the report into the output folder; return the report."""
    from xling.models import load_model
    from xling.tagging.tagger import Tagger

    console = console or Console(stderr=True)
    check_new(options.output, options.overwrite)
    # every file read before any model loads: a broken pair fails at once
    files = [(a, b, read_pairs(a, b)) for a, b in parallel_files(options.parallel, options.source_lang, options.lang)]
    held_out = evaluation_prints(options.exclude)
    tagger = Tagger.load(options.tagger)
    encoder, tokenizer = load_model(options.tagger.model)
    kept: list[Sentence] = []
    reports, seen = [], set()
    for source_file, target_file, read in files:
        console.print(f"projecting {source_file.name} -> {target_file.name}")
        pairs = [(a, b) for a, b in read if words_in(a) >= options.min_words and b]
        usable = unseen(pairs, held_out, seen)
        source_tags = [[tag for tag, _ in sentence] for sentence in tagger.tag_words([a for a, _ in usable])]
        source_vectors = word_vectors(encoder, tokenizer, [a for a, _ in usable], options.layer)
        target_vectors = word_vectors(encoder, tokenizer, [b for _, b in usable], options.layer)
        in_evaluation = sum(fingerprint(b) in held_out for _, b in pairs)
        done = ProjectedFile(str(source_file), str(target_file), len(read), len(pairs), in_evaluation, len(usable))
        types = Counter()
        for (source, target), tags, a, b in zip(usable, source_tags, source_vectors, target_vectors):
            found = entities(tags)
            if not found:
                if drawn(target, options.empty_share, "empty"):
                    kept.append(Sentence(target, ["O"] * len(target)))
                    done.kept_without_entities += 1
                continue
            words = {i for _, start, end in found for i in range(start, end)}
            links = name_links(source, target, words), argmax_links(cosine(a, b), options.floor)
            result = carry(source, tags, target, *links)
            done.source_entities += len(found)
            done.carried_by_name += result.by_name
            done.carried_by_vectors += result.by_vectors
            done.dropped += len(result.dropped)
            if not result.dropped:
                kept.append(Sentence(target, result.tags))
                done.kept_with_entities += 1
                types.update(kind for kind, _, _ in entities(result.tags))
        done.kept_entities = dict(types)
        reports.append(done)
    if not kept:
        raise XlingError("no sentence pair carried its entities over; nothing to write")
    report = ProjectionReport(asdict(options), reports)
    write_silver(options.output, kept, options.dev_share, report, options.overwrite)
    return report
