"""LaTeX of the PQB paper's claims as evaluated by :mod:`personalir.report.claims`.

Reads the ``report_claims`` rule's CSV and prints, per PQB claim, the paper's statement, the
verdict, the measured quantity with its stand-in systems, and the margin with its CI;
computes nothing. The TTP claims have their own table (``ttp_claims``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from personalir.common.io import write_text
from personalir.common.latex import escape
from personalir.report.claims_output import margin_text

COLUMNS = ["Claim", "Paper's statement", "Status", "Measured", "Margin [CI]"]


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


def claims_latex(claims: pd.DataFrame, *, config_label: str) -> str:
    """A table with wrapped text columns (a claim's measured quantity is a sentence)."""
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
        + synthetic
    )
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\scriptsize",
        rf"\caption{{{caption}}}",
        r"\label{tab:pqb-claims}",
        r"\begin{tabular}{@{}p{0.2\linewidth}p{0.22\linewidth}lp{0.3\linewidth}r@{}}",
        r"\toprule",
        " & ".join(escape(c) for c in COLUMNS) + r" \\",
        r"\midrule",
    ]
    for row in frame.itertuples(index=False):
        lines.append(" & ".join(escape(str(v)) for v in row) + r" \\")
    if frame.empty:
        lines.append(r"\multicolumn{5}{c}{no PQB claim evaluated} \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


def make_claims_table(*, claims_csv: str | Path, config_label: str, tex_out: str | Path) -> str:
    claims = pd.read_csv(claims_csv, keep_default_na=True)
    text = claims_latex(claims, config_label=config_label)
    write_text(tex_out, text)
    return text
