"""The paper's retrieval figures, drawn from the summary table (no model is re-run).

``flip_by_depth``  Flip@K (the pair share) against K, one line per retriever, 95% bootstrap
                   band; one panel per domain and one for the average.
``deg_ci``         Deg@K per retriever as bars with 95% bootstrap intervals, grouped by K.

A retriever evaluated on fewer pairs than the others (an LLM reranker scores a sample of
them) is marked in the legend with a dagger and its number of pairs (``9 of 157 pairs``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from personalir.common.domains import display_label
from personalir.common.plotting import pyplot, save
from personalir.retrieval.metrics import MetricSettings
from personalir.retrieval.summary import AVERAGE
from personalir.retrieval.tables import subset_counts


def _setup():

    return pyplot()


def _panels(domains: Sequence[str]) -> list[str]:
    return list(domains) + ([AVERAGE] if len(domains) > 1 else [])


def _grid(plt, n: int):
    """Two panels per row (readable at text width); axes in reading order, extras hidden."""
    cols = 1 if n == 1 else 2
    rows = -(-n // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.4 * cols, 2.5 * rows + 0.5), sharey=True, squeeze=False
    )
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _legend(fig, axes) -> None:
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=min(4, len(labels)),
        frameon=False,
        bbox_to_anchor=(0.5, -0.02),
    )
    fig.tight_layout(rect=(0, 0.04 + 0.035 * (-(-len(labels) // 4)), 1, 1))


def _series(summary: pd.DataFrame, name: str, domain: str, metrics: Sequence[str]):
    sel = summary[(summary["retriever"] == name) & (summary["domain"] == domain)]
    sel = sel.set_index("metric").reindex(metrics)
    return sel["value"].to_numpy(), sel["ci_low"].to_numpy(), sel["ci_high"].to_numpy()


def legend_labels(
    summary: pd.DataFrame, names: Sequence[str], metric: str
) -> list[tuple[str, bool]]:
    """(legend label, evaluated on a subset) per retriever: one evaluated on fewer pairs of
    ``metric`` than another (e.g. an LLM reranker on a sample of them) is marked with a
    dagger and its count."""
    first = summary.drop_duplicates("retriever").set_index("retriever")["label"]
    counts = summary[summary["metric"] == metric][["domain", "retriever", "items"]]
    subset = subset_counts(counts.reset_index(drop=True), "items", "pairs", per_domain=False)
    return [
        (str(first.get(n, n)) + (f"\u2020 ({subset[n]})" if n in subset else ""), n in subset)
        for n in names
    ]


def _save(fig, path: str) -> None:

    save(fig, path, close=False, bbox_inches="tight", dpi=150)


def flip_by_depth(summary, names, domains, metrics: MetricSettings, path: str) -> None:
    plt = _setup()
    panels = _panels(domains)
    ks = list(metrics.flip_k)
    cols = [f"Flip@{k}" for k in ks]
    fig, axes = _grid(plt, len(panels))
    labels = legend_labels(summary, names, cols[0])
    for ax, domain in zip(axes, panels, strict=True):
        for name, (label, subset) in zip(names, labels, strict=True):
            value, lo, hi = _series(summary, name, domain, cols)
            style = "--" if subset else "-"  # a subset's line stays visible where lines meet
            line = ax.plot(
                ks, value, marker="o", markersize=3, linewidth=1, linestyle=style, label=label
            )[0]
            ax.fill_between(ks, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.set_title(display_label(domain))
        ax.set_xlabel("K")
    axes[0].set_ylabel("Flip@K, share of pairs (lower is more robust)")
    _legend(fig, axes)
    _save(fig, path)
    plt.close(fig)


def deg_ci(summary, names, domains, metrics: MetricSettings, path: str) -> None:
    plt = _setup()
    panels = _panels(domains)
    ks = list(metrics.deg_k)
    cols = [f"Deg@{k}" for k in ks]
    width = 0.8 / max(1, len(names))
    fig, axes = _grid(plt, len(panels))
    x = np.arange(len(ks))
    labels = legend_labels(summary, names, cols[0])
    for ax, domain in zip(axes, panels, strict=True):
        for i, (name, (label, subset)) in enumerate(zip(names, labels, strict=True)):
            value, lo, hi = _series(summary, name, domain, cols)
            err = np.vstack([value - lo, hi - value])
            ax.bar(
                x + (i - (len(names) - 1) / 2) * width,
                value,
                width,
                yerr=err,
                capsize=1.5,
                error_kw={"linewidth": 0.6},
                label=label,
                hatch="///" if subset else None,
            )
        ax.axhline(0, color="black", linewidth=0.5)
        ax.set_xticks(x, [str(k) for k in ks])
        ax.set_title(display_label(domain))
        ax.set_xlabel("K")
    axes[0].set_ylabel("Deg@K (lower is more robust)")
    _legend(fig, axes)
    _save(fig, path)
    plt.close(fig)
