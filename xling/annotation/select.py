"""`xling select`: the next batch of a session, the sentences a label would help most, pre-tagged.

The corpus is read as a stream; a random sample of its sentences (`max_sentences`, drawn anew each batch) is
tagged a chunk at a time and only the best `POOL` times the batch size are kept, so memory and time stay bounded
whatever the corpus size. From that pool the batch is picked best first, without near-duplicates and with at
most `per_type_cap` items per predicted type.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from xling.annotation.batches import BatchHeader, Item, start_session, write_batch
from xling.annotation.options import SelectOptions
from xling.annotation.session import Session, session_dir
from xling.annotation.strategies import STRATEGIES, Best, Candidate, pick, rate
from xling.data.conll import looks_like_conll, read_lines, read_tokens
from xling.data.iob2 import entity_types
from xling.data.text import expand_sources
from xling.errors import XlingError
from xling.tagging.files import Progress
from xling.tagging.words import joined, tokenize
from xling.workspace import Workspace

POOL = 10  # candidates kept per batch item, for the diversity rules to choose among
CHUNK = 256  # sentences tagged at a time


def sentence_id(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def corpus_files(options: SelectOptions, session: Session) -> list[Path]:
    """The session's corpus files, as its first batch found them: a later batch (a round run by a server
    restarted from another terminal, with other environment variables) reads the same files."""
    recorded = session.headers[0].corpus if session.headers else None
    if recorded is None:
        return [path.resolve() for path in expand_sources([options.corpus])]
    missing = [file for file in recorded if not Path(file).is_file()]
    if missing:
        raise XlingError(f"the session's corpus file {missing[0]} is gone; put it back to select from it again")
    return [Path(file) for file in recorded]


def corpus_sentences(files: list[Path]) -> Iterator[tuple[str, list[list[int]]]]:
    """(text, word offsets) of each sentence: a line of a text file as it is (stripped), or a CoNLL sentence's
    tokens joined by spaces."""
    for path in files:
        if looks_like_conll(path):
            for tokens in read_tokens(read_lines(path)):
                text, words = joined(tokens)
                yield text, [[w.start, w.end] for w in words]
        else:
            for _, line in read_lines(path):
                line = line.strip()
                yield line, [[t.start, t.end] for t in tokenize(line)]


def eligible(options: SelectOptions, sentences: Iterable[tuple[str, list]], taken: set[str]) -> Iterator[Candidate]:
    """Of the first `limit` sentences, those of a length to label at a glance that the session has not had yet."""
    for read, (text, words) in enumerate(sentences):
        if options.limit and read >= options.limit:
            return
        key = sentence_id(text)
        if options.min_words <= len(words) <= options.max_words and key not in taken:
            taken.add(key)  # a repeated line counts once
            yield Candidate(0.0, key, text, words)


def sampled(stream: Iterable[Candidate], size: int, rng: random.Random) -> list[Candidate]:
    """A uniform random `size` of the stream, in one pass that holds `size` (reservoir sampling, Vitter's R)."""
    reservoir: list[Candidate] = []
    for seen, candidate in enumerate(stream):
        if seen < size:
            reservoir.append(candidate)
        elif (slot := rng.randrange(seen + 1)) < size:
            reservoir[slot] = candidate
    return reservoir


def tag_candidates(tagger, candidates: list[Candidate]) -> list[Candidate]:
    tagged = tagger.tag_words([[c.text[s:e] for s, e in c.words] for c in candidates])
    for candidate, words in zip(candidates, tagged):
        candidate.tags = [t for t, _ in words]
        candidate.probabilities = [p for _, p in words]
    return candidates


def chunks(items: Iterable, size: int) -> Iterator[list]:
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def rank(options: SelectOptions, tagger, stream: Iterable[Candidate]) -> list[Candidate]:
    """The pool of best candidates, best first. A strategy that reads no model (`random`) needs it only for the
    pool it keeps."""
    best, strategy = Best(POOL * options.size), STRATEGIES[options.strategy]
    if not strategy.reads_model:
        for candidate in stream:
            candidate.score = strategy.rate(candidate, [], options.seed)[0]
            best.offer(candidate)
        pool = tag_candidates(tagger, best.ranked())
        return sorted((rate(c, options.strategy, options.mode, options.seed) for c in pool), reverse=True)
    for chunk in chunks(stream, CHUNK):
        for candidate in tag_candidates(tagger, chunk):
            best.offer(rate(candidate, options.strategy, options.mode, options.seed))
    return best.ranked()


def select(options: SelectOptions, progress: Progress | None = None, tagger=None) -> tuple[Path, int]:
    """Write the session's next batch; returns its file and how many items it holds. `tagger` (a loaded
    `Tagger`) saves loading one; `progress` wraps the corpus's sentences (the command line's bar)."""
    workspace = Workspace(options.tagger.workspace, options.tagger.model)
    directory = session_dir(workspace, options.session_name)
    start_session(directory, options)
    session = Session(directory)
    if tagger is None:
        from xling.tagging.tagger import Tagger  # torch loads here, not for --help

        tagger = Tagger.load(options.tagger)
    files = corpus_files(options, session)
    sentences: Iterable = corpus_sentences(files)
    if progress is not None:
        total = sum(1 for _ in corpus_sentences(files))
        sentences = progress(sentences, min(total, options.limit or total))
    stream = eligible(options, sentences, set(session.answers))  # an unanswered item may come again, re-ranked
    if options.max_sentences:
        stream = sampled(stream, options.max_sentences, random.Random(f"{options.seed}:{len(session.headers)}"))
    picked = pick(rank(options, tagger, stream), options.size, options.cap, options.mode)
    if not picked:
        raise XlingError(
            f"no sentences left to select in {options.corpus} (of {options.min_words}-{options.max_words} words)"
        )
    labels = tagger.labels
    header = BatchHeader(
        strategy=options.strategy,
        mode=options.mode,
        adapter=tagger.head,
        types=sorted(entity_types(labels)),
        created=round(time.time(), 3),
        corpus=[str(file) for file in files],
    )
    items = [
        Item(
            id=c.key,
            text=c.text,
            words=c.words,
            tags=c.tags,
            probabilities=[round(p, 4) for p in c.probabilities],
            focus=c.focus.to_dict() if c.focus and options.mode == "spans" else None,
            score=round(c.score, 6),
        )
        for c in picked
    ]
    return write_batch(directory, header, items), len(items)
