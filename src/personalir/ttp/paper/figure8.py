"""Figure 8 of the TTP paper: effectiveness against per-query serving latency.

Each serving path is one point: its Avg Recall@20 (the unweighted mean of the General, Broad
and LongTail test sets, from the evaluation's summary) against its p50 latency per query from
the serving benchmark's JSON (``benchmarks/bench_ttp_serving.py --json``, a measured, checked-in
file named by ``ttp.serving.latency``; latency is a fact of the machine that measured it, so the
workflow reads it rather than timing anything itself):

===============  ==================================  ==========================================
path             effectiveness (method)              latency (benchmark path)
===============  ==================================  ==========================================
full TTP         the student's teacher (``ttp_rl``)  ``full_ttp``
Decoupled-Stage  ``decoupled``                       ``decoupled``
student          ``student``                         ``student``
cache + student  ``ttp_cached``                      hit rate x ``cache_hit`` + (1 - hit rate)
                                                     x ``student`` (the expected per-query time)
===============  ==================================  ==========================================

The hit rate is that of the ``ttp_cached`` runs on the test split (all example sets pooled).
A path whose method is not evaluated is left out and listed in the CSV's notes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from personalir.common.io import atomic_open, read_json, read_parquet
from personalir.common.plotting import palette, pyplot
from personalir.ttp.paper.figures import save_figure

SETS = ("General", "Broad", "LongTail")
MEASURE = "Recall@20"


def avg_recall(summary: pd.DataFrame, method: str, domain: str = "All") -> float | None:
    sub = summary[
        (summary["domain"] == domain)
        & (summary["measure"] == MEASURE)
        & (summary["method"] == method)
        & (summary["label"].isin(SETS))
    ]
    if set(sub["label"]) != set(SETS):
        return None
    return float(sub.groupby("label")["value"].first().mean())


def pooled_hit_rate(infos: Sequence[Mapping]) -> float | None:
    hits = sum(int(i.get("hits", 0)) for i in infos)
    total = hits + sum(int(i.get("misses", 0)) for i in infos)
    return hits / total if total else None


def figure8_rows(
    summary: pd.DataFrame,
    latency: Mapping,
    *,
    teacher: str,
    labels: Mapping[str, str],
    hit_rate: float | None,
) -> pd.DataFrame:
    """One row per serving path that has both an effectiveness and a latency."""
    paths = latency["paths"]
    specs = [
        ("full TTP", teacher, "full_ttp"),
        ("Decoupled-Stage", "decoupled", "decoupled"),
        ("student", "student", "student"),
        ("cache + student", "ttp_cached", None),
    ]
    rows = []
    for path, method, bench in specs:
        recall = avg_recall(summary, method)
        if recall is None:
            continue
        if bench is not None:
            if bench not in paths:
                continue
            p50, p95 = paths[bench]["p50_ms"], paths[bench]["p95_ms"]
            how = f"benchmark path {bench}"
        else:
            if hit_rate is None or "cache_hit" not in paths or "student" not in paths:
                continue
            p50, p95 = (
                hit_rate * paths["cache_hit"][k] + (1 - hit_rate) * paths["student"][k]
                for k in ("p50_ms", "p95_ms")
            )
            how = f"hit rate {hit_rate:.3f} x cache_hit + (1 - hit rate) x student"
        rows.append(
            {
                "Path": path,
                "Method": labels.get(method, method),
                "method": method,
                "Avg Recall@20": recall,
                "p50 ms": float(p50),
                "p95 ms": float(p95),
                "latency": how,
                "hit rate": hit_rate if bench is None else None,
            }
        )
    return pd.DataFrame(rows)


def plot(rows: pd.DataFrame, *, out: str | Path, title: str) -> None:

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(5.0, 3.3))
    colours = palette(len(rows))
    if rows.empty:
        ax.text(
            0.5,
            0.5,
            "no serving path has both an effectiveness and a latency\n"
            "(ttp.serving.latency names the benchmark's JSON)",
            ha="center",
            va="center",
            fontsize=8,
        )
        ax.set_axis_off()
    for i, row in enumerate(rows.itertuples(index=False)):
        ax.scatter(row[4], 100 * row[3], color=colours[i], s=36, zorder=3)
        ax.annotate(
            row[0], (row[4], 100 * row[3]), textcoords="offset points", xytext=(5, 4), fontsize=8
        )
    if not rows.empty:
        ax.set_xscale("log")
        ax.set_xlabel("p50 latency per query (ms, log scale)")
        ax.set_ylabel("Avg Recall@20 (x100)")
        ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    save_figure(fig, out)


def make_figure8(
    *,
    summary_path: str | Path,
    latency_path: str | Path | None,
    cached_infos: Sequence[str | Path],
    labels: Mapping[str, str],
    teacher: str,
    config_label: str,
    csv_out: str | Path,
    pdf_out: str | Path,
) -> pd.DataFrame:
    summary = read_parquet(summary_path)
    # No benchmark file configured (ttp.serving.latency null): no point has a latency.
    latency = read_json(latency_path) if latency_path else {"paths": {}}
    hit_rate = pooled_hit_rate([read_json(p) for p in cached_infos])
    rows = figure8_rows(summary, latency, teacher=teacher, labels=labels, hit_rate=hit_rate)
    with atomic_open(csv_out) as fh:
        rows.to_csv(fh, index=False, float_format="%.4f")
    machine = latency.get("machine", {})
    title = (
        f"{config_label}: effectiveness vs latency "
        f"(latency: {machine.get('cpu', 'unknown CPU')}, "
        f"{latency.get('settings', {}).get('device', 'cpu')})"
    )
    plot(rows, out=pdf_out, title=title)
    return rows
