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
) -> str:
    """A booktabs ``table`` environment. ``bold`` marks (row index, column) cells in bold;
    ``midrule_before`` lists row positions preceded by a rule (e.g. an average row)."""
    bold = bold or {}
    midrule_before = set(midrule_before or [])
    align = "l" + "r" * (len(df.columns) - 1)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\caption{{{caption}}}",
        rf"\label{{{label}}}",
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(escape(c) for c in df.columns) + r" \\",
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
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)
