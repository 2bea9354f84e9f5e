"""Table 5 in the TTP paper's layout: the methods on public benchmarks, ours beside the
paper's values (rule ``ttp_table5``; computes nothing, renders ``ttp_public_evaluate``'s
summary).

Rows follow the paper's order; a paper row we do not run (CoPPS, quoted by the paper from its
own publication) shows the paper's values and ``--`` for ours; the paper's MAPs row (also
quoted) sits beside our MAPs-style baseline. Columns are each configured public set's
measures: the paper's for a set it reports (Amazon: HR@20, nDCG@20; KuaiSearch: HR@20,
Recall@20), all three otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from personalir.common.io import atomic_open, read_parquet, write_text
from personalir.common.latex import dataframe_to_latex, escape
from personalir.ttp.evaluation.layout import paper_row_order
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS


def paper_rows() -> dict[str | None, str]:
    """Our method -> the paper's Table 5 row key, in the paper's row order; a paper row that
    no method gives (quoted from another paper, e.g. CoPPS) has ``None`` (each class's
    ``paper_rows["table5"]``; the order is the packaged paper-results file's)."""
    ours = {}
    for name in sorted(PERSONAL_RETRIEVERS.names()):
        key = PERSONAL_RETRIEVERS.get(name).paper_rows.get("table5")
        if key is not None:
            ours.setdefault(key, name)
    return {ours.get(key): key for key in paper_row_order("table5")}


# Our method -> the paper's Table 5 row key; paper rows we never run follow in the order.
PAPER_ROWS = paper_rows()
QUOTED_LABELS = {"copps_quoted": "CoPPS*"}
FORMAT_NAMES = {"personalwab": "PersonalWAB", "kuaisearch": "KuaiSearch"}
ALL_MEASURES = ("HR@20", "nDCG@20", "Recall@20")


def table5(
    summary: pd.DataFrame,
    methods: Sequence[str],
    labels: Mapping[str, str],
    sets: Sequence[str],
    paper: Mapping | None,
) -> tuple[pd.DataFrame, dict[str, tuple[str, ...]]]:
    """One row per Table 5 row (ours and the paper's), columns ``<set> <measure>`` with
    ``ci_low``/``ci_high`` and ``paper``; and the measures shown per set."""
    columns = (paper or {}).get("columns") or {}
    rows_ref = (paper or {}).get("rows") or {}
    shown = {s: tuple(columns.get(s) or ALL_MEASURES) for s in sets}
    order = [m for m in PAPER_ROWS if m in methods] + [m for m in methods if m not in PAPER_ROWS]
    keys = [(m, PAPER_ROWS.get(m)) for m in order]
    for pos, (ours, key) in enumerate(PAPER_ROWS.items()):
        if ours is None and key in rows_ref:
            before = [k for _, k in keys]
            nxt = [k for o, k in list(PAPER_ROWS.items())[pos + 1 :] if k in before]
            keys.insert(before.index(nxt[0]) if nxt else len(keys), (None, key))
    out = []
    for ours, key in keys:
        ref = rows_ref.get(key) or {}
        label = labels.get(ours, ours) if ours else QUOTED_LABELS.get(key, key)
        if ours == "maps" and key in rows_ref:
            label += " (paper: MAPs*)"
        row = {"method": ours or "", "paper_key": key or "", "Method": label}
        for s in sets:
            sub = summary[(summary["set"] == s) & (summary["method"] == ours)]
            for m in shown[s]:
                hit = sub[sub["measure"] == m]
                for col, src in (("", "value"), (" ci_low", "ci_low"), (" ci_high", "ci_high")):
                    row[f"{s} {m}{col}"] = float(hit[src].iloc[0]) if len(hit) else math.nan
                row[f"{s} {m} paper"] = float((ref.get(s) or {}).get(m, math.nan))
        out.append(row)
    return pd.DataFrame(out), shown


def make_table5(
    *,
    summary_path: str | Path | None,
    paper_path: str | Path | None,
    methods: Sequence[str],
    labels: Mapping[str, str],
    sets: Mapping[str, Mapping],
    config_label: str,
    csv_out: str | Path,
    tex_out: str | Path,
) -> pd.DataFrame:
    import yaml

    columns = ["set", "method", "measure", "value", "ci_low", "ci_high", "queries"]
    summary = read_parquet(summary_path) if summary_path else pd.DataFrame(columns=columns)
    paper = None
    if paper_path:
        doc = yaml.safe_load(Path(paper_path).read_text(encoding="utf-8")) or {}
        paper = doc.get("table5")
    names = list(sets) or list((paper or {}).get("columns") or {})
    table, shown = table5(summary, methods, labels, names, paper)
    with atomic_open(csv_out) as fh:
        table.to_csv(fh, index=False, float_format="%.4f")
    cols = ["Method"]
    groups: list[tuple[str, int]] = [("", 1)]
    col_labels = ["Method"]
    for s in names:
        n = 0
        for m in shown[s]:
            cols.append(f"{s} {m}")
            col_labels.append(m)
            n += 1
            if paper:
                cols.append(f"{s} {m} paper")
                col_labels.append("(paper)")
                n += 1
        groups.append((s, n))
    bold = {}
    for s in names:
        for m in shown[s]:
            col = table[f"{s} {m}"]
            if col.notna().any():
                bold[(int(col.idxmax()), f"{s} {m}")] = True
    notes = []
    if not sets:
        notes.append(
            "Not run on this configuration: ttp.public.sets is empty (give a set's released "
            "files as dir, or a sample-world fixture_domain); only the paper's values are shown."
        )
    fixtures = [s for s, spec in sets.items() if spec.get("fixture_domain")]
    if fixtures:
        notes.append(
            "Fixture-scale build: "
            + "; ".join(
                f"{escape(s)} is the synthetic {escape(str(sets[s]['fixture_domain']))} domain "
                f"written in {FORMAT_NAMES[sets[s]['format']]}'s published format"
                for s in fixtures
            )
            + ", not the public data, so our values are not comparable in size to the paper's."
        )
    notes.append(
        "Our models are the ones trained on this configuration's example sets and are applied "
        "to the public sets without training on them (the paper trains on each dataset)."
    )
    if paper:
        notes.append(
            "Paper values (x 100) beside ours; * = quoted by the paper from the original "
            "publication; a row we do not run shows --."
        )
    caption = (
        f"Public benchmarks (Table 5 layout) on the {escape(config_label)} configuration: "
        "HR@20, nDCG@20 and Recall@20 of the test searches (ours as fractions, best bold). "
        + " ".join(notes)
    )
    write_text(
        tex_out,
        dataframe_to_latex(
            table[cols],
            caption=caption,
            label="tab:ttp-table5",
            floatfmt=".3f",
            bold=bold,
            header_groups=groups,
            column_labels=col_labels,
            fit_width=True,
        ),
    )
    return table
