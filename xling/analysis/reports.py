"""The analyses end to end: load, compute, draw the PNG and write the numbers as JSON beside it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from xling.analysis.ablation import LayerAblation, layer_ablation
from xling.analysis.confidence import Confidence, tagger_confidence
from xling.analysis.errors import KINDS, Errors, tagger_errors
from xling.analysis.fusion import FusionAttention, fusion_attention
from xling.analysis.options import ANALYSES, AnalyzeOptions
from xling.analysis.params import ParameterTable, parameter_table
from xling.analysis.plots import heatmap, rates_by_bin
from xling.data.sources import data_name
from xling.fileio import check_output_file, write_json_atomic
from xling.given_data import in_memory
from xling.lazy import later
from xling.records import set_fields
from xling.roles import LANG
from xling.tagging.tagger import Tagger
from xling.workspace import Workspace


def short_name(data) -> str:
    """How a plot's title names the data: a file by its name, data in memory by what identifies it."""
    return data_name(data) if in_memory(data) else Path(data).name


AnalysisResult = FusionAttention | LayerAblation | Confidence | Errors | ParameterTable


def _numbers_beside(result: AnalysisResult, output: Path) -> AnalysisResult:
    """The result with where its numbers were written: as JSON beside the plot."""
    json_path = Path(output).with_suffix(".json")
    write_json_atomic(json_path, set_fields(result))
    return replace(result, json=str(json_path))


def tagger_for(o: AnalyzeOptions) -> Tagger:
    """The tagger an analysis looks into, once its output file is known to be writable."""
    check_output_file(o.output_path)
    return Tagger.load(o.tagger)


def fusion_report(o: AnalyzeOptions, console: Console) -> FusionAttention:
    tagger, data, output = tagger_for(o), o.data, o.output_path
    result = replace(fusion_attention(tagger, data), fusion=o.tagger.fusion, data=data_name(data), lang=o.tagger.lang)
    heatmap(
        result.attention,
        [k.replace("_", " ") for k in result.layers],
        result.adapters,
        f"Fusion attention: {o.tagger.fusion} on {short_name(data)}",
        "fused adapter",
        "layer and site",
        "mean attention weight",
        output,
    )
    return _numbers_beside(result, output)


def ablation_report(o: AnalyzeOptions, console: Console) -> LayerAblation:
    tagger, output = tagger_for(o), o.output_path
    layers = tagger.model.num_layers
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("ablating layer spans", total=layers * (layers + 1) // 2)
        result = layer_ablation(tagger, o.data, o.limit, lambda i, j: progress.advance(task))
    result = replace(result, data=data_name(o.data), lang=o.tagger.lang, setup=str(tagger.setup))
    names = [str(i) for i in range(layers)]
    heatmap(
        [[float("nan") if v is None else 100 * v for v in row] for row in result.drop],
        names,
        names,
        f"Relative F1 drop when removing adapters of layers i..j (blue: F1 rises)\n{tagger.setup}, "
        f"F1 {100 * result.f1:.1f}",
        "last layer removed (j)",
        "first layer removed (i)",
        "relative F1 drop (%)",
        output,
        fmt="{:.0f}",
        cmap="RdBu_r",
        center=0.0,
    )
    return _numbers_beside(result, output)


def ablation_summary(result: LayerAblation, o: AnalyzeOptions) -> str:
    return f"F1 with all adapters {100 * result.f1:.1f}"


def confidence_report(o: AnalyzeOptions, console: Console) -> Confidence:
    tagger, data, output = tagger_for(o), o.data, o.output_path
    result = tagger_confidence(tagger, data, o.limit)
    result = replace(result, data=data_name(data), lang=o.tagger.lang, setup=str(tagger.setup))
    missed = "words tagged O inside a gold entity"
    rates_by_bin(
        {**{f"{kind} entities right": cells for kind, cells in result.entities.items()}, missed: result.o_words},
        {missed},
        f"How right the tags are by their probability\n{tagger.setup}, decoder {tagger.decoder}, on {short_name(data)}",
        "probability (an entity's: the least of its words')",
        "% (number of entities or words at each point)",
        output,
    )
    return _numbers_beside(result, output)


def confidence_table(result: Confidence, o: AnalyzeOptions | None = None) -> Table:
    """Right / predicted entities per type and bin, and the words tagged O that are inside a gold entity."""
    table = Table(title=f"{result.setup} on {result.data} ({result.sentences:,} sentences)")
    table.add_column("probability")
    for kind in result.entities:
        table.add_column(f"{kind} right", justify="right")
    table.add_column("O inside an entity", justify="right")
    width = 1 / len(result.bins)
    for i, start in enumerate(result.bins):
        cells = [*(cells[i] for cells in result.entities.values()), result.o_words[i]]
        table.add_row(
            f"{start:.1f}-{start + width:.1f}",
            *(f"{hits}/{count} ({100 * hits / count:.0f}%)" if count else "" for hits, count in cells),
        )
    return table


def errors_report(o: AnalyzeOptions, console: Console) -> Errors:
    tagger, data, output = tagger_for(o), o.data, o.output_path
    result = replace(
        tagger_errors(tagger, data, o.limit),
        data=data_name(data),
        lang=o.tagger.lang,
        setup=str(tagger.setup),
        decoder=tagger.decoder,
    )
    heatmap(
        result.confusion,
        result.types,
        result.types,
        f"Entities by gold and tagged type (overlapping words)\n{tagger.setup}, decoder {tagger.decoder}, "
        f"on {short_name(data)}",
        "tagged",
        "gold",
        "entities",
        output,
        fmt="{:.0f}",
        cmap="Blues",
    )
    return _numbers_beside(result, output)


def errors_table(result: Errors, o: AnalyzeOptions | None = None) -> Table:
    """Each class of entity with its count and share, an example of each error, and the edge words."""
    table = Table(title=f"{result.setup} on {result.data} ({result.sentences:,} sentences)")
    for column in ("entities", "count", "share", "for example"):
        table.add_column(column, justify="right" if column in ("count", "share") else "left")
    total = sum(result.kinds.values()) or 1
    for kind in KINDS:
        example = (result.examples.get(kind) or [""])[0]
        table.add_row(kind, f"{result.kinds[kind]:,}", f"{100 * result.kinds[kind] / total:.0f}%", example)
    for edge, words in (("left out", result.left_out), ("taken in", result.taken_in)):
        shown = ", ".join(f"{word} {n}" for word, n in words[:8])
        table.add_row(f"wrong spans: {edge}", "", "", shown or "-", end_section=edge == "left out")
    return table


def params_report(o: AnalyzeOptions, console: Console) -> ParameterTable:
    from xling.models import load_model

    encoder, _ = load_model(o.tagger.model)
    return parameter_table(Workspace(o.tagger.workspace, o.tagger.model), sum(p.numel() for p in encoder.parameters()))


def params_table(result: ParameterTable, o: AnalyzeOptions) -> Table:
    table = Table(title=f"Added parameters over {o.tagger.model} ({result.base_parameters:,})")
    for column in ("kind", "name", "adapter", "head", "share of base"):
        table.add_column(column, justify="left" if column in ("kind", "name") else "right")
    for row in result.rows:
        head = f"{row.head:,}" + (" (MLM, training only)" if row.kind == LANG.name and row.head else "")
        table.add_row(row.kind, row.name, f"{row.adapter:,}", head, f"{100 * row.share:.2f}%")
    table.add_row(
        "",
        "[bold]all together[/]",
        "",
        "",
        f"[bold]{result.total_relative:.3f}x[/] the base model",
        end_section=True,
    )
    return table


def run_analysis(options: AnalyzeOptions, console: Console) -> AnalysisResult:
    """The analysis `options.analysis` (what `xling analyze` and a recipe's analyze step run)."""
    return later(ANALYSES[options.analysis].report)(options, console)


def summary(options: AnalyzeOptions, result: AnalysisResult):
    """What is printed of an analysis's result (its table or line), None for one that prints nothing more."""
    shown = ANALYSES[options.analysis].summary
    return later(shown)(result, options) if shown else None
