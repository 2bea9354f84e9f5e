"""The paper's retrieval tables, as CSV and LaTeX from the same frame.

``flip_rrstd``     Flip@K for each K (the paper's pair share) and Mean RRstd@200 (syntactic
                   pairs); the reference code's per-product Flip (``FlipProd@K``) is in no
                   table, only in the summary CSV
``degradation``    Deg@K for each K and MRRdeg@200 (writing-error pairs)
``effectiveness``  the standard measures on clean queries, on error queries and on all
                   (:data:`~personalir.retrieval.metrics.QUERY_SUBSETS`), for context

Rows: one block per domain and one for the equal-weight average, retrievers in configured
order. In each block and column the most robust value (lowest; for effectiveness the highest)
is bold and the least robust is marked with ``*``. The CSV carries the same rows with the
95% bootstrap interval of every value; the effectiveness CSV has one row per domain,
retriever and query subset (column ``subset``), its LaTeX one column group per subset.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from personalir.common.domains import display_label
from personalir.common.io import write_text
from personalir.common.latex import dataframe_to_latex, escape, table_parts
from personalir.retrieval.metrics import (
    QUERY_SUBSETS,
    MetricSettings,
    metric_header,
    subset_metric,
)
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


#: Marks a retriever evaluated on a subset of what the others were (e.g. an LLM reranker on
#: a sample of the pairs); the caption says on how many.
SUBSET_MARK = r"$^\dagger$"


def _span(values) -> str:
    values = sorted({int(v) for v in values})
    return str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"


def subset_counts(
    table: pd.DataFrame, column: str, unit: str = "", *, per_domain: bool = True
) -> dict[str, str]:
    """Retrievers evaluated on fewer items (``column``: pairs or queries, per domain block)
    than another retriever of the same block -> how many, of how many: ``9 of 157 pairs (3
    of 50-56 per domain)`` with an Average block (without ``per_domain``: ``9 of 157
    pairs``), else ``3 of 50 pairs``. Empty: no retriever was evaluated on a subset."""
    if table.empty or column not in table.columns:
        return {}
    most = table.groupby("domain", sort=False)[column].transform("max")
    fewer = table[table[column] < most]
    unit = f" {unit}" if unit else ""
    out = {}
    for name in dict.fromkeys(fewer["retriever"]):
        rows = table[table["retriever"] == name]
        in_domain = (rows["domain"] != AVERAGE).to_numpy()
        total = rows[~in_domain]
        per = f"{_span(rows[column][in_domain])} of {_span(most.loc[rows.index[in_domain]])}"
        if total.empty:
            out[name] = per + unit
        else:
            n, of = int(total[column].iloc[0]), int(most[total.index].iloc[0])
            out[name] = f"{n} of {of}{unit}" + (f" ({per} per domain)" if per_domain else "")
    return out


def subset_note(table: pd.DataFrame, column: str, unit: str) -> str:
    """The caption's sentence on the retrievers marked :data:`SUBSET_MARK` ('' if none)."""
    counts = subset_counts(table, column, unit)
    if not counts:
        return ""
    labels = table.drop_duplicates("retriever").set_index("retriever")["label"]
    by_text: dict[str, list[str]] = {}
    for name, text in counts.items():
        by_text.setdefault(text, []).append(escape(labels[name]))
    parts = [f"{' and '.join(names)} on {text}" for text, names in by_text.items()]
    return (
        f" {SUBSET_MARK}: evaluated on a subset, the sample of pairs that retriever is "
        f"configured to score: {'; '.join(parts)}."
    )


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
                "Retrieval effectiveness (ir\\_measures) over the distinct queries of each "
                "subset: Clean, the queries without injected writing errors (both queries of "
                "a syntactic pair, the clean query of a writing-error pair, unpaired "
                "queries); Error, the error query of each writing-error pair; All, both. The "
                "row naming a domain gives each subset's number of queries (n). Bold: best, "
                "*: worst in each domain and subset."
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


def _marked_cell(v, floatfmt: str, i, marks: tuple[set, set], bold: dict, at: tuple) -> str:
    """A table cell: the value (``--`` when missing), bold (``bold[at]``) where it is the best
    of its column, ``*`` where it is the worst."""
    best, worst = marks
    if i in best:
        bold[at] = True
    cell = format(v, floatfmt) if v == v else "--"
    return cell + "*" if i in worst else cell


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
    marked = subset_counts(table, counts[0].lower()) if counts else {}
    if marked:
        caption += subset_note(table, counts[0].lower(), counts[0].lower())
    rows: list[dict] = []
    bold: dict[tuple[int, str], bool] = {}
    starts: list[int] = []
    for domain, block in table.groupby("domain", sort=False):
        if rows:
            starts.append(len(rows))
        rows.append(
            {"Retriever": escape(display_label(domain)), "Family": ""}
            | dict.fromkeys(counts, "")
            | dict.fromkeys(metrics, "")
        )
        marks = {m: _extremes(block[m], lower_is_better) for m in metrics}
        for i, rec in block.iterrows():
            row = {
                "Retriever": escape(rec["label"])
                + (SUBSET_MARK if rec["retriever"] in marked else ""),
                "Family": FAMILY_SHORT.get(rec["family"], rec["family"]),
            }
            row |= {c: int(rec[c.lower()]) for c in counts}
            for m in metrics:
                row[m] = _marked_cell(rec[m], floatfmt, i, marks[m], bold, (len(rows), m))
            rows.append(row)
    cells = pd.DataFrame(rows, columns=["Retriever", "Family", *counts, *metrics])
    if not family:
        cells = cells.drop(columns="Family")
    # Shorter headers keep the table within the text width (the caption names the depth).
    renames = {m: metric_header(m) for m in metrics if metric_header(m) != m}
    cells = cells.rename(columns=renames | (headers or {}))
    bold = {(i, renames.get(c, c)): v for (i, c), v in bold.items()}
    return dataframe_to_latex(
        cells,
        caption=caption,
        label=label,
        bold=bold,
        midrule_before=starts,
        latex_columns=("Retriever",),
    )


SUBSET_TITLES = {"clean": "Clean", "error": "Error", "all": "All"}


def build_effectiveness_table(
    summary: pd.DataFrame,
    names: Sequence[str],
    domains: Sequence[str],
    measures: Sequence[str],
) -> pd.DataFrame:
    """Tidy effectiveness table: one row per domain, retriever and query subset (``subset``,
    ``queries``), then value/ci per measure."""
    frames = []
    for subset in QUERY_SUBSETS:
        named = {subset_metric(m, subset): m for m in measures}
        part = summary[summary["metric"].isin(list(named))].copy()
        part["metric"] = part["metric"].map(named)
        first = measures[0] if measures else None
        table = build_table(part, names, domains, measures, ("Queries", first) if first else None)
        if table.empty:
            continue
        table.insert(4, "subset", subset)
        frames.append(table)
    if not frames:
        return pd.DataFrame(columns=["domain", "retriever", "label", "family", "subset"])
    order = {d: i for i, d in enumerate(list(domains) + [AVERAGE])}
    out = pd.concat(frames, ignore_index=True)
    out["_d"] = out["domain"].map(order)
    out["_r"] = out["retriever"].map({n: i for i, n in enumerate(names)})
    out["_s"] = out["subset"].map({s: i for i, s in enumerate(QUERY_SUBSETS)})
    out = out.sort_values(["_d", "_r", "_s"], kind="stable").drop(columns=["_d", "_r", "_s"])
    return out.reset_index(drop=True)


def _count_text(values: pd.Series) -> str:
    counts = sorted({int(v) for v in values.dropna()})
    if not counts:
        return "--"
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def effectiveness_to_latex(
    table: pd.DataFrame,
    measures: Sequence[str],
    *,
    caption: str,
    label: str,
    floatfmt: str = ".3f",
) -> str:
    """One part per query subset (Clean, Error, All; a table in parts, so every measure fits
    the line at the text's size), one row per retriever; the row naming a domain gives the
    subset's query count (``n=...``, a range if the retrievers differ), best/worst marked
    per domain, and a retriever evaluated on fewer queries than the others marked
    :data:`SUBSET_MARK`."""
    subsets = [s for s in QUERY_SUBSETS if s in set(table.get("subset", []))]
    parts = []
    for i, s in enumerate(subsets):
        part_table = table[table["subset"] == s]
        note = subset_note(part_table, "queries", "queries")
        marked = subset_counts(part_table, "queries")
        letters = ", ".join(
            f"({chr(ord('a') + j)}) {SUBSET_TITLES[t]}" for j, t in enumerate(subsets)
        )
        text = (
            f"{caption} In parts, one per subset: {letters}.{note}"
            if i == 0
            else (rf"Table~\ref{{{label}}} continued: the {SUBSET_TITLES[s]} queries." + note)
        )
        parts.append(
            _effectiveness_part(part_table, measures, s, marked, text, f"{label}-{s}", floatfmt)
        )
    if not parts:
        return dataframe_to_latex(pd.DataFrame(columns=["Retriever"]), caption=caption, label=label)
    return table_parts(parts, label)


def _effectiveness_part(
    table: pd.DataFrame,
    measures: Sequence[str],
    subset: str,
    marked: dict[str, str],
    caption: str,
    label: str,
    floatfmt: str,
) -> str:
    columns = [f"{m} [{subset}]" for m in measures]
    rows: list[dict] = []
    bold: dict[tuple[int, str], bool] = {}
    starts: list[int] = []
    for domain, block in table.groupby("domain", sort=False):
        if rows:
            starts.append(len(rows))
        head = {"Retriever": escape(display_label(domain))}
        if measures:  # the group's first cell: its number of queries
            head[columns[0]] = f"n={_count_text(block['queries'])}"
        rows.append(head)
        wide = pd.DataFrame(
            {c: block.set_index("retriever")[m] for c, m in zip(columns, measures, strict=True)}
        )
        retrievers = list(dict.fromkeys(block["retriever"]))
        wide = wide.reindex(retrievers)
        marks = {c: _extremes(wide[c].reset_index(drop=True), False) for c in columns}
        labels = block.drop_duplicates("retriever").set_index("retriever")["label"]
        for i, name in enumerate(retrievers):
            row = {"Retriever": escape(labels[name]) + (SUBSET_MARK if name in marked else "")}
            for c in columns:
                row[c] = _marked_cell(wide.at[name, c], floatfmt, i, marks[c], bold, (len(rows), c))
            rows.append(row)
    cells = pd.DataFrame(rows, columns=["Retriever", *columns]).fillna("")
    return dataframe_to_latex(
        cells,
        caption=caption,
        label=label,
        bold=bold,
        midrule_before=starts,
        header_groups=[("", 1), (SUBSET_TITLES[subset], len(measures))] if measures else None,
        column_labels=["Retriever"] + [metric_header(m) for m in measures],
        latex_columns=("Retriever",),
    )


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
        caption = f"{spec['caption']} Configuration: {label}."
        tex_label = f"tab:retrieval-{key.replace('_', '-')}"
        if key == "effectiveness":
            table = build_effectiveness_table(summary, names, domains, spec["metrics"])
            tex = effectiveness_to_latex(table, spec["metrics"], caption=caption, label=tex_label)
        else:
            table = build_table(summary, names, domains, spec["metrics"], spec["count"])
            tex = to_latex(
                table,
                spec["metrics"],
                lower_is_better=spec["lower_is_better"],
                family=spec.get("family", True),
                caption=caption,
                label=tex_label,
            )
        write_csv(csv_paths[key], table)
        write_text(tex_paths[key], tex)
        out[key] = table
    return out
