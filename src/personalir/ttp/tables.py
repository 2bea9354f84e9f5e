"""The TTP paper's Table 4 layout (methods x test sets) from the evaluation summary.

Rows are the methods in configured order; for each test set (General, Broad, LongTail and
the pooled ``All``) the columns are the configured measures. Values are the pooled-domain
means (``domain == "All"``); the CSV also carries the 95% CI bounds. When a reference YAML of
the paper's values is configured (method -> test set -> measure -> value), its numbers are
added as ``paper`` columns beside ours; otherwise those columns print ``--``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from personalir.common.latex import dataframe_to_latex

TEST_SETS = ("General", "Broad", "LongTail", "All")
TABLE_MEASURES = ("Recall@10", "nDCG@20", "MRR@100")


def table4(
    summary: pd.DataFrame,
    methods: Sequence[str],
    labels: Mapping[str, str],
    *,
    test_sets: Sequence[str] = TEST_SETS,
    measures: Sequence[str] = TABLE_MEASURES,
    paper: Mapping | None = None,
    domain: str = "All",
) -> pd.DataFrame:
    """Long-format values -> one row per method, columns ``<test set> <measure>``."""
    sub = summary[summary["domain"] == domain]
    present = [t for t in test_sets if t in set(sub["label"])]
    rows = []
    for method in methods:
        row = {"Method": labels.get(method, method)}
        for t in present:
            for m in measures:
                hit = sub[(sub["method"] == method) & (sub["label"] == t) & (sub["measure"] == m)]
                row[f"{t} {m}"] = float(hit["value"].iloc[0]) if len(hit) else float("nan")
                row[f"{t} {m} ci_low"] = float(hit["ci_low"].iloc[0]) if len(hit) else float("nan")
                row[f"{t} {m} ci_high"] = (
                    float(hit["ci_high"].iloc[0]) if len(hit) else float("nan")
                )
                ref = ((paper or {}).get(method) or {}).get(t) or {}
                row[f"{t} {m} paper"] = float(ref[m]) if m in ref else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def table4_latex(table: pd.DataFrame, *, caption: str, label: str, with_paper: bool) -> str:
    """The LaTeX rendering: ours (and the paper's) per test set and measure; best bold."""
    value_cols = [
        c for c in table.columns if c != "Method" and not c.endswith(("ci_low", "ci_high", "paper"))
    ]
    shown = ["Method"]
    for c in value_cols:
        shown.append(c)
        if with_paper:
            shown.append(f"{c} paper")
    out = table[shown].copy()
    # Two header rows: the test set over its measures (and the paper's values beside them).
    groups: list[tuple[str, int]] = [("", 1)]
    labels = ["Method"]
    for c in shown[1:]:
        test_set, measure = c.split(" ", 1)
        short = measure.replace("Recall@", "R@").replace("MRR@100", "MRR")
        labels.append(short.replace(" paper", " (paper)"))
        if groups[-1][0] == test_set:
            groups[-1] = (test_set, groups[-1][1] + 1)
        else:
            groups.append((test_set, 1))
    bold = {}
    for c in value_cols:
        col = table[c]
        if col.notna().any():
            bold[(int(col.idxmax()), c)] = True
    return dataframe_to_latex(
        out,
        caption=caption,
        label=label,
        floatfmt=".3f",
        bold=bold,
        header_groups=groups,
        column_labels=labels,
        fit_width=True,
    )
