"""Heatmaps drawn with matplotlib, without a display."""

from __future__ import annotations

import os
from pathlib import Path

from xling.lazy import require
from xling.paths import cache_dir

# matplotlib keeps a font cache in $HOME unless told otherwise: into xling's cache (XLING_HOME's), as xling's own are
os.environ.setdefault("MPLCONFIGDIR", str(cache_dir() / "matplotlib"))
matplotlib = require("matplotlib", "plots", "drawing a plot (xling analyze, a recipe's analyze step)")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402
from matplotlib.colors import CenteredNorm  # noqa: E402


def colour_norm(data: np.ndarray, center: float | None) -> CenteredNorm | None:
    """Values to [0, 1] for the colour map, symmetric about `center`; None: matplotlib's, the data's range."""
    if center is None:
        return None
    return CenteredNorm(vcenter=center, halfrange=float(np.nanmax(np.abs(data - center))) or 1.0)


def save(fig, path: Path) -> Path:
    """Write the figure as a PNG, making its folder, and free it."""
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def heatmap(
    values,
    rows: list[str],
    columns: list[str],
    title: str,
    xlabel: str,
    ylabel: str,
    colorbar: str,
    path: Path,
    fmt: str = "{:.2f}",
    cmap: str = "viridis",
    center: float | None = None,
) -> Path:
    """A labelled heatmap with a colour bar and the value in each cell; NaN cells stay blank. With `center`,
    the colour scale is diverging: that value is the middle colour, and equal distances either side of it
    are equally strong colours."""
    data = np.asarray(values, dtype=float)
    fig, ax = plt.subplots(figsize=(max(6.5, 0.75 * len(columns) + 2.5), max(4.0, 0.42 * len(rows) + 1.8)))
    image = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, norm=colour_norm(data, center), aspect="auto")
    ax.set_facecolor("#d9d9d9")  # blank (NaN) cells: grey, never the middle colour of a diverging scale
    ax.set_xticks(
        range(len(columns)),
        columns,
        rotation=45 if max(map(len, columns)) > 4 else 0,
        ha="right" if max(map(len, columns)) > 4 else "center",
    )
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if data.size <= 400:
        for (r, c), value in np.ndenumerate(data):
            if np.isfinite(value):
                red, green, blue, _ = image.cmap(image.norm(value))
                dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5  # readable text on any cell colour
                ax.text(
                    c, r, fmt.format(value), ha="center", va="center", fontsize=7, color="white" if dark else "black"
                )
    fig.colorbar(image, ax=ax, label=colorbar)
    return save(fig, path)


def rates_by_bin(
    series: dict[str, list[list[int]]], dashed: set[str], title: str, xlabel: str, ylabel: str, path: Path
) -> Path:
    """One line per series over equal bins of [0, 1]: hits / counts in %, each point labelled with its count;
    empty bins are gaps."""
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for name, cells in series.items():
        width = 1 / len(cells)
        centres = [(i + 0.5) * width for i in range(len(cells))]
        rates = [100 * hits / count if count else float("nan") for hits, count in cells]
        line = ax.plot(centres, rates, "--" if name in dashed else "-", marker="o", label=name)[0]
        for x, y, (_, count) in zip(centres, rates, cells):
            if count:
                ax.annotate(
                    str(count),
                    (x, y),
                    textcoords="offset points",
                    xytext=(0, 5),
                    ha="center",
                    fontsize=6,
                    color=line.get_color(),
                )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 105)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, path)
