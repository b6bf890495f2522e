"""What a finished training run prints: shared by the commands and by recipes."""

from __future__ import annotations

from rich.table import Table

from xling.train.report import RunReport, SelfTrainingReport


def language_report_table(report: RunReport) -> Table:
    table = Table(title=f"language adapter {report.name}", show_header=False)
    for label, value in [
        ("saved to", report.saved_to),
        ("steps", f"{report.steps:,}"),
        ("time", f"{report.training_seconds:,.0f} s training, {report.total_seconds:,.0f} s in all"),
        ("tokens seen", f"{report.tokens_seen:,}"),
        (
            "held-out perplexity",
            f"{report.held_out_perplexity_before:,.1f} -> {report.held_out_perplexity_after:,.1f}",
        ),
        ("trainable parameters", f"{report.trainable_parameters:,} of {report.total_parameters:,}"),
    ]:
        table.add_row(label, value)
    return table


def encoder_report_table(report: RunReport) -> Table:
    table = Table(title=f"adapted encoder {report.name}", show_header=False)
    mix = ", ".join(f"{source.name} {100 * source.share:.0f}%" for source in report.mix or [])
    perplexity = "; ".join(
        f"{lang} {p['before']:,.1f} -> {p['after']:,.1f}" for lang, p in (report.held_out_perplexity or {}).items()
    )
    for label, value in [
        ("saved to", f"{report.saved_to} (give it as -m)"),
        ("steps", f"{report.steps:,} ({report.method})"),
        ("time", f"{report.training_seconds:,.0f} s training, {report.total_seconds:,.0f} s in all"),
        ("mix", mix),
        ("held-out perplexity", perplexity),
        ("trainable parameters", f"{report.trainable_parameters:,} of {report.total_parameters:,}"),
    ]:
        table.add_row(label, value)
    return table


def selection_summary(report: RunReport, kind: str = "") -> str:
    """One line for a run selected on dev F1 (task adapters, baselines, fusions)."""
    best = report.best
    return (
        f"[green]saved[/] {kind}{report.name} to {report.saved_to}: best dev F1 {100 * (best.f1 if best else 0):.1f} "
        f"at step {best.step if best else '?'} of {report.steps} ({report.training_seconds:.0f} s training)"
    )


def self_training_summary(report: SelfTrainingReport) -> str:
    """A line per round, then where the result went."""
    rounds = [
        f"round {r.round}: {r.adapter} trained on {r.kept:,} sentences labelled by {r.labelled_by}"
        + (f" and {r.trained_on - r.kept:,} labelled ones" if r.trained_on > r.kept else "")
        + f", best dev F1 {100 * (r.best.f1 if r.best else 0):.1f}"
        for r in report.rounds
    ]
    saved = f"[green]saved[/] round {report.chosen_round}, the best on dev, as {report.name} to {report.saved_to}"
    return "\n".join(rounds + [f"{saved} ({report.seconds:.0f} s)"])
