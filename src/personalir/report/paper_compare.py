"""The PQB paper's tables with ours beside them, row by row, in the paper's units.

For each table of ``config/paper_results/pqb.yaml`` that our own tables answer (:data:`SPECS`:
dataset, flip_rrstd, degradation, attribution, error_sampling; the validation tables carry
the paper's values in their own columns), one LaTeX table and long-format CSV rows: the
paper's row, the row of ours standing in for it, per measure the paper's value and ours.

Ours are the equal-weight average over domains, as the paper's (the table's ``Average`` rows,
else its only domain, else the mean: :func:`personalir.report.claims.average_rows`), scaled to
the paper's unit (``percent``: x100). Retrieval systems map to ours by
:func:`personalir.report.claims.stand_ins`; attribution models and error samplers by
registry id (:data:`MODEL_ROWS`, :data:`SAMPLER_ROWS`); the dataset table by domain. A row
of the paper's with no counterpart here, or a table this configuration does not produce,
shows ``--`` for ours and says why in the caption; nothing is left out.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from personalir.common.io import atomic_open
from personalir.common.latex import SHRINK_TO_LINE, escape
from personalir.common.plotting import palette, pyplot, save
from personalir.report import claims as cl

#: The paper's attribution rows -> our model ids (the paper lacks our eigenpair variant).
MODEL_ROWS = dict(
    zip(
        (
            "Single Embedding + Cosine",
            "Shared Isotropic Gaussian",
            "User Diagonal Gaussian",
            "von Mises-Fisher (vMF)",
            "Rank-Two + Diagonal Gaussian",
            "k-Nearest Neighbor",
            "Rank-One + Diagonal Gaussian (ours)",
        ),
        cl.PAPER_MODELS,
        strict=True,
    )
)
#: The paper's error-sampling rows -> our sampler ids.
SAMPLER_ROWS = dict(
    zip(
        (
            "Global Sampling",
            "Uniform Sampling",
            "Character-random Sampling",
            "Wrong-user Profile Sampling",
            "Personalized Sampling (ours)",
        ),
        cl.PAPER_SAMPLERS,
        strict=True,
    )
)
#: The paper's dataset columns -> the datasheet's.
DATASET_COLUMNS = {"syntactic": "Syntactic", "writing_error": "Writing-error"}
DATASET_COLUMNS |= {"total": "Total queries", "user_profiles": "User profiles"}
DATASET_COLUMNS |= {"sentences": "Sentences"}
CSV_COLUMNS = ("table", "paper_row", "ours_row", "measure", "unit", "paper", "ours")
CSV_COLUMNS += ("ours_ci_low", "ours_ci_high")
CAPTIONS = {
    "dataset": "Benchmark size per domain",
    "flip_rrstd": "Ranking instability under syntactic variation (Flip@K, Mean RRstd; lower "
    "is more robust)",
    "degradation": "Degradation from writing errors (Deg@K, MRRdeg; lower is more robust)",
    "attribution": "User attribution by the syntactic profile models",
    "error_sampling": "Error-profile sampling: the user's own errors ranked among samplers' "
    "outputs",
}


@dataclass
class Compared:
    """One paper table with ours beside it."""

    key: str
    columns: list[str]
    units: dict[str, str]
    rows: list[tuple[str, str, dict[str, float], dict[str, cl.Cell]]]  # paper, ours, values
    note: str
    #: Our rows evaluated on a subset of what the others were (an LLM reranker scores a
    #: sample of the pairs): our row's label -> how many, e.g. ``9 of 157 pairs``.
    subsets: dict[str, str] = field(default_factory=dict)

    def records(self) -> list[dict]:
        out = []
        for paper_row, ours_row, paper, ours in self.rows:
            for col in self.columns:
                c = ours.get(col, cl.Cell(math.nan))
                out.append(
                    dict(
                        zip(
                            CSV_COLUMNS,
                            (self.key, paper_row, ours_row, col, self.units.get(col, ""))
                            + (paper.get(col, math.nan), c.v, c.lo, c.hi),
                            strict=True,
                        )
                    )
                )
        return out


def _unit_scale(unit: str) -> float:
    return 100.0 if unit == "percent" else 1.0


def _units(spec: Mapping) -> dict[str, str]:
    cols = spec["columns"]
    per = spec.get("units") or {}
    return {c: per.get(c, spec.get("unit", "count")) for c in cols}


#: What the retrieval tables' ``pairs`` count, by paper table.
PAIR_UNITS = {"flip_rrstd": "syntactic pairs", "degradation": "writing-error pairs"}


def _subsets(frame: pd.DataFrame, stand: Mapping[str, cl.StandIn], unit: str) -> dict[str, str]:
    """Stand-ins evaluated on fewer pairs than the most of any retriever (the table's
    ``pairs`` column, summed over domains on the Average rows): label -> ``n of N <unit>``."""
    if "pairs" not in frame.columns or frame.empty:
        return {}
    most = int(frame["pairs"].max())
    out = {}
    for s in stand.values():
        if s.retriever in frame.index and int(frame.loc[s.retriever, "pairs"]) < most:
            out[s.label] = f"{int(frame.loc[s.retriever, 'pairs'])} of {most} {unit}"
    return out


def _retrieval(ctx: cl.Context, key: str, spec: Mapping) -> tuple[list, str, dict]:
    frame, how = cl.average_rows(ctx.table(key), "retriever")
    stand = cl.stand_ins(ctx.config, ctx.table(key))
    ours_cols = {}
    for col in spec["columns"]:
        prefix, _, k = col.replace("Mean ", "").partition("@")
        ours_cols[col] = cl.measure_column(frame, prefix, int(k) if k else None)
    rows = []
    for paper_row, values in spec["rows"].items():
        s = stand.get(paper_row)
        if s is None or s.retriever not in frame.index:
            rows.append((paper_row, "", values, {}))
            continue
        scale = _unit_scale(spec.get("unit", ""))
        cells = {c: cl.cell_of(frame.loc[s.retriever], oc, scale) for c, oc in ours_cols.items()}
        rows.append((paper_row, s.label, values, cells))
    cols = ", ".join(f"{c} = our {oc}" for c, oc in ours_cols.items() if c != oc)
    return (
        rows,
        f"ours: {how}" + (f"; {cols}" if cols else ""),
        _subsets(frame, stand, PAIR_UNITS.get(key, "pairs")),
    )


def _by_id(table: str, key: str, ids: Mapping[str, str], ours_cols: Mapping[str, str]):
    def compare(ctx: cl.Context, _key: str, spec: Mapping) -> tuple[list, str]:
        frame, how = cl.average_rows(ctx.table(table), key)
        units = _units(spec)
        rows = []
        for paper_row, values in spec["rows"].items():
            ours_id = ids[paper_row]
            if ours_id not in frame.index:
                rows.append((paper_row, "", values, {}))
                continue
            row = frame.loc[ours_id]
            label = str(row["label"]) if "label" in row.index else ours_id
            cells = {
                c: cl.cell_of(row, oc, _unit_scale(units[c]))
                for c, oc in ours_cols.items()
                if oc in row.index
            }
            rows.append((paper_row, label, values, cells))
        return rows, f"ours: {how}"

    return compare


def _dataset(ctx: cl.Context, _key: str, spec: Mapping) -> tuple[list, str]:
    path = Path(ctx.results_dir) / "queries" / "datasheet.csv"
    if not path.is_file():
        raise cl.NotApplicable(f"no queries/datasheet.csv under {ctx.results_dir}")
    sheet = pd.read_csv(path).set_index("Domain")
    rows = []
    for paper_row, values in spec["rows"].items():
        name = paper_row.replace("_", " ")
        if name not in sheet.index:
            rows.append((paper_row, "", values, {}))
            continue
        cells = {
            c: cl.Cell(float(sheet.loc[name, oc]))
            for c, oc in DATASET_COLUMNS.items()
            if oc in sheet.columns
        }
        rows.append((paper_row, name, values, cells))
    return rows, "ours: the benchmark's datasheet (counts)"


ATTRIBUTION_COLUMNS = {"Balanced Attr.": "balanced", "AUROC": "auroc"}
ATTRIBUTION_COLUMNS |= {"Full-profile Attr.": "full_profile"}
SAMPLING_COLUMNS = {"Top-1": "top1", "MRR": "mrr", "Single-query Top-1": "single_query_top1"}
#: Paper table key -> function(context, key, the paper's spec) -> (rows, note[, subsets]).
SPECS: dict[str, Callable] = {
    "dataset": _dataset,
    "flip_rrstd": _retrieval,
    "degradation": _retrieval,
    "attribution": _by_id("attribution", "model", MODEL_ROWS, ATTRIBUTION_COLUMNS),
    "error_sampling": _by_id("error_sampling", "sampler", SAMPLER_ROWS, SAMPLING_COLUMNS),
}


def compare(ctx: cl.Context, key: str, spec: Mapping) -> Compared:
    """The paper's ``spec`` (its YAML table ``key``) with ours beside it."""
    units = _units(spec)
    subsets: dict[str, str] = {}
    try:
        rows, note, *more = SPECS[key](ctx, key, spec)
        subsets = more[0] if more else {}
    except cl.NotApplicable as exc:
        rows = [(r, "", v, {}) for r, v in spec["rows"].items()]
        note = f"ours absent: {exc.args[0]}"
    if missing := [p for p, o, _, _ in rows if not o]:
        note += f"; no counterpart here for {', '.join(missing)}"
    return Compared(key, list(spec["columns"]), units, rows, note, subsets)


def compare_all(results_dir: str | Path, config: Mapping, paper: str | Path) -> list[Compared]:
    data = yaml.safe_load(Path(paper).read_text(encoding="utf-8"))
    ctx = cl.Context(Path(results_dir), config or {})
    return [compare(ctx, key, data[key]) for key in SPECS if key in data]


def _fmt(x: float, unit: str) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "--"
    if unit == "count":
        return f"{x:,.0f}".replace(",", "{,}")
    return f"{x:.4f}" if unit == "fraction" else f"{x:.2f}"


_UNIT_WORDS = {"percent": "in \\%", "fraction": "as fractions", "count": "are counts"}


def _units_text(units: Mapping[str, str]) -> str:
    """``All values in %`` or ``A and B in %; C as fractions``."""
    groups: dict[str, list[str]] = {}
    for col, unit in units.items():
        groups.setdefault(unit, []).append(escape(col))
    word = lambda u: _UNIT_WORDS.get(u, f"in {escape(u)}")
    if len(groups) == 1:
        return f"All values {word(next(iter(groups)))}"
    return "; ".join(f"{' and '.join(cols)} {word(u)}" for u, cols in groups.items())


def _same_name(a: str, b: str) -> bool:
    return a.replace("_", " ").casefold() == b.replace("_", " ").casefold()


def _row_name(paper_row: str, ours_row: str, subset: bool) -> str:
    """The paper's row name, and under it (smaller, italic) ours standing in for it where the
    name differs (one column for both keeps the table within the line)."""
    mark = r"$^\dagger$" if subset else ""
    if not ours_row:  # no counterpart here: its values print "--", the caption says why
        return escape(paper_row)
    if _same_name(paper_row, ours_row):
        return escape(ours_row) + mark
    return (
        rf"\begin{{tabular}}[t]{{@{{}}l@{{}}}}{escape(paper_row)}\\"
        rf"\footnotesize\emph{{{escape(ours_row)}}}{mark}\end{{tabular}}"
    )


def latex(table: Compared, label: str, *, synthetic: bool) -> str:
    """The table in booktabs, paper's value then ours for every measure; one column names the
    paper's row and, below it, ours standing in for it."""
    n = len(table.columns)
    head = " & ".join(rf"\multicolumn{{2}}{{c}}{{{escape(c)}}}" for c in table.columns)
    rules = "".join(rf"\cmidrule(lr){{{2 + 2 * i}-{3 + 2 * i}}}" for i in range(n))
    what = _units_text(table.units)
    sample = (
        " This configuration's data are synthetic: ours exercise the pipeline and say "
        "nothing about real users."
        if synthetic
        else ""
    )
    subsets = ""
    if table.subsets:
        by_text: dict[str, list[str]] = {}
        for ours_row, text in table.subsets.items():
            by_text.setdefault(text, []).append(escape(ours_row))
        subsets = (
            r" $^\dagger$: ours evaluated on a subset, the sample of pairs that retriever is "
            "configured to score: "
            + "; ".join(f"{' and '.join(v)} on {k}" for k, v in by_text.items())
            + "."
        )
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        r"\setlength{\tabcolsep}{4pt}",
        rf"\caption{{{CAPTIONS[table.key]}: the paper's values (Paper) beside ours (Ours), "
        rf"each paper row with the row of ours standing in for it (below it, in italics, "
        rf"where its name differs). {what}. {escape(table.note)}. Configuration: "
        rf"\texttt{{{escape(label)}}}.{subsets}{sample}}}",
        rf"\label{{tab:pqb-paper-{table.key.replace('_', '-')}}}",
        SHRINK_TO_LINE,
        r"\begin{tabular}{l" + "rr" * n + "}",
        r"\toprule",
        rf"Paper row (ours) & {head} \\",
        rules,
        " & " + " & ".join(["Paper & Ours"] * n) + r" \\",
        r"\midrule",
    ]
    for paper_row, ours_row, paper, ours in table.rows:
        cells = [_row_name(paper_row, ours_row, ours_row in table.subsets)]
        for c in table.columns:
            u = table.units[c]
            cells += [_fmt(paper.get(c), u), _fmt(ours.get(c, cl.Cell(math.nan)).v, u)]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}}", r"\end{table}", ""]
    return "\n".join(lines)


def write_outputs(
    tables: Sequence[Compared],
    csv_path,
    tex_paths: Mapping[str, str | Path],
    label: str,
    *,
    synthetic: bool,
) -> None:
    """The CSV of every row and one ``.tex`` per table key in ``tex_paths``."""
    with atomic_open(csv_path) as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for t in tables:
            for rec in t.records():
                writer.writerow(
                    {
                        k: (
                            f"{v:.6f}"
                            if isinstance(v, float) and not math.isnan(v)
                            else ("" if isinstance(v, float) else v)
                        )
                        for k, v in rec.items()
                    }
                )
    by_key = {t.key: t for t in tables}
    for key, path in tex_paths.items():
        if key not in by_key:
            raise KeyError(f"no paper table {key!r} to write to {path}; have {sorted(by_key)}")
        with atomic_open(path) as fh:
            fh.write(latex(by_key[key], label, synthetic=synthetic))


#: The figures beside the tables: name -> (title, [(paper table, measure)]).
FIGURES = {
    "retrieval": (
        "The paper's retrieval systems and ours standing in",
        (
            ("flip_rrstd", "Flip@1"),
            ("flip_rrstd", "Mean RRstd"),
            ("degradation", "Deg@20"),
            ("degradation", "MRRdeg"),
        ),
    ),
    "profiles": (
        "The paper's profile models and error samplers and ours",
        (
            ("attribution", "Balanced Attr."),
            ("attribution", "AUROC"),
            ("error_sampling", "Top-1"),
            ("error_sampling", "MRR"),
        ),
    ),
}
_UNIT_SHORT = {"percent": "%", "fraction": "fraction", "count": "count"}


def figure(tables: Sequence[Compared], out: str | Path, *, label: str, name: str) -> None:
    """Tables as a picture (:data:`FIGURES`): per paper row, the paper's value (hollow) and
    ours (filled, with its bootstrap interval where the table has one); one row of panels
    per table, one panel per measure."""

    plt = pyplot()
    title, wanted = FIGURES[name]
    by = {t.key: t for t in tables}
    grid: dict[str, list[str]] = {}
    for key, measure in wanted:
        if key in by:
            grid.setdefault(key, []).append(measure)
    ncols = max([len(m) for m in grid.values()] or [1])
    height = sum(0.5 + 0.28 * len(by[k].rows) for k in grid) or 2.0
    fig, axes = plt.subplots(max(1, len(grid)), ncols, figsize=(8.0, height), squeeze=False)
    paper_colour, ours_colour = palette(2)
    for r, (key, measures) in enumerate(grid.items()):
        rows = by[key].rows
        for col, measure in enumerate(measures):
            ax = axes[r][col]
            for y, (_, _, paper, ours) in enumerate(rows):
                c = ours.get(measure, cl.Cell(math.nan))
                ax.scatter(
                    paper.get(measure, math.nan),
                    y,
                    facecolors="none",
                    edgecolors=paper_colour,
                    s=30,
                    label="Paper" if y == 0 else None,
                )
                if not math.isnan(c.v):
                    err = None
                    if not (math.isnan(c.lo) or math.isnan(c.hi)):
                        err = [[c.v - c.lo], [c.hi - c.v]]
                    ax.errorbar(
                        c.v,
                        y,
                        xerr=err,
                        fmt="o",
                        color=ours_colour,
                        ms=4,
                        label="Ours" if y == 0 else None,
                    )
            ax.set_title(f"{measure} ({_UNIT_SHORT.get(by[key].units[measure], '')})")
            ax.set_yticks(range(len(rows)))
            marked = by[key].subsets
            names = [row[0] + ("\u2020" if row[1] in marked else "") for row in rows]
            ax.set_yticklabels(names if col == 0 else [])
            ax.set_ylim(len(rows) - 0.5, -0.5)  # the paper's order, top down
        for col in range(len(measures), ncols):
            axes[r][col].set_axis_off()
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, frameon=False, loc="upper right", ncol=2)
    fig.suptitle(f"{title} ({label})", fontsize=9)
    subsets: dict[str, list[str]] = {}
    for key in grid:
        for ours_row, text in by[key].subsets.items():
            subsets.setdefault(ours_row, []).append(text)
    if subsets:  # the rows marked with a dagger, and on how many pairs ours were evaluated
        note = "\n".join(
            f"\u2020 ours, {o}, evaluated on a subset: {', '.join(t)}" for o, t in subsets.items()
        )
        fig.text(0.01, 0.0, note, fontsize=7, va="bottom")
        fig.tight_layout(rect=(0, 0.15 * len(subsets) / height, 1, 1))
    else:
        fig.tight_layout()
    save(fig, out)
