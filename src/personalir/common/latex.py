"""LaTeX tables rendered from the same data frames that are written as CSV."""

from __future__ import annotations

import re

import pandas as pd

#: For ``header_width``: a count table's long column labels stacked in lines about as wide
#: as its numbers (``Products with core terms`` in three short lines, not one wide column).
HEADER_WIDTH = 10
#: Opens a box that shrinks a table wider than the line to the line's width and leaves a
#: narrower one at its natural size (graphicx's ``\width`` is the box's natural width).
SHRINK_TO_LINE = r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%"
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


def stacked(text: object, width: int) -> str:
    """``text`` escaped and broken at spaces into lines of at most ``width`` characters (a
    longer word is a line of its own), stacked in one cell bottom-aligned with its row: a
    long column header in two or three short lines instead of one wide column."""
    lines: list[str] = []
    # Words, and a hyphenated word's parts ("Writing-", "error"; not a leading "-Lexical"),
    # each with what joins it to the next on one line.
    pieces = []
    for word in str(text).split():
        parts = re.split(r"(?<=\w-)(?=\w)", word)
        pieces += [(part, "" if i < len(parts) - 1 else " ") for i, part in enumerate(parts)]
    glue = ""
    for piece, after in pieces:
        if lines and len(lines[-1]) + len(glue) + len(piece) <= width:
            lines[-1] += glue + piece
        else:
            lines.append(piece)
        glue = after
    if len(lines) < 2:
        return escape(text)
    body = r" \\ ".join(escape(line) for line in lines)
    return rf"\begin{{tabular}}[b]{{@{{}}c@{{}}}}{body}\end{{tabular}}"


def breakable(text: object) -> str:
    """``text`` escaped, with a permitted line break after each underscore (an identifier
    such as ``claim_id_name`` in a narrow ``p`` column wraps instead of running over)."""
    return escape(text).replace(r"\_", r"\_\allowbreak{}")


def dataframe_to_latex(
    df: pd.DataFrame,
    *,
    caption: str,
    label: str,
    floatfmt: str = ".2f",
    bold: dict[tuple[int, str], bool] | None = None,
    midrule_before: list[int] | None = None,
    header_groups: list[tuple[str, int]] | None = None,
    header_rows: list[list[tuple[str, int]]] | None = None,
    column_labels: list[str] | None = None,
    fit_width: bool = False,
    column_sep: str | None = None,
    header_width: int | None = None,
    align: str | None = None,
    latex_columns: tuple[str, ...] = (),
) -> str:
    """A booktabs ``table`` environment. ``bold`` marks (row index, column) cells in bold;
    ``midrule_before`` lists row positions preceded by a rule (e.g. an average row).
    ``header_groups`` adds a first header row of ``(group title, number of columns)`` spans
    over the columns (they must add up to the column count), ``header_rows`` several such
    rows, top first (e.g. a test set over its measures over ours and the paper's);
    ``column_labels`` replaces the
    column names in the header (one per column), e.g. a measure's name under its group.
    ``fit_width`` shrinks the tabular to the text width when wider (needs ``graphicx``);
    ``column_sep``
    sets ``\\tabcolsep`` inside this table (e.g. ``"3pt"``: narrower gaps for wide tables);
    ``header_width`` stacks a column label longer than that many characters in short lines
    (:func:`stacked`); ``align`` replaces the column specification (default ``l`` then ``r``
    for every other column), e.g. ``p{..}`` columns that wrap text; the cells of
    ``latex_columns`` are LaTeX already (e.g. :func:`breakable`) and printed as they are."""
    bold = bold or {}
    midrule_before = set(midrule_before or [])
    ncols = len(df.columns)
    align = align or "l" + "r" * (ncols - 1)
    labels = list(df.columns) if column_labels is None else list(column_labels)
    if len(labels) != ncols:
        raise ValueError(f"column_labels has {len(labels)} labels for {ncols} columns")
    if header_groups and header_rows:
        raise ValueError("give header_groups (one row) or header_rows (several), not both")
    group_rows = []
    for groups in header_rows or ([header_groups] if header_groups else []):
        if sum(n for _, n in groups) != ncols:
            raise ValueError(f"header groups span {sum(n for _, n in groups)} of {ncols}")
        cells, rules, start = [], [], 1
        for title, n in groups:
            cells.append(
                escape(title) if n == 1 else rf"\multicolumn{{{n}}}{{c}}{{{escape(title)}}}"
            )
            if title and n > 1:
                rules.append(rf"\cmidrule(lr){{{start}-{start + n - 1}}}")
            start += n
        group_rows += [" & ".join(cells) + r" \\", *rules]
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        *([rf"\setlength{{\tabcolsep}}{{{column_sep}}}"] if column_sep else []),
        rf"\caption{{{caption}}}",
        rf"\label{{{label}}}",
        *([SHRINK_TO_LINE] if fit_width else []),
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        *group_rows,
        " & ".join(escape(c) if header_width is None else stacked(c, header_width) for c in labels)
        + r" \\",
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
            cell = str(value) if col in latex_columns else _fmt(value, floatfmt)
            if bold.get((pos, col)):
                cell = rf"\textbf{{{cell}}}"
            cells.append(cell)
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}" + ("}" if fit_width else ""), r"\end{table}", ""]
    return "\n".join(lines)


def table_parts(parts: list[str], label: str) -> str:
    """Several ``table`` floats (e.g. one per test set of a table too wide for the line)
    printed as one table in parts: each part is numbered as the manuscript numbers the
    table (``\\thetable`` where the parts begin) followed by a, b, ...; each keeps its own
    label, and ``label``, put in the first part, refers to the whole (the number alone).
    After the last part the table counter, ``\\thetable`` and hyperref's ``\\theHtable``
    are as after one table, so the next table's number follows on."""
    if not parts:
        raise ValueError("no parts to print")
    if len(parts) > 26:
        raise ValueError(f"{len(parts)} parts: at most 26 letters")
    lines = [
        "% One table in parts a, b, ...: each part's number is the table's and a letter.",
        r"\makeatletter",
        r"\let\partsthetable\thetable\let\partstheHtable\theHtable",
        r"\stepcounter{table}\edef\partsbase{\thetable}\edef\partscount{\the\value{table}}",
        r"\addtocounter{table}{\m@ne}",
        r"\def\partslabel#1{\protected@edef\@currentlabel{\partsbase}\label{#1}}",
        r"\makeatother",
    ]
    for i, part in enumerate(parts):
        letter = chr(ord("a") + i)
        # The part's number, and a link target of its own (hyperref names it by \theHtable).
        lines.append(rf"\def\thetable{{\partsbase {letter}}}\def\theHtable{{\partsbase {letter}}}")
        if i == 0:
            head, sep, tail = part.partition(r"\label{")
            if not sep:
                raise ValueError(r"the first part has no \label to put the whole's beside")
            close = tail.index("}") + 1
            part = head + sep + tail[:close] + rf"\partslabel{{{label}}}" + tail[close:]
        lines.append(part.rstrip("\n"))
    lines += [
        r"\setcounter{table}{\partscount}\let\thetable\partsthetable\let\theHtable\partstheHtable",
        "",
    ]
    return "\n".join(lines)
