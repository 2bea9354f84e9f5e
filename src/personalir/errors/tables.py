"""Tables of the errors stage: CSV frames and their LaTeX, rendered from the same frames.

``sampling``    attribution of generated errors to their user, per domain and sampler plus the
                unweighted mean over domains, with user-level bootstrap intervals
                (``<metric>_ci_low``, ``<metric>_ci_high``; LaTeX: value [low, high]);
``statistics``  what the GEC chain corrected per domain and how many users fall back;
``mechanisms``  the mechanism mix of character-level edits per domain.
"""

from __future__ import annotations

import pandas as pd

from personalir.common.domains import display_label
from personalir.common.latex import HEADER_WIDTH, dataframe_to_latex
from personalir.errors.labels import MECHANISM_LABELS
from personalir.errors.mechanisms import MECHANISM_NAMES
from personalir.errors.profiles import ProfileSet
from personalir.errors.sampling import SAMPLERS, USER_METRICS, sampler_order

AVERAGE = "Average"
# Table cells: metric -> (column header, scale, decimals).
SAMPLING_COLUMNS = {
    "top1": ("Top-1 (%)", 100.0, 2),
    "mrr": ("MRR", 1.0, 4),
    "single_query_top1": ("1-query Top-1 (%)", 100.0, 2),
}


def sampling_frame(
    per_domain: list[pd.DataFrame], intervals: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per-domain rows and, per sampler, the unweighted mean over domains (``Average``).

    ``intervals`` (:func:`personalir.errors.sampling.user_intervals`) adds each metric's
    ``_ci_low`` and ``_ci_high`` columns after it; its values must reproduce the table's (the
    per-user outcomes and the per-domain rows come from the same evaluation)."""
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
    frame = pd.concat([df, avg], ignore_index=True)
    return frame if intervals is None else _with_intervals(frame, intervals)


def _with_intervals(frame: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    bounds = [f"{m}_ci_{side}" for m in USER_METRICS for side in ("low", "high")]
    merged = frame.merge(
        intervals[["domain", "sampler", *USER_METRICS, *bounds]],
        on=["domain", "sampler"],
        how="left",
        suffixes=("", "_users"),
        validate="one_to_one",
    )
    missing = merged[merged[f"{next(iter(USER_METRICS))}_ci_low"].isna()]
    if len(missing):
        raise ValueError(
            "no per-user outcomes for " + ", ".join(missing["domain"] + "/" + missing["sampler"])
        )
    for m in USER_METRICS:
        off = (merged[m] - merged[f"{m}_users"]).abs() > 1e-6
        if off.any():
            bad = merged[off].iloc[0]
            raise ValueError(
                f"per-user outcomes give {m} = {bad[f'{m}_users']:.6f} for "
                f"{bad['domain']}/{bad['sampler']}, the table {bad[m]:.6f}: not the same run"
            )
    columns = []
    for c in frame.columns:
        columns.append(c)
        if c in USER_METRICS:
            columns += [f"{c}_ci_low", f"{c}_ci_high"]
    return merged[columns]


def _cell(r: pd.Series, metric: str) -> str:
    _, scale, digits = SAMPLING_COLUMNS[metric]
    cell = f"{scale * r[metric]:.{digits}f}"
    low, high = r.get(f"{metric}_ci_low"), r.get(f"{metric}_ci_high")
    if low is not None and pd.notna(low):
        cell += f" [{scale * low:.{digits}f}, {scale * high:.{digits}f}]"
    return cell


def sampling_latex(df: pd.DataFrame, *, label: str, info: dict) -> str:
    """The sampling table; with interval columns each cell reads ``value [low, high]``."""
    rows, bold, rules = [], {}, []
    for domain, block in df.groupby("domain", sort=False):
        if rows:
            rules.append(len(rows))
        best = {m: block[m].max() for m in SAMPLING_COLUMNS}
        for _, r in block.iterrows():
            pos = len(rows)
            rows.append(
                {
                    "Domain": display_label(domain),
                    "Sampler": SAMPLERS.attribute(r["sampler"], "label", r["sampler"]),
                }
                | {col: _cell(r, m) for m, (col, _, _) in SAMPLING_COLUMNS.items()}
            )
            for m, (col, _, _) in SAMPLING_COLUMNS.items():
                if r[m] == best[m]:
                    bold[(pos, col)] = True
    table = pd.DataFrame(rows)
    with_ci = f"{next(iter(SAMPLING_COLUMNS))}_ci_low" in df.columns
    caption = (
        "Attributing generated errors to their user (configuration: "
        f"\\texttt{{{label}}}). Each sampler writes {info['texts_per_user']} error queries per "
        f"user ({info['n_edits']} edit each); the true user is ranked among "
        f"{info['candidates_per_user']} candidates by likelihood under profiles from "
        f"{'held-out' if info['attribution'] == 'held_out' else 'the same'} sentences. "
        f"Chance: Top-1 {100 * info['chance_top1']:.1f}\\%, MRR {info['chance_mrr']:.3f}."
    )
    if with_ci:
        caption += (
            f" Brackets: {100 * info['bootstrap']['confidence']:.0f}\\% percentile-bootstrap "
            f"intervals over users ({info['bootstrap']['samples']} resamples)."
        )
    return dataframe_to_latex(
        table,
        caption=caption,
        label="tab:error-sampling",
        floatfmt=".2f",
        bold=bold,
        midrule_before=rules,
        fit_width=with_ci,
    )


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
    return dataframe_to_latex(
        table,
        caption=caption,
        label="tab:error-statistics",
        floatfmt=".2f",
        header_width=HEADER_WIDTH,
    )


def mechanisms_latex(df: pd.DataFrame, *, label: str) -> str:
    table = pd.DataFrame({"Domain": df["domain"].map(display_label)})
    for m in MECHANISM_NAMES:
        table[MECHANISM_LABELS[m]] = 100 * df[f"share_{m}"].astype(float)
    caption = (
        "Mechanism mix of character-level edits, in percent of them (configuration: "
        f"\\texttt{{{label}}})."
    )
    return dataframe_to_latex(table, caption=caption, label="tab:error-mechanisms", floatfmt=".1f")
