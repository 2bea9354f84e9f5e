"""The summary of a ``pqb-evaluate`` run: a table on the console and ``summary.json``.

Per retriever: Flip@1, RRstd (Mean RRstd at the RR depth), Deg@20, MRRdeg and R@10, on the
domains' equal-weight average (the paper's averaging) or, with one domain, on that domain;
``summary.json`` also has every domain with the 95% bootstrap interval and the number of
pairs or queries behind each value. Values are in percent, as the paper prints them.

Beside a retriever that stands in for one of the paper's systems (by family and type:
:data:`personalir.retrieval.base.PAPER_SYSTEMS`, e.g. any ``lexical`` retriever beside the
paper's BM25), the paper's values, read from ``config/paper_results/pqb.yaml`` (package data);
R@10 has no paper value. A retriever whose run has no lines in a domain (allowed with
``--allow-empty-run``) has no results there, and says so ("no results"), never 0.00: an
empty run misses every query, which Flip and Deg would score as perfectly robust.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

import pandas as pd
import yaml

from personalir.common.config import PAPER_RESULTS
from personalir.retrieval.base import paper_system
from personalir.retrieval.metrics import MetricSettings
from personalir.retrieval.summary import AVERAGE

NO_RESULTS = "no results"
#: The summary's columns -> (the paper table, the paper column) where the paper has one.
PAPER_CELLS = {
    "Flip@1": ("flip_rrstd", "Flip@1"),
    "RRstd": ("flip_rrstd", "Mean RRstd"),
    "Deg@20": ("degradation", "Deg@20"),
    "MRRdeg": ("degradation", "MRRdeg"),
    "R@10": None,
}
#: Column -> lower is better (the robustness measures) or higher (R@10).
LOWER_IS_BETTER = {"Flip@1": True, "RRstd": True, "Deg@20": True, "MRRdeg": True, "R@10": False}
PERCENT = 100.0


def summary_metrics(metrics: MetricSettings) -> dict[str, str]:
    """The summary's columns -> the metric names of the summary CSV."""
    depth = metrics.rr_depth
    return {
        "Flip@1": "Flip@1",
        "RRstd": f"RRstd@{depth}",
        "Deg@20": "Deg@20",
        "MRRdeg": f"MRRdeg@{depth}",
        "R@10": "R@10",
    }


def _gone(name: str, domain: str, empty: Collection[tuple[str, str]]) -> bool:
    """No results: the retriever's run is empty in ``domain``, or in any domain of an average."""
    if domain == AVERAGE:
        return any(n == name for n, _ in empty)
    return (name, domain) in empty


def blank_no_results(summary: pd.DataFrame, empty: Collection[tuple[str, str]]) -> pd.DataFrame:
    """The summary with no value where a retriever has no results: its (retriever, domain)
    rows, and its average when any of its domains has none (the tables then print ``--``)."""
    out = summary.copy()
    blank = [_gone(n, d, empty) for n, d in zip(out["retriever"], out["domain"], strict=True)]
    if any(blank):
        out.loc[blank, ["value", "ci_low", "ci_high"]] = math.nan
    return out


def drop_no_results(significance: pd.DataFrame, empty: Collection[tuple[str, str]]) -> pd.DataFrame:
    """The significance rows without tests against a retriever that has no results there."""
    keep = [
        not (_gone(a, d, empty) or _gone(b, d, empty))
        for a, b, d in zip(
            significance["retriever_a"],
            significance["retriever_b"],
            significance["domain"],
            strict=True,
        )
    ]
    return significance[keep].reset_index(drop=True)


def read_paper(path=None) -> dict:
    """The paper's PQB results (``config/paper_results/pqb.yaml``, package data)."""
    path = path or PAPER_RESULTS / "pqb.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def paper_values(paper: Mapping, system: str | None) -> dict[str, float | None]:
    """The paper's values of ``system`` per summary column, in percent (None: not given)."""
    out: dict[str, float | None] = {}
    for column, cell in PAPER_CELLS.items():
        value = None
        if system and cell:
            table = paper.get(cell[0]) or {}
            row = (table.get("rows") or {}).get(system) or {}
            if cell[1] in row:
                value = float(row[cell[1]])
                if table.get("unit") != "percent":  # a fraction: as percent, like ours
                    value *= PERCENT
        out[column] = value
    return out


def build_summary(
    summary: pd.DataFrame,
    names: Sequence[str],
    domains: Sequence[str],
    metrics: MetricSettings,
    retrievers: Mapping[str, Mapping],
    empty: Collection[tuple[str, str]],
    paper: Mapping,
) -> dict:
    """The content of ``summary.json``: per retriever (``retrievers[name]``: its metadata,
    ``label``, ``family``, ``type``) every domain's values and the paper's row, in percent."""
    columns = summary_metrics(metrics)
    overall = AVERAGE if len(domains) > 1 else domains[0]
    blocks = list(domains) + ([AVERAGE] if len(domains) > 1 else [])
    indexed = summary.set_index(["retriever", "domain", "metric"])
    out = []
    for name in names:
        meta = retrievers.get(name) or {}
        system = paper_system(meta.get("family"), meta.get("type"))
        values: dict[str, object] = {}
        for block in blocks:
            if _gone(name, block, empty):
                values[block] = NO_RESULTS
                continue
            cells = {}
            for column, metric in columns.items():
                if (name, block, metric) not in indexed.index:
                    cells[column] = None  # not computed with this configuration
                    continue
                row = indexed.loc[(name, block, metric)]
                cells[column] = {
                    "value": _percent(row["value"]),
                    "ci_low": _percent(row["ci_low"]),
                    "ci_high": _percent(row["ci_high"]),
                    "items": int(row["items"]),
                }
            values[block] = cells
        out.append(
            {
                "name": name,
                "label": meta.get("label") or name,
                "family": meta.get("family"),
                "type": meta.get("type"),
                "paper_system": system,
                "paper": paper_values(paper, system) if system else None,
                "values": values,
            }
        )
    return {
        "unit": "percent",
        "columns": list(columns),
        "metrics": columns,
        "lower_is_better": LOWER_IS_BETTER,
        "overall": overall,
        "domains": list(domains),
        "paper_source": paper.get("source"),
        "paper_averaging": paper.get("averaging"),
        "retrievers": out,
    }


def _percent(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else round(value * PERCENT, 4)


def format_table(content: Mapping) -> str:
    """The console table: one row per retriever on the overall block, ours and the paper's."""
    overall = content["overall"]
    columns = list(content["columns"])
    head = ["retriever", "paper system"] + [h for c in columns for h in (c, "paper")]
    rows = [head]
    for r in content["retrievers"]:
        cells = r["values"][overall]
        row = [r["name"], r["paper_system"] or "--"]
        for column in columns:
            if cells == NO_RESULTS:
                ours = NO_RESULTS
            else:
                cell = cells.get(column)
                ours = "n/a" if cell is None or cell["value"] is None else f"{cell['value']:.2f}"
            theirs = (r["paper"] or {}).get(column)
            row += [ours, "--" if theirs is None else f"{theirs:.2f}"]
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    where = (
        f"the equal-weight average over {', '.join(content['domains'])}"
        if overall == AVERAGE
        else overall
    )
    lower = ", ".join(c for c in columns if content["lower_is_better"][c])
    notes = [
        f"PQB summary, in percent, on {where} ({lower}: lower is more robust; "
        + ", ".join(c for c in columns if not content["lower_is_better"][c])
        + ": higher is better).",
        "paper: the PQB paper's value for the system the retriever stands in for (same "
        f"family; {content['paper_averaging']}); --: none; n/a: not computed with this "
        "configuration.",
    ]
    return "\n".join([notes[0], *lines, notes[1]]) + "\n"
