"""Tables of the errors stage: CSV frames and their LaTeX, rendered from the same frames.

``sampling``    attribution of generated errors to their user, per domain and sampler plus the
                unweighted mean over domains;
``statistics``  what the GEC chain corrected per domain and how many users fall back;
``mechanisms``  the mechanism mix of character-level edits per domain.
"""

from __future__ import annotations

import pandas as pd

from personalir.common.domains import display_label
from personalir.common.latex import dataframe_to_latex
from personalir.errors.labels import MECHANISM_LABELS
from personalir.errors.mechanisms import MECHANISM_NAMES
from personalir.errors.profiles import ProfileSet
from personalir.errors.sampling import SAMPLERS, sampler_order

AVERAGE = "Average"


def sampling_frame(per_domain: list[pd.DataFrame]) -> pd.DataFrame:
    """Per-domain rows and, per sampler, the unweighted mean over domains (``Average``)."""
    df = pd.concat(per_domain, ignore_index=True)
    order = {s: i for i, s in enumerate(sampler_order())}
    df = df.sort_values(
        ["domain", "sampler"],
        key=lambda c: c.map(order) if c.name == "sampler" else c,
        kind="stable",
    )
    metrics = ["top1", "mrr", "single_query_top1"]
    avg = df.groupby("sampler", sort=False)[metrics].mean().reset_index()
    counts = (
        df.groupby("sampler", sort=False)[["users", "texts_scored", "texts_without_edit", "edits"]]
        .sum()
        .reset_index()
    )
    avg = avg.merge(counts, on="sampler")
    avg.insert(0, "domain", AVERAGE)
    avg = avg.sort_values("sampler", key=lambda c: c.map(order), kind="stable")
    return pd.concat([df, avg], ignore_index=True)


def sampling_latex(df: pd.DataFrame, *, label: str, info: dict) -> str:
    rows, bold, rules = [], {}, []
    with_intervals = "top1_ci_low" in df.columns
    for domain, block in df.groupby("domain", sort=False):
        if rows:
            rules.append(len(rows))
        best = {m: block[m].max() for m in ("top1", "mrr", "single_query_top1")}
        for _, r in block.iterrows():
            pos = len(rows)
            rows.append(
                {
                    "Domain": display_label(domain),
                    "Sampler": SAMPLERS.attribute(r["sampler"], "label", r["sampler"]),
                    "Top-1 (%)": f"{100 * r['top1']:.2f}",
                    "MRR": f"{r['mrr']:.4f}",
                    "1-query Top-1 (%)": f"{100 * r['single_query_top1']:.2f}",
                    **_interval_cells(r, with_intervals),
                }
            )
            for m, col in (
                ("top1", "Top-1 (%)"),
                ("mrr", "MRR"),
                ("single_query_top1", "1-query Top-1 (%)"),
            ):
                if r[m] == best[m]:
                    bold[(pos, col)] = True
    table = pd.DataFrame(rows)
    caption = (
        "Attributing generated errors to their user (configuration: "
        f"\\texttt{{{label}}}). Each sampler writes {info['texts_per_user']} error queries per "
        f"user ({info['n_edits']} edit each); the true user is ranked among "
        f"{info['candidates_per_user']} candidates by likelihood under profiles from "
        f"{'held-out' if info['attribution'] == 'held_out' else 'the same'} sentences. "
        f"Chance: Top-1 {100 * info['chance_top1']:.1f}\\%, MRR {info['chance_mrr']:.3f}. "
        "Paper (personalised): Top-1 9.35\\%, MRR 0.2428."
        + (" Brackets: 95\\% bootstrap intervals over users." if with_intervals else "")
    )
    return dataframe_to_latex(
        table,
        caption=caption,
        label="tab:error-sampling",
        floatfmt=".2f",
        bold=bold,
        midrule_before=rules,
        fit_width=with_intervals,  # two interval columns do not fit the text width
    )


def _interval_cells(row: pd.Series, with_intervals: bool) -> dict[str, str]:
    """Top-1 and MRR intervals as cells (``--`` where a row has none, e.g. the average)."""
    if not with_intervals:
        return {}
    cells = {}
    for key, col, scale, fmt in (
        ("top1", "Top-1 95% CI", 100, ".2f"),
        ("mrr", "MRR 95% CI", 1, ".4f"),
    ):
        low, high = row.get(f"{key}_ci_low"), row.get(f"{key}_ci_high")
        ok = low is not None and high is not None and low == low and high == high
        cells[col] = f"[{scale * low:{fmt}}, {scale * high:{fmt}}]" if ok else "--"
    return cells


def _rate_ci(report: dict, name: str, column: str) -> dict:
    """``<column>_ci_low``/``_ci_high`` from an edit report's interval (None when absent)."""
    low, high = report.get(f"{name}_per_1000_words_ci") or (None, None)
    return {f"{column}_ci_low": low, f"{column}_ci_high": high}


def statistics_frame(reports: dict[str, dict], profiles: dict[str, ProfileSet]) -> pd.DataFrame:
    rows = []
    for domain, rep in reports.items():
        summ = profiles[domain].summary()
        rows.append(
            {
                "domain": domain,
                "sentences": rep["sentences"],
                "sentences_corrected": rep["sentences_corrected"],
                "words": rep["words"],
                "edits": rep["edits"],
                "edits_per_1000_words": rep["edits_per_1000_words"],
                "char_level_edits": rep["char_level_edits"],
                "char_level_per_1000_words": rep["char_level_edits_per_1000_words"],
                **_rate_ci(rep, "edits", "edits_per_1000_words"),
                **_rate_ci(rep, "char_level_edits", "char_level_per_1000_words"),
                "users": summ["users"],
                "users_fallback": summ["users_fallback_global"],
                **{f"share_{m}": rep["mechanism_shares"][m] for m in MECHANISM_NAMES},
            }
        )
    return pd.DataFrame(rows)


def statistics_latex(df: pd.DataFrame, *, label: str, backends: list[str]) -> str:
    table = pd.DataFrame(
        {
            "Domain": df["domain"].map(display_label),
            "Sentences": df["sentences"].astype(int),
            "Corrected": df["sentences_corrected"].astype(int),
            "Edits / 1k words": df["edits_per_1000_words"].astype(float),
            "Char.-level / 1k words": df["char_level_per_1000_words"].astype(float),
            "Users": df["users"].astype(int),
            "No-error users": df["users_fallback"].astype(int),
        }
    )
    caption = (
        "Grammatical error correction of the users' sentences (configuration: "
        f"\\texttt{{{label}}}; backends: {', '.join(backends)}). No-error users have no "
        "character-level edit and get the documented fallback profile (the domain's)."
    )
    return dataframe_to_latex(table, caption=caption, label="tab:error-statistics", floatfmt=".2f")


def mechanisms_latex(df: pd.DataFrame, *, label: str) -> str:
    table = pd.DataFrame({"Domain": df["domain"].map(display_label)})
    for m in MECHANISM_NAMES:
        table[MECHANISM_LABELS[m]] = 100 * df[f"share_{m}"].astype(float)
    caption = (
        "Mechanism mix of character-level edits, in percent of them (configuration: "
        f"\\texttt{{{label}}})."
    )
    return dataframe_to_latex(table, caption=caption, label="tab:error-mechanisms", floatfmt=".1f")
