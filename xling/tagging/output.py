"""Output formats for tagged text: conll, jsonl, pretty (terminal) and html."""

from __future__ import annotations

import html
import io
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

from xling.fileio import write_text_atomic
from xling.tagging.tagger import TaggedText

FORMATS = ("pretty", "jsonl", "conll", "html")
# Colour per entity type, shared by the terminal and the HTML page; other types cycle through the rest.
PALETTE = ["#e76f51", "#2a9d8f", "#e9c46a", "#8ab17d", "#9c89b8", "#f4a261", "#5fa8d3", "#d62828"]
KNOWN = {"PER": 0, "LOC": 1, "ORG": 2, "MISC": 3}


def colour(label: str, labels: list[str]) -> str:
    if label in KNOWN:
        return PALETTE[KNOWN[label]]
    others = [label for label in labels if label not in KNOWN]
    return PALETTE[(len(KNOWN) + others.index(label)) % len(PALETTE)]


def to_conll(results: list[TaggedText]) -> str:
    return "".join("".join(f"{t.text}\t{tag}\n" for t, tag in zip(r.tokens, r.tags)) + "\n" for r in results)


def to_jsonl(results: list[TaggedText]) -> str:
    return "".join(
        json.dumps({"text": r.text, "entities": [s.to_dict() for s in r.spans]}, ensure_ascii=False) + "\n"
        for r in results
    )


def to_pretty(results: list[TaggedText], console: Console) -> None:
    """Each line with its entities as `[text](LABEL)`: highlighted in a terminal, still readable without colour."""
    labels = sorted({s.label for r in results for s in r.spans})
    for result in results:
        line, end = Text(), 0
        for span in result.spans:
            line.append(result.text[end : span.start])
            line.append("[", "dim")
            line.append(result.text[span.start : span.end], f"bold black on {colour(span.label, labels)}")
            line.append("](", "dim")
            line.append(span.label, f"bold {colour(span.label, labels)}")
            line.append(")", "dim")
            end = span.end
        line.append(result.text[end:])
        console.print(line)


def to_html(results: list[TaggedText], title: str = "xling entities") -> str:
    labels = sorted({s.label for r in results for s in r.spans})
    counts = {label: sum(s.label == label for r in results for s in r.spans) for label in labels}
    rows = []
    for number, result in enumerate(results, start=1):
        parts, cursor = [], 0
        for span in result.spans:
            parts.append(html.escape(result.text[cursor : span.start]))
            parts.append(
                f'<mark style="--c:{colour(span.label, labels)}" title="{span.label} · {span.score:.2f}">'
                f'{html.escape(span.text)}<span class="tag">{span.label}</span></mark>'
            )
            cursor = span.end
        parts.append(html.escape(result.text[cursor:]))
        rows.append(f'<p><span class="n">{number}</span>{"".join(parts) or "&nbsp;"}</p>')
    legend = (
        "".join(
            f'<li><mark style="--c:{colour(label, labels)}">{label}<span class="tag">{counts[label]}</span></mark></li>'
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


def render(results: list[TaggedText], output_format: str) -> str:
    """The text of `results` in one of FORMATS (`pretty` as plain text, without colours)."""
    if output_format == "pretty":
        console = Console(record=True, width=100, file=io.StringIO())
        to_pretty(results, console)
        return console.export_text(styles=False)
    return {"jsonl": to_jsonl, "conll": to_conll, "html": to_html}[output_format](results)


def write_results(results: list[TaggedText], output_format: str, output: Path | None, console: Console) -> None:
    """To `output`, written whole or not at all; else to standard output (`pretty` in colour on `console`)."""
    if output is None and output_format == "pretty":
        to_pretty(results, console)
        return
    text = render(results, output_format)
    if output is None:
        sys.stdout.write(text)
        return
    write_text_atomic(output, text)
    console.print(f"[green]wrote[/] {output}: {len(results)} lines, {sum(len(r.spans) for r in results)} entities")
