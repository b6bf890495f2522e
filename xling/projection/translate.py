"""`xling translate`: labelled sentences of one language carried into another word by word through a bilingual
lexicon ("cheap translation", Mayhew, Tsai and Roth 2017).

Entity words are copied as they are, with their labels (names are mostly written alike); every other word is
replaced by its lexicon entry and labelled O, or copied when the lexicon lacks it. An entry may drop a word (an
article a language does without) or be a suffix that goes onto the entity after the word (Spanish `en Lima`,
Quechua `Limapi`), as the target language marks case.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from rich.console import Console

from xling.data.conll import Sentence
from xling.data.iob2 import OUTSIDE, is_inside
from xling.data.labels import relabel
from xling.data.sources import load_ner
from xling.projection.lexicon import SUFFIX_MARK, Lexicon, build_lexicon
from xling.projection.options import TranslateOptions
from xling.projection.silver import check_new, write_silver


@dataclass
class TranslateReport:
    options: dict
    lexicon: dict[str, int]  # entries per origin
    sentences: int = 0
    words: Counter = field(default_factory=Counter)  # entity, translated, copied, dropped, suffixed
    train: int = 0  # sentences written to train.conll (`write_silver`)
    dev: int = 0


def translate_sentence(sentence: Sentence, entries: dict[str, str], counts: Counter) -> Sentence:
    """The sentence in the target language: entity words kept, other words looked up (`counts` tallies how)."""
    tokens, tags, suffix = [], [], ""
    for i, (word, tag) in enumerate(zip(sentence.tokens, sentence.tags)):
        following = sentence.tags[i + 1] if i + 1 < len(sentence.tags) else OUTSIDE
        if tag != OUTSIDE:
            ends = not is_inside(following)
            tokens.append(word + (suffix if ends else ""))
            tags.append(tag)
            suffix = "" if ends else suffix
            counts["entity"] += 1
            continue
        target = entries.get(word.casefold())
        if target is None:
            tokens.append(word)
            tags.append(OUTSIDE)
            counts["copied"] += 1
        elif target.startswith(SUFFIX_MARK):
            opens = following.startswith("B-")
            suffix = target[len(SUFFIX_MARK) :] if opens else ""
            counts["suffixed" if opens else "dropped"] += 1
        elif not target:
            counts["dropped"] += 1
        else:
            words = target.split()
            if i == 0 and word[:1].isupper():  # a sentence starts with a capital in either language
                words[0] = words[0][:1].upper() + words[0][1:]
            tokens.extend(words)
            tags.extend([OUTSIDE] * len(words))
            counts["translated"] += 1
    return Sentence(tokens, tags)


def translate(options: TranslateOptions, console: Console | None = None) -> TranslateReport:
    """Write the translated files, the lexicon used and the report into the output folder; return the report."""
    console = console or Console(stderr=True)
    check_new(options.output, options.overwrite)
    sentences = [s for source in options.data for s in load_ner(source)]
    sentences = relabel(sentences, options.drop_labels)[: options.limit]
    lexicon: Lexicon = build_lexicon(
        options.lexicon, options.parallel, options.source_lang, options.lang, options.min_pairs, options.min_dice
    )
    console.print(
        f"lexicon: {len(lexicon.entries):,} words ({', '.join(f'{n:,} {o}' for o, n in lexicon.origins.items())})"
    )
    report = TranslateReport(asdict(options), dict(lexicon.origins), len(sentences))
    translated = [translate_sentence(s, lexicon.entries, report.words) for s in sentences]
    kept = [s for s in translated if s.tokens]
    write_silver(options.output, kept, options.dev_share, report, options.overwrite, {"lexicon.tsv": lexicon.text()})
    return report
