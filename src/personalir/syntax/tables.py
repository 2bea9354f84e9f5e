"""Rule step syntax_table: the cross-domain attribution table and the rule statistics.

Both tables are written as CSV and rendered to LaTeX from the same data frames, so the paper
prints exactly the numbers the CSV holds; each caption names the configuration that produced
it. The attribution table adds the equal-weight average over domains.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from personalir.common.artifacts import StageInputError
from personalir.common.domains import short_label
from personalir.common.io import atomic_path, read_json, write_text
from personalir.common.latex import dataframe_to_latex, escape
from personalir.syntax.protocols import MEASURES


def attribution_table(summaries: list[pd.DataFrame], domains: list[str]) -> pd.DataFrame:
    """Long table of every domain plus the equal-weight average over domains."""
    df = pd.concat(summaries, ignore_index=True)
    missing = sorted(set(domains) - set(df["domain"]))
    if missing:
        raise StageInputError(f"attribution results missing for domains {missing}")
    order = list(dict.fromkeys(df["model"]))
    avg = df.groupby("model", sort=False)[list(MEASURES)].mean().reindex(order).reset_index()
    avg.insert(0, "domain", "Average")
    avg["label"] = df.drop_duplicates("model").set_index("model").loc[order, "label"].to_numpy()
    avg["users"] = df.groupby("model", sort=False)["users"].sum().reindex(order).to_numpy()
    return pd.concat([df, avg], ignore_index=True)


#: The attribution measures: (column, title of its rows, number format, scale).
ATTRIBUTION_ROWS = (
    ("balanced", r"Balanced attribution (\%, chance 50)", "{:.2f}", 100),
    ("auroc", "User AUROC", "{:.4f}", 1),
    ("full_profile", r"Full-profile attribution (\%, chance 50)", "{:.2f}", 100),
)


def attribution_latex(table: pd.DataFrame, *, config_label: str, domains: list[str]) -> str:
    """Table: per measure a group of rows, one per model; a column per domain and the
    average (narrow: the domains, not the domains times the measures, set the width)."""
    cols = [*domains, "Average"]
    models = list(dict.fromkeys(table["model"]))
    labels = table.drop_duplicates("model").set_index("model")["label"]
    best = {}
    for d in cols:
        sub = table[table["domain"] == d].set_index("model")
        for m, *_ in ATTRIBUTION_ROWS:
            best[(d, m)] = sub[m].max()
    head = " & ".join(escape(short_label(d)) for d in cols)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\caption{{User attribution from syntactic profiles: balanced attribution (\%, chance "
        rf"50), user AUROC and full-profile attribution (\%, chance 50) on held-out sentences, "
        rf"competitors drawn from reviewers of the same products; per domain and their "
        rf"average, best bold. Configuration: \texttt{{{escape(config_label)}}}.}}",
        r"\label{tab:syntax-attribution}",
        rf"\begin{{tabular}}{{l{'r' * len(cols)}}}",
        r"\toprule",
        rf"Profile & {head} \\",
    ]
    for m, title, fmt, scale in ATTRIBUTION_ROWS:
        lines += [r"\midrule", rf"\multicolumn{{{1 + len(cols)}}}{{l}}{{\emph{{{title}}}}} \\"]
        for model in models:
            cells = [escape(labels[model])]
            for d in cols:
                row = table[(table["domain"] == d) & (table["model"] == model)].iloc[0]
                cell = fmt.format(row[m] * scale)
                if np.isclose(row[m], best[(d, m)]):
                    cell = rf"\textbf{{{cell}}}"
                cells.append(cell)
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


def stats_latex(stats: pd.DataFrame, *, config_label: str) -> str:
    return dataframe_to_latex(
        stats,
        caption=(
            "Syntactic rules per domain: sentences parsed and set aside, users "
            "modelled and the rule vocabulary. Configuration: " + config_label + "."
        ),
        label="tab:syntax-stats",
        floatfmt=".0f",
    )


def run_table(
    domains: list[str],
    summaries: list,
    parse_reports: list,
    feature_reports: list,
    out: dict,
    config_label: str,
) -> pd.DataFrame:
    table = attribution_table([pd.read_csv(p) for p in summaries], domains)
    with atomic_path(out["csv"], suffix=".csv") as tmp:
        table.to_csv(tmp, index=False, float_format="%.6f")
    tex = attribution_latex(table, config_label=config_label, domains=domains)
    for key in ("tex", "paper_tex"):
        write_text(out[key], tex)
    stats = []
    for d, pr, fr in zip(domains, parse_reports, feature_reports, strict=True):
        p, f = read_json(pr), read_json(fr)
        stats.append(
            {
                "Domain": d,
                "Sentences": p["sentences"],
                "Parsed": p["status"]["ok"],
                "Set aside": p["sentences"] - p["status"]["ok"],
                "Users": f["users_out"],
                "Users set aside": f["users_in"] - f["users_out"],
                "Rules": f["vocabulary_size"],
            }
        )
    stats_df = pd.DataFrame(stats)
    with atomic_path(out["stats_csv"], suffix=".csv") as tmp:
        stats_df.to_csv(tmp, index=False)
    stats_tex = stats_latex(stats_df, config_label=config_label)
    for key in ("stats_tex", "paper_stats_tex"):
        write_text(out[key], stats_tex)
    return table
