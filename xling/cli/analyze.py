"""`xling analyze fusion|ablation|params`: thin commands over `xling.analysis`."""
from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from xling.analysis.ablation import layer_ablation
from xling.analysis.fusion import fusion_attention
from xling.analysis.params import parameter_table
from xling.analysis.plots import heatmap
from xling.cli.options import MODEL, WORKSPACE
from xling.fileio import write_json_atomic
from xling.tagging.tagger import Tagger
from xling.workspace import Workspace

app = typer.Typer(help="Analyses: fusion attention, layer ablations, parameter budgets.", no_args_is_help=True)
console = Console(stderr=True)


def _write(result: dict, output: Path) -> Path:
    json_path = output.with_suffix(".json")
    write_json_atomic(json_path, result)
    return json_path


@app.command("fusion")
def fusion(
    data: str = typer.Argument(..., help="Data to run the fusion over (a CoNLL file or named source)."),
    fusion_name: str = typer.Option(..., "--fusion", help="The trained fusion."),
    lang: str = typer.Option(..., "--lang", help="Language of the data (its adapter goes below the fusion)."),
    output: Path = typer.Option(Path("fusion-attention.png"), "--output", "-o", help="PNG to write; the numbers go beside it as JSON."),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """Average fusion attention per layer and adapter, as a heatmap (AdapterFusion, Figure 4)."""
    tagger = Tagger.load(lang=lang, fusion=fusion_name, model=model, workspace=workspace)
    result = fusion_attention(tagger, data)
    result.update({"fusion": fusion_name, "data": data, "lang": lang})
    heatmap(result["attention"], [k.replace("_", " ") for k in result["layers"]], result["adapters"],
            f"Fusion attention: {fusion_name} on {Path(data).name}", "fused adapter", "layer and site",
            "mean attention weight", output)
    console.print(f"[green]wrote[/] {output} and {_write(result, output)} ({result['tokens']:,} tokens)")


@app.command("ablation")
def ablation(
    data: str = typer.Argument(..., help="Labelled evaluation data."),
    lang: str = typer.Option(..., "--lang", help="Language of the data."),
    task_adapter: str = typer.Option(None, "--task-adapter", "-t", help="Task adapter [default: as for tagging]."),
    fusion_name: str = typer.Option(None, "--fusion", help="Ablate a fusion setup instead."),
    limit: int = typer.Option(None, help="Use only the first N sentences (the ablation evaluates n(n+1)/2 times)."),
    output: Path = typer.Option(Path("layer-ablation.png"), "--output", "-o", help="PNG to write; the numbers go beside it as JSON."),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """Relative F1 drop when the adapters of layers i..j are removed (Houlsby et al., Figure 6)."""
    tagger = Tagger.load(lang=lang, adapter=task_adapter, fusion=fusion_name, model=model, workspace=workspace)
    layers = tagger.model.num_layers
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("ablating layer spans", total=layers * (layers + 1) // 2)
        result = layer_ablation(tagger, data, limit, lambda i, j: progress.advance(task))
    result.update({"data": data, "lang": lang, "setup": repr(tagger.setup)})
    names = [str(i) for i in range(layers)]
    heatmap([[100 * v for v in row] for row in result["drop"]], names, names,
            f"Relative F1 drop when removing adapters of layers i..j\n{tagger.setup!r}, F1 {100 * result['f1']:.1f}",
            "last layer removed (j)", "first layer removed (i)", "relative F1 drop (%)", output, fmt="{:.0f}", cmap="magma_r")
    console.print(f"[green]wrote[/] {output} and {_write(result, output)}")


@app.command("params")
def params(model: str = MODEL, workspace: str = WORKSPACE, as_json: bool = typer.Option(False, "--json")):
    """Parameters each adapter and task adds, as a share of the base model."""
    from xling.models import load_model

    encoder, _ = load_model(model)
    result = parameter_table(Workspace(workspace, model), sum(p.numel() for p in encoder.parameters()))
    if as_json:
        print(json.dumps(result, indent=2))
        return
    table = Table(title=f"Added parameters over {model} ({result['base_parameters']:,})")
    for column in ("kind", "name", "adapter", "head", "share of base"):
        table.add_column(column, justify="left" if column in ("kind", "name") else "right")
    for row in result["rows"]:
        head = f"{row['head']:,}" + (" (MLM, training only)" if row["kind"] == "lang" and row["head"] else "")
        table.add_row(row["kind"], row["name"], f"{row['adapter']:,}", head, f"{100 * row['share']:.2f}%")
    table.add_row("", "[bold]all together[/]", "", "", f"[bold]{result['total_relative']:.3f}x[/] the base model", end_section=True)
    Console().print(table)
