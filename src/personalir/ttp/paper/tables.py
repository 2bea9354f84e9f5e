"""The TTP paper's Table 4 layout (methods x test sets) from the evaluation summary.

Rows are the methods in configured order; for each test set (General, Broad, LongTail and
the pooled ``All``) the columns are the configured measures. Values are the pooled-domain
means (``domain == "All"``); the CSV also carries the 95% CI bounds. When a reference YAML of
the paper's values is configured (method -> test set -> measure -> value), its numbers are
added as ``paper`` columns beside ours; otherwise those columns print ``--``.

:func:`make_table` is the rule ``ttp_table`` (CSV and LaTeX from the same table). Only that
rule imports this module: the compute steps never load the LaTeX rendering.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from personalir.common.io import atomic_open, read_json, read_parquet, write_text
from personalir.common.latex import dataframe_to_latex, table_parts
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS
from personalir.ttp.training.student import method_name

TEST_SETS = ("General", "Broad", "LongTail", "All")
TABLE_MEASURES = ("Recall@10", "Recall@20", "Recall@100", "MRR@100")
# Table 4's last column: Spearman on the history-free Relevance set
# (personalir.ttp.evaluation.relevance_eval).
RELEVANCE_SET, RELEVANCE_MEASURE = "Relevance", "Spearman"
# Our method names whose paper row has another key in the paper-results file's ``table4``
# (each class's ``paper_rows``): e.g. ``dense`` (a BERT-family bi-encoder, contrastive only)
# is the paper's BERT-base row, ``llm_embedding`` (the TTP backbone, no generation) its
# Qwen-Embedding row.
PAPER_KEYS = {
    name: key
    for name in sorted(PERSONAL_RETRIEVERS.names())
    if (key := PERSONAL_RETRIEVERS.get(name).paper_rows.get("table4")) not in (None, name)
}


def table4_methods(methods: Sequence[str]) -> list[str]:
    """The configured methods that are Table 4 rows (the ablations are Tables 6 and 7)."""

    return [m for m in methods if getattr(PERSONAL_RETRIEVERS.get(m), "table4_row", True)]


def paper_table4(doc: Mapping | None) -> dict:
    """Our method -> the paper's Table 4 values, from a paper-results file or a plain map."""
    if not doc:
        return {}
    rows = doc.get("table4", doc)
    out = dict(rows)
    for ours, theirs in PAPER_KEYS.items():
        if theirs in rows:
            out[ours] = rows[theirs]
    return out


def table4(
    summary: pd.DataFrame,
    methods: Sequence[str],
    labels: Mapping[str, str],
    *,
    test_sets: Sequence[str] = TEST_SETS,
    measures: Sequence[str] = TABLE_MEASURES,
    paper: Mapping | None = None,
    domain: str = "All",
    relevance: Mapping[str, float | None | Mapping] | None = None,
) -> pd.DataFrame:
    """Long-format values -> one row per method, columns ``<test set> <measure>``.

    ``relevance``: method -> Spearman on the Relevance set, a number or ``{"value",
    "ci_low", "ci_high"}`` (the ``Relevance Spearman`` column, last; a method without a value
    prints as missing). None: no such column.
    """
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
        if relevance is not None:
            got = relevance.get(method)
            if not isinstance(got, Mapping):
                got = {"value": got}
            col = f"{RELEVANCE_SET} {RELEVANCE_MEASURE}"
            for key, name in (
                ("value", col),
                ("ci_low", f"{col} ci_low"),
                ("ci_high", f"{col} ci_high"),
            ):
                value = got.get(key)
                row[name] = float("nan") if value is None else float(value)
            ref = ((paper or {}).get(method) or {}).get(RELEVANCE_SET) or {}
            row[f"{col} paper"] = (
                float(ref[RELEVANCE_MEASURE]) if RELEVANCE_MEASURE in ref else float("nan")
            )
        rows.append(row)
    return pd.DataFrame(rows)


#: Value columns in one part of Table 4: at the text's size, a part with more runs past
#: the line (the method names take a third of it).
PART_COLUMNS = 8


def _short(measure: str) -> str:
    return measure.replace("Recall@", "R@").replace("MRR@100", "MRR")


def table4_parts(table: pd.DataFrame, *, with_paper: bool) -> list[tuple[list[str], list]]:
    """Table 4's columns in parts that fit the line: one part per test set, the Relevance
    set beside the last when both fit in :data:`PART_COLUMNS` value columns.

    Each part: (its sets, and per set and measure ``(set, measure, ours column, paper
    column or None)``). A paper column is shown when ``with_paper`` and the paper has a
    value in it for some method (it has none for the pooled ``All``)."""
    value_cols = [
        c for c in table.columns if c != "Method" and not c.endswith(("ci_low", "ci_high", "paper"))
    ]
    sets: dict[str, list] = {}
    for col in value_cols:
        test_set, measure = col.split(" ", 1)
        paper = f"{col} paper"
        shown = with_paper and paper in table.columns and table[paper].notna().any()
        sets.setdefault(test_set, []).append((test_set, measure, col, paper if shown else None))
    parts: list[tuple[list[str], list]] = []
    for test_set, cols in sets.items():
        width = sum(2 if paper else 1 for *_, paper in cols)
        if parts and test_set == RELEVANCE_SET:
            last_sets, last_cols = parts[-1]
            if sum(2 if c[3] else 1 for c in last_cols) + width <= PART_COLUMNS:
                parts[-1] = ([*last_sets, test_set], [*last_cols, *cols])
                continue
        parts.append(([test_set], cols))
    return parts


def _set_title(test_set: str) -> str:
    if test_set == "All":
        return "all test queries pooled (All)"
    if test_set == RELEVANCE_SET:
        return "the history-free Relevance set"
    return f"the {test_set} test set"


def table4_latex(table: pd.DataFrame, *, caption: str, label: str, with_paper: bool) -> str:
    """The LaTeX rendering in parts a, b, ... (:func:`table4_parts`, one float each, numbered
    as the manuscript numbers Table 4 with a letter): per test set its measures, ours and
    the paper's value beside; the best of ours in each column bold. ``label`` refers to the
    whole table, ``<label>-<letter>`` to a part."""
    # No test set evaluated: one part of the methods alone (the manuscript refers to part a).
    parts = table4_parts(table, with_paper=with_paper) or [([], [])]
    bold_of = {}
    for _, cols in parts:
        for *_, col, _ in cols:
            if table[col].notna().any():
                bold_of[col] = int(table[col].idxmax())
    titles = [" and ".join(_set_title(t) for t in sets) or "no test set" for sets, _ in parts]
    letters = [chr(ord("a") + i) for i in range(len(parts))]
    missing = [
        t
        for sets, cols in parts
        for t in sets
        if with_paper and not any(c[3] for c in cols if c[0] == t)
    ]
    whole = caption + (
        (
            f" Printed in {len(parts)} parts, one per test set: "
            + "; ".join(f"({x}) {t}" for x, t in zip(letters, titles, strict=True))
            + "."
            if len(parts) > 1
            else ""
        )
        + " Bold: the best of ours in each column."
        + (f" The paper reports no values for {', '.join(missing)}." if missing else "")
    )
    out = []
    for i, (_, cols) in enumerate(parts):
        shown = ["Method"]
        labels = ["Method"]
        measures: list[tuple[str, int]] = [("", 1)]
        set_groups: list[tuple[str, int]] = [("", 1)]
        bold = {}
        for test_set, measure, col, paper in cols:
            for name, word in ((col, "ours"), (paper, "paper")):
                if name is None:
                    continue
                shown.append(name)
                labels.append(word)
            n = 2 if paper else 1
            measures.append((_short(measure), n))
            if set_groups[-1][0] == test_set:
                set_groups[-1] = (test_set, set_groups[-1][1] + n)
            else:
                set_groups.append((test_set, n))
            if col in bold_of:
                bold[(bold_of[col], col)] = True
        text = whole if i == 0 else rf"Table~\ref{{{label}}} continued: {titles[i]}."
        out.append(
            dataframe_to_latex(
                table[shown],
                caption=text,
                label=f"{label}-{letters[i]}",
                floatfmt=".3f",
                bold=bold,
                header_rows=[set_groups, measures] if cols else None,
                column_labels=labels,
                column_sep="4pt",
            )
        )
    return table_parts(out, label)


def relevance_values(paths: Sequence[str | Path]) -> dict[str, dict[str, float | None]]:
    """Method -> ``{"value", "ci_low", "ci_high"}`` (Spearman and its bootstrap CI over
    queries) from the ``ttp_relevance`` outputs. With several example sets, the value is the
    mean of the sets' values (pairs of different sets are never pooled) and the CI is left
    out (None): the sets' resamples are not kept to combine."""

    per_method: dict[str, list[dict]] = {}
    for path in paths:
        rec = read_json(path)
        per_method.setdefault(rec["method"], [])
        if rec["spearman"] is not None:
            per_method[rec["method"]].append(rec)
    out: dict[str, dict[str, float | None]] = {}
    for method, recs in per_method.items():
        if not recs:
            out[method] = {"value": None, "ci_low": None, "ci_high": None}
        elif len(recs) == 1:
            rec = recs[0]
            out[method] = {
                "value": float(rec["spearman"]),
                "ci_low": rec.get("ci_low"),
                "ci_high": rec.get("ci_high"),
            }
        else:
            value = sum(float(r["spearman"]) for r in recs) / len(recs)
            out[method] = {"value": value, "ci_low": None, "ci_high": None}
    return out


def make_table(
    *,
    summary_path: str | Path,
    ttp: Mapping,
    labels: Mapping[str, str],
    config_label: str,
    csv_out: str | Path,
    tex_out: str | Path,
    relevance_paths: Sequence[str | Path] = (),
) -> pd.DataFrame:
    import yaml

    summary = read_parquet(summary_path)
    paper = None
    if ttp["paper_reference"]:
        paper = yaml.safe_load(Path(ttp["paper_reference"]).read_text(encoding="utf-8"))
    relevance = relevance_values(relevance_paths) if relevance_paths else None
    table = table4(
        summary,
        table4_methods(ttp["methods"]),
        labels,
        paper=paper_table4(paper),
        relevance=relevance,
    )
    with atomic_open(csv_out) as fh:
        table.to_csv(fh, index=False, float_format="%.4f")
    caption = (
        f"Personalised retrieval on the {config_label} configuration (Table 4 layout; "
        "mean over example sets' test queries, pooled"
        + (
            "; Relevance: Spearman of history-free scores with graded labels, ours as a "
            "correlation, the paper's x 100). "
            if relevance is not None
            else "). "
        )
        + (
            "Paper values beside ours."
            if paper
            else r"The paper's values are not bundled (set \texttt{ttp.paper\_reference} to"
            " show them)."
        )
    )
    write_text(
        tex_out,
        table4_latex(table, caption=caption, label="tab:ttp-table4", with_paper=paper is not None),
    )
    return table


# --------------------------------------------------------------------------- Table 8
TABLE8_SETS = ("General", "Broad", "LongTail")
TABLE8_MEASURE = "Recall@20"
# Our student variant -> the paper's Table 8 row key.
PAPER_TABLE8_ROWS = {
    "full": "student_305m",
    "no_qr_p": "student_no_qr_p",
    "no_q_qr": "student_no_q_qr",
    "no_qr_p_no_q_qr": "student_no_qr_p_no_q_qr",
}
PAPER_TABLE8_TEACHER = "teacher_ttp_3b"


def table8(
    summary: pd.DataFrame,
    rows: Sequence[tuple[str, str, str]],
    *,
    paper: Mapping | None = None,
    domain: str = "All",
) -> pd.DataFrame:
    """The paper's Table 8 layout: Recall@20 per test set and their unweighted mean (Avg).

    ``rows``: (method, row label, the paper's row key) in order, the teacher first; the CSV
    carries each cell's CI bounds and the paper's value (``paper``: its ``table8.rows``).
    """
    sub = summary[(summary["domain"] == domain) & (summary["measure"] == TABLE8_MEASURE)]
    out = []
    for method, label, paper_key in rows:
        row = {"Method": label}
        values = []
        ref = ((paper or {}).get(paper_key)) or {}
        for t in TABLE8_SETS:
            hit = sub[(sub["method"] == method) & (sub["label"] == t)]
            value = float(hit["value"].iloc[0]) if len(hit) else float("nan")
            values.append(value)
            row[t] = value
            row[f"{t} ci_low"] = float(hit["ci_low"].iloc[0]) if len(hit) else float("nan")
            row[f"{t} ci_high"] = float(hit["ci_high"].iloc[0]) if len(hit) else float("nan")
            row[f"{t} paper"] = float(ref[t]) if t in ref else float("nan")
        row["Avg"] = float(sum(values) / len(values))
        row["Avg paper"] = float(ref["Avg"]) if "Avg" in ref else float("nan")
        out.append(row)
    return pd.DataFrame(out)


def make_table8(
    *,
    summary_path: str | Path,
    ttp: Mapping,
    labels: Mapping[str, str],
    config_label: str,
    csv_out: str | Path,
    tex_out: str | Path,
) -> pd.DataFrame:
    import yaml

    summary = read_parquet(summary_path)
    paper = None
    if ttp["paper_reference"]:
        doc = yaml.safe_load(Path(ttp["paper_reference"]).read_text(encoding="utf-8"))
        paper = ((doc or {}).get("table8") or {}).get("rows")
    teacher = ttp["student"]["teacher"]
    rows = [(teacher, f"Teacher: {labels.get(teacher, teacher)}", PAPER_TABLE8_TEACHER)]
    for variant, key in PAPER_TABLE8_ROWS.items():
        method = method_name(variant)
        if method in ttp["methods"]:
            rows.append((method, labels.get(method, method), key))
    table = table8(summary, rows, paper=paper)
    with atomic_open(csv_out) as fh:
        table.to_csv(fh, index=False, float_format="%.4f")
    shown = ["Method"]
    groups: list[tuple[str, int]] = [("", 1)]
    for c in (*TABLE8_SETS, "Avg"):
        shown += [c] + ([f"{c} paper"] if paper else [])
        groups.append((c, 2 if paper else 1))
    out = table[shown]
    # With the paper's values: each test set over ours and the paper's (narrow columns).
    column_labels = ["Method"] + (["ours", "paper"] * (len(groups) - 1) if paper else shown[1:])
    bold = {}
    for c in (*TABLE8_SETS, "Avg"):
        students = table[c].iloc[1:]
        if students.notna().any():
            bold[(int(students.idxmax()), c)] = True
    caption = (
        f"The distilled student on the {config_label} configuration (Table 8 layout): "
        "Recall@20 per test set and their mean; the teacher first, then the student trained "
        r"with all three terms and without $\langle q_r,p^+\rangle$, $\langle q,q_r\rangle$ or"
        " both; best student bold." + (" Paper values (x 100) beside ours." if paper else "")
    )
    write_text(
        tex_out,
        dataframe_to_latex(
            out,
            caption=caption,
            label="tab:ttp-table8",
            floatfmt=".3f",
            bold=bold,
            header_groups=groups if paper else None,
            column_labels=column_labels,
            fit_width=True,
        ),
    )
    return table
