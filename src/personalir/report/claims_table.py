"""LaTeX of the PQB paper's claims as evaluated by :mod:`personalir.report.claims`.

Reads the ``report_claims`` rule's CSV and prints, per PQB claim, the paper's statement, the
verdict, the measured quantity with its stand-in systems, and the margin with its CI;
computes nothing. The TTP claims have their own table (``ttp_claims``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from personalir.common.io import write_text
from personalir.common.latex import breakable, escape, table_parts
from personalir.report.claims_output import margin_text

COLUMNS = ["Claim", "Paper's statement", "Status", "Measured", "Margin [CI]"]
#: The columns that wrap (``p``): Claim, Paper's statement, Measured.
WRAPPED = (0, 1, 3)


def claims_frame(claims: pd.DataFrame, paper: str = "PQB") -> pd.DataFrame:
    """The table's rows: the claims of ``paper`` in the CSV's order."""
    rows = claims[claims["paper"] == paper]
    return pd.DataFrame(
        {
            "Claim": rows["id"].to_numpy(),
            "Paper's statement": rows["text"].fillna("").to_numpy(),
            "Status": rows["status"].to_numpy(),
            "Measured": rows["measured"].fillna("").to_numpy(),
            "Margin [CI]": [margin_text(r) for r in rows.to_dict("records")],
        },
        columns=COLUMNS,
    )


#: Claims in one part of the table: at the table's size a part of more runs past the page
#: (a claim's measured quantity takes several lines).
PART_ROWS = 10


def claim_parts(claims: pd.DataFrame, paper: str = "PQB") -> list[pd.DataFrame]:
    """The claims of ``paper`` in parts of at most :data:`PART_ROWS`, cut only between runs of
    claims on the same table (``table``'s first name: ``flip_rrstd+effectiveness`` goes with
    ``flip_rrstd``) unless a run alone is longer."""
    rows = claims[claims["paper"] == paper]
    tables = rows["table"] if "table" in rows.columns else pd.Series("", index=rows.index)
    keys = [str(t).split("+")[0] if isinstance(t, str) else "" for t in tables]
    runs: list[list[int]] = []
    for pos, key in enumerate(keys):
        if runs and keys[pos - 1] == key:
            runs[-1].append(pos)
        else:
            runs.append([pos])
    parts: list[list[int]] = []
    for run in runs:
        if parts and len(parts[-1]) + len(run) <= PART_ROWS:
            parts[-1] += run
        else:
            parts += [run[i : i + PART_ROWS] for i in range(0, len(run), PART_ROWS)]
    return [rows.iloc[part] for part in parts] or [rows]


def _part_latex(frame: pd.DataFrame, caption: str, label: str) -> str:
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\footnotesize",
        r"\setlength{\tabcolsep}{4pt}",
        rf"\caption{{{caption}}}",
        rf"\label{{{label}}}",
        r"\begin{tabular}{@{}p{0.18\linewidth}p{0.2\linewidth}lp{0.25\linewidth}r@{}}",
        r"\toprule",
        " & ".join(escape(c) for c in COLUMNS) + r" \\",
        r"\midrule",
    ]
    for row in frame.itertuples(index=False):
        # A claim's id and the names in what was measured break at their underscores; the
        # wrapped columns are set ragged right (the row ends in an r column, so \\ is safe).
        cells = [breakable(str(v)) for v in row]
        for i in WRAPPED:
            cells[i] = r"\raggedright " + cells[i]
        lines.append(" & ".join(cells) + r" \\")
    if frame.empty:
        lines.append(r"\multicolumn{5}{c}{no PQB claim evaluated} \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


def claims_latex(claims: pd.DataFrame, *, config_label: str) -> str:
    """A table with wrapped text columns (a claim's measured quantity is a sentence); in
    parts a, b, ... (:func:`claim_parts`) when one float would run past the page."""
    frame = claims_frame(claims)
    counts = frame["Status"].value_counts()
    tally = ", ".join(f"{counts.get(s, 0)} {s}" for s in ("held", "not held", "not applicable"))
    synthetic = (
        " The sample world is synthetic: the verdicts exercise the checks and say nothing"
        " about the paper's systems."
        if "sample" in config_label.lower()
        else ""
    )
    caption = (
        f"The PQB paper's claims checked on the {escape(config_label)} configuration ({tally})."
        " Measured: the deciding quantity, naming our system that stands in for the paper's"
        " (``X for Y''). Margin in points (validation: the table's unit), positive when the"
        " claim holds; bracketed, a conservative interval from the systems' bootstrap bounds."
        r" A system marked $^\dagger$ in Table~\ref{tab:retrieval-flip-rrstd} or"
        r" \ref{tab:retrieval-degradation} was evaluated on a subset of the pairs (those"
        " tables say on how many); a claim naming it rests on that subset." + synthetic
    )
    parts = [claims_frame(part) for part in claim_parts(claims)]
    if len(parts) == 1:
        return _part_latex(frame, caption, "tab:pqb-claims")
    label = "tab:pqb-claims"
    return table_parts(
        [
            _part_latex(
                part,
                caption if i == 0 else rf"Table~\ref{{{label}}} continued.",
                f"{label}-{chr(ord('a') + i)}",
            )
            for i, part in enumerate(parts)
        ],
        label,
    )


def make_claims_table(*, claims_csv: str | Path, config_label: str, tex_out: str | Path) -> str:
    claims = pd.read_csv(claims_csv, keep_default_na=True)
    text = claims_latex(claims, config_label=config_label)
    write_text(tex_out, text)
    return text
