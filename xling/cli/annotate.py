"""`xling select` and `xling annotate`: from unlabelled text to labels (thin commands over `xling.annotation`)."""

from __future__ import annotations

from rich.console import Console

from xling.annotation.options import AnnotateOptions, SelectOptions
from xling.cli.options import MODEL, WORKSPACE, argument, option
from xling.cli.progress import counted_bar
from xling.options import build, defaults

console = Console(stderr=True)
SELECT = defaults(SelectOptions)
ANNOTATE = defaults(AnnotateOptions)


def select_command(
    corpus: str = argument(SELECT, "corpus"),
    lang: str = option(SELECT, "lang", "--lang"),
    session: str = option(SELECT, "session"),
    strategy: str = option(SELECT, "strategy"),
    mode: str = option(SELECT, "mode"),
    size: int = option(SELECT, "size"),
    per_type_cap: int = option(SELECT, "per_type_cap"),
    seed: int = option(SELECT, "seed"),
    min_words: int = option(SELECT, "min_words"),
    max_words: int = option(SELECT, "max_words"),
    limit: int = option(SELECT, "limit"),
    max_sentences: int = option(SELECT, "max_sentences"),
    task_adapter: str = option(SELECT, "task_adapter", "--task-adapter", "-t"),
    lang_adapter: str = option(SELECT, "lang_adapter"),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    batch_size: int = option(SELECT, "batch_size"),
    decoder: str = option(SELECT, "decoder"),
    device: str = option(SELECT, "device"),
    precision: str = option(SELECT, "precision"),
):
    """Pick the sentences of a corpus whose labels would help the tagger most, and queue them, pre-tagged, in an
    annotation session (label them with xling annotate)."""
    from xling.annotation.select import select

    options = build(SelectOptions, locals())
    path, size = select(options, lambda items, total: counted_bar(items, total, "reading", console))
    console.print(f"{size} {'spans' if options.mode == 'spans' else 'sentences'} queued in {path}")
    console.print(f"label them with: xling annotate {options.session_name}" + (f" -w {workspace}" if workspace else ""))


def annotate_command(
    session: str = argument(ANNOTATE, "session"),
    host: str = option(ANNOTATE, "host"),
    port: int = option(ANNOTATE, "port"),
    token: str = option(ANNOTATE, "token"),
    retrain_every: int = option(ANNOTATE, "retrain_every"),
    no_retrain: bool = option(ANNOTATE, "no_retrain"),
    dev: str = option(ANNOTATE, "dev"),
    epochs: int = option(ANNOTATE, "epochs"),
    adapter: str = option(ANNOTATE, "adapter"),
    annotator: str = option(ANNOTATE, "annotator"),
    overlap: float = option(ANNOTATE, "overlap"),
    guidelines: str = option(ANNOTATE, "guidelines"),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """Label a session's sentences in the browser: a local page, keyboard first; every answer is saved at once,
    and the task adapter is retrained in the background as answers come."""
    from xling.annotation.server import serve
    from xling.annotation.session import Session, session_dir
    from xling.workspace import Workspace

    options = build(AnnotateOptions, locals())
    opened = Session(session_dir(Workspace(options.workspace, options.model), options.session))

    def announce(address: str) -> None:
        progress = opened.progress()
        console.print(f"{progress['answered']} answered, {len(opened.queue())} to go; answers go to {opened.directory}")
        console.print(f"open {address} (Ctrl+C stops; nothing is lost)")

    serve(options, opened, announce)
