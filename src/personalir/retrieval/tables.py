"""The paper's retrieval tables, as CSV and LaTeX from the same frame.

``flip_rrstd``     Flip@K for each K (the paper's pair share) and Mean RRstd@200 (syntactic
                   pairs); the reference code's per-product Flip (``FlipProd@K``) is in no
                   table, only in the summary CSV
``degradation``    Deg@K for each K and MRRdeg@200 (writing-error pairs)
``effectiveness``  the standard measures (clean retrieval quality, for context)

Rows: one block per domain and one for the equal-weight average, retrievers in configured
order. In each block and column the most robust value (lowest; for effectiveness the highest)
is bold and the least robust is marked with ``*``. The CSV carries the same rows with the
95% bootstrap interval of every value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from personalir.common.domains import display_label
from personalir.common.io import write_text
from personalir.common.latex import dataframe_to_latex
from personalir.retrieval.metrics import MetricSettings, metric_header
from personalir.retrieval.summary import AVERAGE, write_csv

FAMILY_SHORT = {
    "lexical": "Lexical",
    "learned_sparse": "Sparse",
    "dense": "Dense",
    "hybrid": "Hybrid",
    "late_interaction": "Late int.",
    "llm_reranker": "LLM",
    "external": "External",
}


def table_specs(metrics: MetricSettings) -> dict[str, dict]:
    # Each registered PQB metric names its table; within one, the metrics' order decides.
    syntactic = metrics.pqb_metrics("flip_rrstd")
    degradation = metrics.pqb_metrics("degradation")
    per_product = (
        " The reference code's variant, the per-product share averaged over products "
        "(FlipProd@K), is in the summary CSV."
        if "FlipProd" in metrics.pqb
        else ""
    )
    return {
        "flip_rrstd": {
            "metrics": syntactic,
            "lower_is_better": True,
            "count": ("Pairs", syntactic[0]) if syntactic else None,
            "caption": (
                "Ranking instability under syntactic variation: Flip@K, the share of "
                "syntactic pairs (two users' queries for the same product) whose top-K hit "
                "status differs, every pair counted once across products (the paper's "
                "definition), and Mean RRstd (per-product standard deviation of RR@{d}). "
                "Lower is more robust; bold: most robust, *: least robust in each domain; "
                "Pairs: syntactic pairs evaluated. 95\\% bootstrap intervals (products "
                "resampled) are in the CSV.{per_product}"
            )
            .replace("{d}", str(metrics.rr_depth))
            .replace("{per_product}", per_product),
        },
        "degradation": {
            "metrics": degradation,
            "lower_is_better": True,
            "count": ("Pairs", degradation[0]) if degradation else None,
            "caption": (
                "Degradation under the user's writing errors: Deg@K = hit@K(clean) - "
                "hit@K(error) and MRRdeg = MRR(clean) - MRR(error), RR cut at {d}, misses "
                "counting 0. Lower is more robust; bold: most robust, *: least robust in each "
                "domain; Pairs: clean/error pairs evaluated."
            ).replace("{d}", str(metrics.rr_depth)),
        },
        "effectiveness": {
            "metrics": list(metrics.standard),
            "lower_is_better": False,
            "family": False,
            "count": ("Queries", metrics.standard[0]) if metrics.standard else None,
            "caption": (
                "Retrieval effectiveness over the distinct queries (ir\\_measures). "
                "Bold: best, *: worst in each domain."
            ),
        },
    }


def build_table(
    summary: pd.DataFrame,
    names: Sequence[str],
    domains: Sequence[str],
    metrics: Sequence[str],
    count: tuple[str, str] | None,
) -> pd.DataFrame:
    """Numeric table: domain, retriever, label, family, a count, then value/ci per metric."""
    blocks = list(domains) + ([AVERAGE] if len(domains) > 1 else [])
    rows = []
    for domain in blocks:
        for name in names:
            sel = summary[(summary["retriever"] == name) & (summary["domain"] == domain)]
            if sel.empty:
                continue
            row = {
                "domain": domain,
                "retriever": name,
                "label": sel["label"].iloc[0],
                "family": sel["family"].iloc[0],
            }
            if count:
                column, metric = count
                n = sel.loc[sel["metric"] == metric, "items"]
                row[column.lower()] = int(n.iloc[0]) if len(n) else 0
            for metric in metrics:
                m = sel[sel["metric"] == metric]
                row[metric] = float(m["value"].iloc[0]) if len(m) else np.nan
                row[f"{metric} ci_low"] = float(m["ci_low"].iloc[0]) if len(m) else np.nan
                row[f"{metric} ci_high"] = float(m["ci_high"].iloc[0]) if len(m) else np.nan
            rows.append(row)
    return pd.DataFrame(rows)


def _extremes(values: pd.Series, lower_is_better: bool) -> tuple[set, set]:
    """Positions holding the best and the worst value (all ties), if they differ."""
    ok = values.dropna()
    if len(ok) < 2 or ok.min() == ok.max():
        return set(), set()
    best = ok.min() if lower_is_better else ok.max()
    worst = ok.max() if lower_is_better else ok.min()
    return set(ok.index[ok == best]), set(ok.index[ok == worst])


def to_latex(
    table: pd.DataFrame,
    metrics: Sequence[str],
    *,
    lower_is_better: bool,
    caption: str,
    label: str,
    floatfmt: str = ".3f",
    family: bool = True,
    headers: dict[str, str] | None = None,
) -> str:
    """The LaTeX of a numeric table: one block per domain, headed by a row naming it; the
    most robust value of a block is bold, the least robust marked ``*``."""
    counts = [c for c in ("Pairs", "Queries") if c.lower() in table.columns]
    rows: list[dict] = []
    bold: dict[tuple[int, str], bool] = {}
    starts: list[int] = []
    for domain, block in table.groupby("domain", sort=False):
        if rows:
            starts.append(len(rows))
        rows.append(
            {"Retriever": display_label(domain), "Family": ""}
            | dict.fromkeys(counts, "")
            | dict.fromkeys(metrics, "")
        )
        marks = {m: _extremes(block[m], lower_is_better) for m in metrics}
        for i, rec in block.iterrows():
            row = {
                "Retriever": rec["label"],
                "Family": FAMILY_SHORT.get(rec["family"], rec["family"]),
            }
            row |= {c: int(rec[c.lower()]) for c in counts}
            for m in metrics:
                v = rec[m]
                cell = format(v, floatfmt) if v == v else "--"
                best, worst = marks[m]
                if i in best:
                    bold[(len(rows), m)] = True
                if i in worst:
                    cell += "*"
                row[m] = cell
            rows.append(row)
    cells = pd.DataFrame(rows, columns=["Retriever", "Family", *counts, *metrics])
    if not family:
        cells = cells.drop(columns="Family")
    # Shorter headers keep the table within the text width (the caption names the depth).
    renames = {m: metric_header(m) for m in metrics if metric_header(m) != m}
    cells = cells.rename(columns=renames | (headers or {}))
    bold = {(i, renames.get(c, c)): v for (i, c), v in bold.items()}
    return dataframe_to_latex(cells, caption=caption, label=label, bold=bold, midrule_before=starts)


def write_tables(
    summary: pd.DataFrame,
    names: Sequence[str],
    domains: Sequence[str],
    metric_settings: MetricSettings,
    *,
    label: str,
    csv_paths: dict[str, str],
    tex_paths: dict[str, str],
) -> dict[str, pd.DataFrame]:
    out = {}
    for key, spec in table_specs(metric_settings).items():
        table = build_table(summary, names, domains, spec["metrics"], spec["count"])
        write_csv(csv_paths[key], table)
        caption = f"{spec['caption']} Configuration: {label}."
        tex = to_latex(
            table,
            spec["metrics"],
            lower_is_better=spec["lower_is_better"],
            family=spec.get("family", True),
            caption=caption,
            label=f"tab:retrieval-{key.replace('_', '-')}",
        )
        write_text(tex_paths[key], tex)
        out[key] = table
    return out
