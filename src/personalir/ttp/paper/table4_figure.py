"""Table 4 as a picture (rule ``ttp_table4_figure``): per method, Recall@20 on each test set,
ours (filled, with its bootstrap 95% interval) beside the paper's (hollow), in percent.

Reads the table the ``ttp_table`` rule wrote (``results/ttp/table4.csv``: ``<set> Recall@20``
with ``ci_low``/``ci_high`` as fractions and ``paper`` in the paper's percent), so drawing it
never reruns a model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from personalir.common.plotting import palette, pyplot, save

SETS = ("General", "Broad", "LongTail")


def _value(row: pd.Series, col: str, scale: float = 1.0) -> float:
    x = row.get(col)
    return float(x) * scale if x is not None and pd.notna(x) else math.nan


def plot(
    table: pd.DataFrame,
    *,
    out: str | Path,
    title: str,
    measure: str = "Recall@20",
    sets: Sequence[str] = SETS,
) -> list[str]:
    """Draw one panel per test set the table has; returns those sets."""

    present = [s for s in sets if f"{s} {measure}" in table.columns]
    if not present:
        raise ValueError(f"Table 4 has no '<set> {measure}' column for {', '.join(sets)}")
    plt = pyplot()
    height = 0.9 + 0.26 * len(table)
    fig, axes = plt.subplots(1, len(present), figsize=(8.0, height), sharey=True, squeeze=False)
    paper_colour, ours_colour = palette(2)
    methods = list(table["Method"])
    for ax, name in zip(axes[0], present, strict=True):
        col = f"{name} {measure}"
        for y, (_, row) in enumerate(table.iterrows()):
            paper = _value(row, f"{col} paper")
            if not math.isnan(paper):
                ax.scatter(
                    paper, y, facecolors="none", edgecolors=paper_colour, s=30, label="Paper"
                )
            v = _value(row, col, 100.0)
            if math.isnan(v):
                continue
            lo, hi = _value(row, f"{col} ci_low", 100.0), _value(row, f"{col} ci_high", 100.0)
            err = None if math.isnan(lo) or math.isnan(hi) else [[v - lo], [hi - v]]
            ax.errorbar(v, y, xerr=err, fmt="o", color=ours_colour, ms=4, label="Ours")
        ax.set_title(f"{name} {measure} (%)")
        ax.set_yticks(range(len(methods)))
        ax.set_yticklabels(methods)
        ax.set_xlim(-2, 102)
    axes[0][0].set_ylim(len(methods) - 0.5, -0.5)  # the table's order, top down (shared y)
    handles, labels = axes[0][0].get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    fig.legend(unique.values(), unique.keys(), frameon=False, loc="upper right", ncol=2)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    save(fig, out)
    return present


def plot_file(table: str | Path, *, out: str | Path, title: str) -> list[str]:
    """:func:`plot` of a Table 4 CSV file."""
    return plot(pd.read_csv(table), out=out, title=title)
