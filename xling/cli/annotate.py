"""`xling select` and `xling annotate` (thin commands over `xling.annotation`), `xling project`, `xling translate`
and `xling match` (over `xling.projection`): from unlabelled text to labels."""

from __future__ import annotations

from rich.console import Console

from xling.annotation.options import AnnotateOptions, SelectOptions
from xling.cli.options import command
from xling.cli.progress import counted_bar
from xling.lazy import require
from xling.projection.options import MatchOptions, ProjectOptions, TranslateOptions

console = Console(stderr=True)


@command(SelectOptions)
def select_command(options: SelectOptions):
    """Pick the sentences of a corpus whose labels would help the tagger most, and queue them, pre-tagged, in an
    annotation session (label them with xling annotate)."""
    from xling.annotation.select import select

    path, size = select(options, lambda items, total: counted_bar(items, total, "reading", console))
    console.print(f"{size} {'spans' if options.mode == 'spans' else 'sentences'} queued in {path}")
    console.print(
        f"label them with: xling annotate {options.session_name}"
        + (f" -w {options.tagger.workspace}" if options.tagger.workspace else "")
    )


@command(AnnotateOptions)
def annotate_command(options: AnnotateOptions):
    """Label a session's sentences in the browser: a local page, keyboard first; every answer is saved at once,
    and the task adapter is retrained in the background as answers come."""
    for module in ("flask", "markdown_it"):
        require(module, "annotate", "xling annotate")
    from xling.annotation.server import serve
    from xling.annotation.session import Session, session_dir
    from xling.workspace import Workspace

    opened = Session(session_dir(Workspace(options.workspace, options.model), options.session))

    def announce(address: str) -> None:
        progress = opened.progress()
        console.print(f"{progress.answered} answered, {len(opened.queue())} to go; answers go to {opened.directory}")
        console.print(f"open {address} (Ctrl+C stops; nothing is lost)")

    serve(options, opened, announce)


@command(ProjectOptions)
def project_command(options: ProjectOptions):
    """Carry entity labels over from a tagged translation: tag the source side of parallel text, align its words
    to the target side, and write the target sentences whose entities all crossed as silver CoNLL."""
    from xling.projection.project import project

    report = project(options, console)
    carried = sum(f.carried_by_name + f.carried_by_vectors for f in report.files)
    found = sum(f.source_entities for f in report.files)
    console.print(
        f"{report.train:,} training and {report.dev:,} dev sentences written to {options.output} "
        f"({carried:,} of {found:,} source entities carried over; report.json there)"
    )


@command(TranslateOptions)
def translate_command(options: TranslateOptions):
    """Carry labelled data into another language word by word: entity words copied, other words through a
    bilingual lexicon (files, or learnt from parallel text), written as silver CoNLL."""
    from xling.projection.translate import translate

    report = translate(options, console)
    words = report.words
    console.print(
        f"{report.sentences:,} sentences translated into {options.output}: {words['translated']:,} words from the "
        f"lexicon, {words['copied']:,} copied, {words['dropped'] + words['suffixed']:,} dropped or made suffixes "
        f"({words['entity']:,} entity words kept; report.json there)"
    )


@command(MatchOptions)
def match_command(options: MatchOptions):
    """Find the entity names of labelled data in unlabelled text of another language (suffixes allowed after
    them), keep those the zero-shot tagger does not type otherwise, and write the sentences as silver CoNLL."""
    from xling.projection.matching import match

    report = match(options, console)
    console.print(
        f"{sum(report.kept.values()):,} names kept of {sum(report.found.values()):,} found "
        f"({sum(report.vetoed.values()):,} typed otherwise by the tagger) in {report.matched:,} sentences; "
        f"written to {options.output} (report.json there)"
    )
