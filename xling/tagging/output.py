"""Output formats for tagged text: conll, jsonl, pretty (terminal) and html."""

from __future__ import annotations

import html
import io
import json
import re
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:  # the command line imports this module without torch
    from xling.tagging.base import TaggedText

from xling.fileio import atomic_text_file

# Colour per entity type, shared by the terminal and the HTML page; other types take one of the rest by a stable
# hash of their name, so a streamed output colours a type the same from its first line. White text on each has
# a contrast of at least 5.3:1 (WCAG AA asks 4.5:1).
PALETTE = ["#b3401f", "#1d7067", "#8a6500", "#4d7236", "#6b559a", "#a3521b", "#2f6f9f", "#b01e1e"]
KNOWN = {"PER": 0, "LOC": 1, "ORG": 2, "MISC": 3}


def colour(label: str) -> str:
    if label in KNOWN:
        return PALETTE[KNOWN[label]]
    return PALETTE[len(KNOWN) + zlib.crc32(label.encode()) % (len(PALETTE) - len(KNOWN))]


def to_conll(results: Iterable[TaggedText]) -> str:
    """A line a token, a blank line after each result: the columns CoNLL input gave (else the token), then the
    predicted tag, tab-separated (a gold tag given last is then followed by the prediction, as conlleval reads)."""
    return "".join(
        "".join("\t".join([*columns, tag]) + "\n" for columns, tag in zip(r.columns or _token_columns(r), r.tags))
        + "\n"
        for r in results
    )


def _token_columns(result: TaggedText) -> list[list[str]]:
    return [[token.text] for token in result.tokens]


NUMBERS = ("id", "line", "sentence")  # what says which input a record is, first in it


def to_jsonl(results: Iterable[TaggedText]) -> str:
    """A record a result: its id (or line or sentence number), text and entities with offsets into the text, then
    any other keys its input record had."""
    lines = []
    for r in results:
        first = {key: r.about[key] for key in NUMBERS if key in r.about}
        rest = {key: value for key, value in r.about.items() if key not in NUMBERS}
        record = first | {"text": r.text, "entities": [s.to_dict() for s in r.spans]} | rest
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    return "".join(lines)


# Control characters (ANSI escape sequences among them) could move the cursor or rewrite the terminal, and the
# bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069) reorder what is shown after them.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with control characters shown escaped (`\\x1b`), as a terminal cannot act on them."""
    return CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def to_pretty(results: Iterable[TaggedText], console: Console) -> None:
    """Each line with its entities as `[text](LABEL)`: highlighted in a terminal, still readable without colour."""
    for result in results:
        line, end = Text(), 0
        for span in result.spans:
            line.append(visible(result.text[end : span.start]))
            line.append("[", "dim")
            line.append(visible(result.text[span.start : span.end]), f"bold white on {colour(span.label)}")
            line.append("](", "dim")
            line.append(visible(span.label), f"bold {colour(span.label)}")
            line.append(")", "dim")
            end = span.end
        line.append(visible(result.text[end:]))
        console.print(line)


def to_html(results: list[TaggedText], title: str = "xling entities") -> str:
    labels = sorted({s.label for r in results for s in r.spans})
    counts = {label: sum(s.label == label for r in results for s in r.spans) for label in labels}
    rows = []
    for number, result in enumerate(results, start=1):
        parts, cursor = [], 0
        for span in result.spans:
            parts.append(html.escape(result.text[cursor : span.start]))
            label = html.escape(span.label)
            parts.append(
                f'<mark style="--c:{colour(span.label)}" title="{label} · {html.escape(f"{span.score:.2f}")}">'
                f'{html.escape(span.text)}<span class="tag">{label}</span></mark>'
            )
            cursor = span.end
        parts.append(html.escape(result.text[cursor:]))
        rows.append(f'<p><span class="n">{number}</span>{"".join(parts) or "&nbsp;"}</p>')
    legend = (
        "".join(
            f'<li><mark style="--c:{colour(label)}">{html.escape(label)}<span class="tag">{counts[label]}</span></mark></li>'
            for label in labels
        )
        or "<li>no entities found</li>"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>
body {{ font: 17px/1.9 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2433; background: #fafaf7; margin: 0; }}
main {{ max-width: 52rem; margin: 0 auto; padding: 2rem 1.5rem 4rem; }}
h1 {{ font-size: 1.4rem; margin: 0 0 .3rem; }}
.sub {{ color: #667; margin: 0 0 1.2rem; font-size: .95rem; }}
ul.legend {{ list-style: none; display: flex; gap: .6rem; padding: .6rem .8rem; margin: 0 0 1.5rem; background: #fff;
  border: 1px solid #e4e4de; border-radius: .6rem; flex-wrap: wrap; position: sticky; top: .5rem; }}
p {{ margin: 0 0 .7rem; padding-left: 2.6rem; position: relative; }}
.n {{ position: absolute; left: 0; width: 2rem; text-align: right; color: #aab; font-size: .8rem; top: .25rem; }}
mark {{ background: color-mix(in srgb, var(--c) 22%, white); border-bottom: 2px solid var(--c); border-radius: .3rem;
  padding: .1rem .3rem; color: inherit; }}
.tag {{ font-size: .68rem; font-weight: 700; letter-spacing: .04em; color: #fff; background: var(--c); border-radius: .25rem;
  padding: .05rem .3rem; margin-left: .35rem; vertical-align: .1rem; }}
</style></head>
<body><main>
<h1>{html.escape(title)}</h1>
<p class="sub" style="padding:0">{len(results)} lines · {sum(counts.values())} entities · hover an entity for its confidence</p>
<ul class="legend">{legend}</ul>
{chr(10).join(rows)}
</main></body></html>
"""


def render(results: Iterable[TaggedText], output_format: str) -> str:
    """The text of `results` in one of FORMATS (`pretty` as plain text, without colours)."""
    return "".join(_rendered(results, output_format))


def _rendered(results: Iterable[TaggedText], output_format: str) -> Iterator[str]:
    """The text of each result as it comes (html, which needs them all for its legend, at the end)."""
    if output_format == "html":
        yield to_html(list(results))
        return
    plain = Console(record=True, width=100, file=io.StringIO())
    for result in results:
        if output_format == "pretty":
            to_pretty([result], plain)
            yield plain.export_text(styles=False, clear=True)
        else:
            yield {"jsonl": to_jsonl, "conll": to_conll}[output_format]([result])


def write_results(results: Iterable[TaggedText], output_format: str, output: Path | None, console: Console) -> None:
    """Each result as it comes: to standard output (`pretty` in colour on `console`), or to `output`, which
    holds all of them or is left as it was (an interrupted run writes nothing there)."""
    counted = _Counted(results)
    if output is None and output_format == "pretty":
        to_pretty(counted, console)
    elif output is None:
        for text in _rendered(counted, output_format):
            sys.stdout.write(text)
            sys.stdout.flush()
    else:
        with atomic_text_file(output) as f:
            for text in _rendered(counted, output_format):
                f.write(text)
        console.print(f"[green]wrote[/] {output}: {counted.lines} lines, {counted.entities} entities")


class _Counted:
    """Passes results through, counting lines and entities for the closing line."""

    def __init__(self, results: Iterable[TaggedText]):
        self.results, self.lines, self.entities = results, 0, 0

    def __iter__(self) -> Iterator[TaggedText]:
        for result in self.results:
            self.lines += 1
            self.entities += len(result.spans)
            yield result
