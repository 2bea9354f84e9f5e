"""CSV, LaTeX and the figure of the TTP ablations (Tables 6 and 7, Figure 5) and their claims.

Reads what :func:`personalir.ttp.evaluation.ablations.run_ablations` wrote (parquet tables and
``claims.json``); computes nothing. Ours are printed x100 at one decimal, the paper's as
printed (two decimals) beside them. PDFs carry no creation date, so they are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from personalir.common.io import atomic_open, read_json, read_parquet, write_text
from personalir.common.latex import breakable, dataframe_to_latex, escape
from personalir.common.plotting import palette, pyplot
from personalir.ttp.evaluation.ablations import COLUMNS, FIGURE5, LABELS, SETS, TABLES
from personalir.ttp.paper.figures import save_figure

TITLES = {
    "table6": ("Core-component ablation (Table 6 layout)", "tab:ttp-table6"),
    "table7": ("RL-component ablation (Table 7 layout)", "tab:ttp-table7"),
}
Y_LABEL = "Recall@20 gain over the Qwen-Embedding stand-in (points)"


def _num(value: object) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return float("nan")
    return out


def _cell(value: object, scale: float, digits: int) -> str:
    v = _num(value)
    return "--" if math.isnan(v) else f"{scale * v:.{digits}f}"


def _diff_cell(row: Mapping) -> str:
    d, lo, hi = (_num(row[c]) for c in ("diff_vs_sft", "diff_ci_low", "diff_ci_high"))
    if math.isnan(d):
        return "--"
    return f"{100 * d:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def _first(frame: pd.DataFrame, column: str, default: float) -> float:
    return float(frame[column].iloc[0]) if column in frame and len(frame) else default


def _caption_notes(config_label: str, frame: pd.DataFrame, table: str) -> str:
    confidence = _first(frame, "confidence", float("nan"))
    samples = _first(frame, "bootstrap_samples", float("nan"))
    conf = "" if math.isnan(confidence) else f"{100 * confidence:g}\\% "
    resamples = "" if math.isnan(samples) else f", {int(samples):,} resamples"
    notes = []
    if "sample" in config_label.lower():
        notes.append(
            "The sample world is synthetic, so our values are not comparable in size "
            "to the paper's."
        )
    if table == "table6":
        if "llm_embedding" in set(frame["method"]):
            notes.append(
                "Our LLM embedding (the TTP backbone, no history, no generation) is the "
                "paper's Qwen-Embedding row."
            )
        else:
            notes.append(
                "Our query-only dense baseline stands in for the paper's Qwen-Embedding row."
            )
    notes.append(
        f"The last column is each row's Avg difference to TTP (SFT) in points with its {conf}"
        f"paired-bootstrap CI (queries resampled within each test set{resamples})."
    )
    have = set(frame["method"])
    missing = [
        LABELS.get(m, m)
        for m in TABLES[table]
        if m not in have
        and not (m == "dense" and "llm_embedding" in have)
        and not (m == "llm_embedding" and "dense" in have)
    ]
    if missing:
        notes.append("Not in this run: " + escape("; ".join(missing)) + ".")
    return " ".join(notes)


def ablation_latex(frame: pd.DataFrame, table: str, *, config_label: str) -> str:
    """The LaTeX of Table 6 or 7: per column ours (x100) and the paper's; best ours bold."""
    title, label = TITLES[table]
    shown = pd.DataFrame({"Method": list(frame["label"])})
    groups: list[tuple[str, int]] = [("", 1)]
    labels = ["Method"]
    bold = {}
    for col in COLUMNS:
        shown[col] = [_cell(v, 100, 1) for v in frame[col]]
        shown[f"{col} paper"] = [_cell(v, 1, 2) for v in frame[f"{col} paper"]]
        groups.append((col, 2))
        labels += ["ours", "paper"]
        values = pd.to_numeric(frame[col], errors="coerce").reset_index(drop=True)
        if values.notna().any():
            bold[(int(values.idxmax()), col)] = True
    shown["diff"] = [
        "reference" if row["method"] == "ttp" else _diff_cell(row) for _, row in frame.iterrows()
    ]
    groups.append(("Avg - TTP (SFT)", 1))
    labels.append("points [CI]")
    caption = (
        f"{title}: Recall@20 (\\%) on the {escape(config_label)} configuration, ours "
        "(mean over test queries, pooled over domains) beside the paper's. Avg is the "
        "unweighted mean of the three test sets. " + _caption_notes(config_label, frame, table)
    )
    return dataframe_to_latex(
        shown,
        caption=caption,
        label=label,
        bold=bold,
        header_groups=groups,
        column_labels=labels,
        fit_width=True,
    )


def _margin_text(claim: Mapping) -> str:
    m, lo, hi = (_num(claim.get(k)) for k in ("margin", "ci_low", "ci_high"))
    if math.isnan(m):
        return "--"
    return f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def claims_markdown(claims: Sequence[Mapping], *, config_label: str) -> str:
    def md(text: object) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = [
        f"# TTP paper claims ({md(config_label)})",
        "",
        "Margins in points (x100; Recall@20 unless the claim names other measures); a "
        "positive margin means the claim holds. Bracketed: the bootstrap CI.",
        "",
        "| id | status | measured | margin [CI] | paper text |",
        "|---|---|---|---|---|",
    ]
    for c in claims:
        lines.append(
            f"| `{md(c['id'])}` | {md(c['status'])} | {md(c.get('measured', ''))} | "
            f"{_margin_text(c)} | {md(c.get('text', ''))} |"
        )
    if not claims:
        lines.append("| -- | -- | -- | -- | -- |")
    return "\n".join(lines) + "\n"


def claims_latex(claims: Sequence[Mapping], *, config_label: str) -> str:
    frame = pd.DataFrame(
        {
            "Claim": [breakable(c["id"]) for c in claims],
            "Table": [c.get("table", "") for c in claims],
            "Paper's statement": [c.get("text", "") for c in claims],
            "Status": [c["status"] for c in claims],
            "Margin [CI]": [_margin_text(c) for c in claims],
        },
        columns=["Claim", "Table", "Paper's statement", "Status", "Margin [CI]"],
    )
    synthetic = " The sample world is synthetic." if "sample" in config_label.lower() else ""
    caption = (
        "The TTP paper's claims (Table 4, the ablations) checked on the "
        f"{escape(config_label)} configuration. Margin: the measured quantity in points "
        "(Recall@20 unless the claim names other measures), positive when the claim holds, "
        "with its bootstrap CI; not applicable: a method it needs was not run." + synthetic
    )
    # Text columns wrap (a statement is a sentence), so the table fits the line unscaled.
    return dataframe_to_latex(
        frame,
        caption=caption,
        label="tab:ttp-claims",
        align=r"@{}p{0.2\linewidth}lp{0.36\linewidth}lr@{}",
        latex_columns=("Claim",),
    )


def figure5_plot(frame: pd.DataFrame, *, out: str | Path, title: str) -> None:
    """Grouped bars per test set: our gains with CI error bars, the paper's as hollow
    diamonds."""

    plt = pyplot()
    colours = palette(10)
    methods = list(FIGURE5)
    width = 0.8 / len(methods)
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    drawn = False
    for i, method in enumerate(methods):
        sub = frame[frame["method"] == method].set_index("test_set").reindex(list(SETS))
        if sub["gain"].isna().all():
            continue
        drawn = True
        x = [j - 0.4 + width * (i + 0.5) for j in range(len(SETS))]
        gain = sub["gain"].to_numpy(dtype=float)
        err = [
            (gain - sub["ci_low"].to_numpy(dtype=float)).clip(min=0),
            (sub["ci_high"].to_numpy(dtype=float) - gain).clip(min=0),
        ]
        colour = colours[i % len(colours)]
        ax.bar(
            x,
            gain,
            width * 0.92,
            yerr=err,
            color=colour,
            label=LABELS.get(method, method),
            error_kw={"elinewidth": 0.8, "capsize": 2},
        )
        ax.scatter(
            x,
            sub["paper_gain"].to_numpy(dtype=float),
            marker="D",
            s=22,
            facecolors="none",
            edgecolors="black",
            linewidths=0.9,
            zorder=3,
        )
    if drawn:
        handles, names = ax.get_legend_handles_labels()
        paper = ax.scatter([], [], marker="D", s=22, facecolors="none", edgecolors="black")
        ax.legend(
            [*handles, paper],
            [*names, "paper (hollow diamonds)"],
            frameon=False,
            fontsize=7,
            ncol=3,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.2),
        )
    else:
        ax.text(0.5, 0.5, "no Figure 5 methods in this run", ha="center", transform=ax.transAxes)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(range(len(SETS)), list(SETS))
    ax.set_xlabel("test set")
    ax.set_ylabel(Y_LABEL, fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    save_figure(fig, out, bbox_inches="tight")


def make_ablation_outputs(
    *,
    ablation_dir: str | Path,
    claims_path: str | Path,
    config_label: str,
    tex_dir: str | Path,
    csv_dir: str | Path,
    figure_out: str | Path,
) -> dict[str, Path]:
    """CSV and LaTeX of Tables 6 and 7, Figure 5's CSV and PDF, and the claims as markdown
    and LaTeX; returns the written paths by name."""
    ablation_dir, tex_dir, csv_dir = Path(ablation_dir), Path(tex_dir), Path(csv_dir)
    written: dict[str, Path] = {}
    for table in TABLES:
        frame = read_parquet(ablation_dir / f"{table}.parquet")
        csv = csv_dir / f"{table}.csv"
        with atomic_open(csv) as fh:
            frame.to_csv(fh, index=False, float_format="%.4f")
        tex = tex_dir / f"ttp_{table}.tex"
        write_text(tex, ablation_latex(frame, table, config_label=config_label))
        written[f"{table}_csv"], written[f"{table}_tex"] = csv, tex
    fig = read_parquet(ablation_dir / "figure5.parquet")
    with atomic_open(csv_dir / "figure5.csv") as fh:
        fig.to_csv(fh, index=False, float_format="%.4f")
    written["figure5_csv"] = csv_dir / "figure5.csv"
    figure5_plot(fig, out=figure_out, title=f"Figure 5 layout ({config_label})")
    written["figure5"] = Path(figure_out)
    claims = read_json(claims_path)
    write_text(csv_dir / "claims.md", claims_markdown(claims, config_label=config_label))
    write_text(tex_dir / "ttp_claims.tex", claims_latex(claims, config_label=config_label))
    written["claims_md"] = csv_dir / "claims.md"
    written["claims_tex"] = tex_dir / "ttp_claims.tex"
    return written
