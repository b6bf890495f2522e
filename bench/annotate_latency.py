"""The annotation page's answer to a key press, in headless Chromium: milliseconds from the key's event to the
next frame after the page has redrawn, over every key a person presses to label WikiANN-qu dev sentences
(move, select, label, remove, accept). Writes `results/annotation/latency.json`. Under a minute:

    python -m bench.annotate_latency [--screenshot docs/img/annotate.png]
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

from bench.common import REPO, corpora_root, parsed
from tests.browser import chromium, press, served, shift_right, wait_for
from xling import __version__
from xling.annotation.batches import BatchHeader, Item, start_session, write_batch
from xling.annotation.options import AnnotateOptions, SelectOptions
from xling.annotation.session import Session, session_dir
from xling.data.conll import read_conll
from xling.device import machine_name
from xling.provenance import source_commit
from xling.tagging.spec import TaggerSpec
from xling.tagging.words import joined
from xling.workspace import Workspace

SENTENCES = 40


def session_from_gold(workspace: Path) -> Session:
    """A session whose suggestions are WikiANN-qu dev's own tags (no model: only the page is timed)."""
    options = SelectOptions(corpus="corpus:wikiann-qu/dev", tagger=TaggerSpec(lang="qu", workspace=str(workspace)))
    directory = session_dir(Workspace(str(workspace), options.tagger.model), "qu")
    start_session(directory, options)
    items = []
    sentences = read_conll(corpora_root() / "ner" / "wikiann-qu" / "dev")[:SENTENCES]
    sentences.sort(key=lambda s: -sum(t.startswith("B-") for t in s.tags))  # the first, pictured, has several
    for number, sentence in enumerate(sentences):
        text, tokens = joined(sentence.tokens)
        words = [[t.start, t.end] for t in tokens]
        probabilities = [0.7] * len(words)
        items.append(Item(f"s{number}", text, words, sentence.tags, probabilities, focus=None, score=0.5))
    write_batch(directory, BatchHeader("random", "correct", "ner-en", ["LOC", "ORG", "PER"], created=0), items)
    return Session(directory)


def main() -> None:
    import argparse

    from selenium.webdriver.common.keys import Keys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--screenshot", help="Also save the page as it first shows, as this PNG (the docs' picture).")
    parser.add_argument("--sentences", type=int, default=SENTENCES, help="sentences answered, five key presses each")
    parser.add_argument("--out", default=str(REPO / "results" / "annotation" / "latency.json"))
    smoke_out = Path(tempfile.gettempdir()) / "xling-smoke" / "latency.json"
    args = parsed(parser, {"sentences": 3, "out": str(smoke_out)})
    with tempfile.TemporaryDirectory() as workspace:
        session = session_from_gold(Path(workspace))
        options = AnnotateOptions(session="qu", retrain=False, annotator="Ana")  # named: no name asked first
        with served(session, options) as address, chromium() as driver:
            driver.get(address)
            wait_for(driver, "window.xlingPage.item")
            if args.screenshot:
                press(driver, Keys.ARROW_RIGHT)
                shift_right(driver)
                driver.save_screenshot(args.screenshot)
                press(driver, Keys.ESCAPE)
            for number in range(args.sentences):
                press(driver, Keys.ARROW_RIGHT)
                shift_right(driver)
                press(driver, "1", "x", Keys.ENTER)
                wait_for(driver, f"!window.xlingPage.item || window.xlingPage.item.id === 's{number + 1}'")
            latencies = driver.execute_script("return window.xlingPage.latencies")
    ordered = sorted(latencies)
    figures = {
        "median": statistics.median(latencies),
        "95th percentile": ordered[int(0.95 * (len(ordered) - 1))],
        "slowest": ordered[-1],
    }
    setup = f"headless Chromium, {len(latencies)} key presses on {args.sentences} sentences"
    rows = [
        {"label": f"key press to the next frame, {what}", "data": "corpus:wikiann-qu/dev", "setup": setup}
        | {"metric": "ms", "ms": round(ms, 2), "ms_std": 0.0, "per_seed": [{"seed": 1, "ms": round(ms, 2)}]}
        for what, ms in figures.items()
    ]
    result = {"recipe": "annotation page, milliseconds", "seeds": [1], "model": "none (the page alone)"}
    result |= {"xling_version": __version__, "commit": source_commit(), "machine": machine_name(), "rows": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
