"""LaTeX tables rendered from the same data frames that are written as CSV."""

from __future__ import annotations

import pandas as pd

_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def escape(text: object) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in str(text))


def _fmt(value: object, floatfmt: str) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}".replace(",", "{,}")
    if isinstance(value, float):
        if value != value:  # NaN
            return "--"
        return format(value, floatfmt)
    if value is None:
        return "--"
    return escape(value)


def dataframe_to_latex(
    df: pd.DataFrame,
    *,
    caption: str,
    label: str,
    floatfmt: str = ".2f",
    bold: dict[tuple[int, str], bool] | None = None,
    midrule_before: list[int] | None = None,
    header_groups: list[tuple[str, int]] | None = None,
    column_labels: list[str] | None = None,
    fit_width: bool = False,
    column_sep: str | None = None,
) -> str:
    """A booktabs ``table`` environment. ``bold`` marks (row index, column) cells in bold;
    ``midrule_before`` lists row positions preceded by a rule (e.g. an average row).
    ``header_groups`` adds a first header row of ``(group title, number of columns)`` spans
    over the columns (they must add up to the column count); ``column_labels`` replaces the
    column names in the header (one per column), e.g. a measure's name under its group.
    ``fit_width`` scales the tabular to the text width (needs ``graphicx``); ``column_sep``
    sets ``\\tabcolsep`` inside this table (e.g. ``"3pt"``: narrower gaps for wide tables)."""
    bold = bold or {}
    midrule_before = set(midrule_before or [])
    ncols = len(df.columns)
    align = "l" + "r" * (ncols - 1)
    labels = list(df.columns) if column_labels is None else list(column_labels)
    if len(labels) != ncols:
        raise ValueError(f"column_labels has {len(labels)} labels for {ncols} columns")
    group_rows = []
    if header_groups:
        if sum(n for _, n in header_groups) != ncols:
            raise ValueError(f"header_groups span {sum(n for _, n in header_groups)} of {ncols}")
        cells, rules, start = [], [], 1
        for title, n in header_groups:
            cells.append(
                escape(title) if n == 1 else rf"\multicolumn{{{n}}}{{c}}{{{escape(title)}}}"
            )
            if title and n > 1:
                rules.append(rf"\cmidrule(lr){{{start}-{start + n - 1}}}")
            start += n
        group_rows = [" & ".join(cells) + r" \\", *rules]
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        *([rf"\setlength{{\tabcolsep}}{{{column_sep}}}"] if column_sep else []),
        rf"\caption{{{caption}}}",
        rf"\label{{{label}}}",
        *([r"\resizebox{\linewidth}{!}{%"] if fit_width else []),
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        *group_rows,
        " & ".join(escape(c) for c in labels) + r" \\",
        r"\midrule",
    ]
    for pos, (_, row) in enumerate(df.iterrows()):
        if pos in midrule_before:
            lines.append(r"\midrule")
        cells = []
        for col in df.columns:
            value = row[col]
            if hasattr(value, "item"):
                value = value.item()
            cell = _fmt(value, floatfmt)
            if bold.get((pos, col)):
                cell = rf"\textbf{{{cell}}}"
            cells.append(cell)
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}" + ("}" if fit_width else ""), r"\end{table}", ""]
    return "\n".join(lines)
