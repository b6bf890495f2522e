"""`xling match`: the entity names of labelled data looked for in unlabelled text of another language (distant
supervision), each found name labelled with its type.

A name is kept when its labelled mentions agree on a type (`min_share`), it starts with a capital and is long
enough, and the text does not mostly write it in lower case (a name that is also a common word of the text). In
the text a name must start with a capital, and its last word may carry the language's suffixes (`Limapi`). The
zero-shot tagger then reads each sentence found: a match whose words it tags as another type is not kept, and the
words it tags as an entity that no kept match covers are left unjudged (`?`, out of the loss) rather than
taught as O, since the names looked for are never all the names there are.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from rich.console import Console

from xling.data.conll import Sentence
from xling.data.fingerprints import fingerprint, fingerprints, lines_holding
from xling.data.iob2 import OUTSIDE, entities, entity_tags
from xling.data.labels import relabel
from xling.data.overlap import sentences_of
from xling.data.schemes import UNJUDGED
from xling.data.sources import load_ner
from xling.data.text import read_text
from xling.projection.alignment import name_key
from xling.projection.options import MatchOptions
from xling.projection.silver import check_new, write_silver
from xling.tagging.words import split_sentences, tokenize

MAX_SUFFIXES = 3  # Limakunapipas: plural, case, enclitic
MAX_WORDS = 80  # a longer "sentence" is a paragraph the splitter missed; WikiANN-like targets are short

Names = dict[tuple[str, ...], str]  # a name's words by `name_key`, case kept (UMA is not Uma) -> its type


@dataclass
class MatchReport:
    options: dict
    names: int = 0  # names looked for
    sentences: int = 0  # sentences of the text read (evaluation sentences aside)
    matched: int = 0  # sentences holding a name
    found: Counter = field(default_factory=Counter)  # matches by type
    vetoed: Counter = field(default_factory=Counter)  # matches the tagger typed otherwise, by type
    kept: Counter = field(default_factory=Counter)  # matches written, by type
    unjudged_words: int = 0  # words the tagger called an entity outside every kept match
    train: int = 0  # sentences written to train.conll (`write_silver`)
    dev: int = 0


def name_table(sentences: list[Sentence], min_share: float, min_letters: int, common: set[str]) -> Names:
    """The names of the labelled sentences whose mentions agree on a type, start with a capital, have
    `min_letters` letters, and are not all common words of the text."""
    types: dict[tuple[str, ...], Counter] = {}
    for sentence in sentences:
        for kind, start, end in entities(sentence.tags):
            words = sentence.tokens[start:end]
            if words[0][:1].isupper():
                types.setdefault(tuple(name_key(w, case=True) for w in words), Counter())[kind] += 1
    table = {}
    for key, counts in types.items():
        kind, times = counts.most_common(1)[0]
        letters = sum(c.isalpha() for word in key for c in word)
        if (
            times >= min_share * sum(counts.values())
            and letters >= min_letters
            and not {name_key(w) for w in key} <= common  # keyed as `common_words` keys them
        ):
            table[key] = kind
    return table


def common_words(sentences: list[list[str]]) -> set[str]:
    """The words (by `name_key`) the text writes in lower case at least as often as with a capital."""
    lower, upper = Counter(), Counter()
    for words in sentences:
        for word in words:
            (upper if word[:1].isupper() else lower)[name_key(word)] += 1
    return {word for word, times in lower.items() if times >= upper[word]}


def stems(word: str, suffixes: tuple[str, ...]) -> set[str]:
    """`word` by `name_key` (case kept), and what is left after taking up to MAX_SUFFIXES suffixes off its end."""
    found = frontier = {name_key(word, case=True)}
    for _ in range(MAX_SUFFIXES):
        frontier = {w[: -len(s)] for w in frontier for s in suffixes if w.endswith(s) and len(w) > len(s)}
        found |= frontier
    return found


def capital(words: list[str], i: int) -> bool:
    return 0 <= i < len(words) and words[i][:1].isupper()


def find_names(words: list[str], names: Names, longest: int, suffixes: tuple[str, ...]) -> list[tuple[str, int, int]]:
    """(type, start, end) of the names in `words`, longest first from the left. A name starts with a capital,
    its last word may carry suffixes, and no capitalised word stands beside it: `Quevedo` in `Belisario Quevedo`
    is part of a longer name, not a name."""
    keys, found, i = [name_key(w, case=True) for w in words], [], 0
    while i < len(words):
        step = 1
        for n in range(min(longest, len(words) - i), 0, -1) if capital(words, i) else ():
            head, last = tuple(keys[i : i + n - 1]), stems(words[i + n - 1], suffixes)
            kind = next((names[head + (s,)] for s in last if head + (s,) in names), None)
            if kind:
                if not (capital(words, i - 1) or capital(words, i + n)):
                    found.append((kind, i, i + n))
                step = n
                break
        i += step
    return found


def labelled(words: list[str], matches: list, tagged: list[str], veto: bool, report: MatchReport) -> Sentence | None:
    """The sentence's tags: kept matches as entities, the tagger's other entities unjudged, the rest O; None when
    no match is kept."""
    tags = [OUTSIDE] * len(words)
    guessed = entities(tagged)
    for kind, start, end in matches:
        report.found[kind] += 1
        if veto and any(k != kind and s < end and start < e for k, s, e in guessed):
            report.vetoed[kind] += 1
            tags[start:end] = [UNJUDGED] * (end - start)
            continue
        report.kept[kind] += 1
        tags[start:end] = entity_tags(kind, end - start)
    if not any(t not in (OUTSIDE, UNJUDGED) for t in tags):
        return None
    for _, start, end in guessed:
        for i in range(start, end):
            if tags[i] == OUTSIDE:
                tags[i] = UNJUDGED
                report.unjudged_words += 1
    return Sentence(words, tags)


def text_sentences(options: MatchOptions) -> list[list[str]]:
    """The text's sentences as words, without those that hold an evaluation sentence, each once."""
    lines, _ = read_text(options.corpus)
    held = [s.tokens for reference in options.exclude for s in sentences_of(reference)]
    left_out = lines_holding(lines, held)
    held_prints, seen, sentences = fingerprints(held), set(), []
    for i, line in enumerate(lines):
        if i in left_out:
            continue
        for start, end in split_sentences(line):
            words = [t.text for t in tokenize(line[start:end])]
            key = fingerprint(words)
            if 0 < len(words) <= MAX_WORDS and key not in held_prints and key not in seen:
                seen.add(key)
                sentences.append(words)
    return sentences


def match(options: MatchOptions, console: Console | None = None) -> MatchReport:
    """Write the matched sentences, the names looked for and the report into the output folder; return the report."""
    from xling.tagging.tagger import Tagger

    console = console or Console(stderr=True)
    check_new(options.output, options.overwrite)
    labelled_data = relabel([s for source in options.entities for s in load_ner(source)], options.drop_labels)
    sentences = text_sentences(options)
    names = name_table(labelled_data, options.min_share, options.min_letters, common_words(sentences))
    report = MatchReport(asdict(options), len(names), len(sentences))
    longest, suffixes = max((len(key) for key in names), default=1), options.suffix_list()
    found = [(words, hits) for words in sentences if (hits := find_names(words, names, longest, suffixes))]
    found.sort(key=lambda item: fingerprint(item[0]))  # a fixed draw over the whole text, not its first files
    found = found[: options.limit]
    report.matched = len(found)
    console.print(f"{len(names):,} names; {len(found):,} of {len(sentences):,} sentences hold one; tagging them")
    tagged = Tagger.load(options.tagger).tag_words([w for w, _ in found]) if options.veto else [[]] * len(found)
    kept = []
    for (words, hits), tags in zip(found, tagged):
        sentence = labelled(words, hits, [t for t, _ in tags] or [OUTSIDE] * len(words), options.veto, report)
        if sentence:
            kept.append(sentence)
    table = "".join(f"{' '.join(key)}\t{kind}\n" for key, kind in sorted(names.items()))
    write_silver(options.output, kept, options.dev_share, report, options.overwrite, {"names.tsv": table})
    return report
