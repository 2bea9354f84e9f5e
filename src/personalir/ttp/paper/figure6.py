"""Figure 6 of the TTP paper: Recall@20 per test set against the history length N.

Reads the sweep's rows (:func:`personalir.ttp.evaluation.history_sweep.figure6_rows`: one per N and
test set, with a bootstrap CI) and writes them as a CSV and a line plot with CI bands. The
paper gives Figure 6's values only in the figure; its stated finding (and its N values,
from ``config/paper_results/ttp.yaml``) goes into the title's note, not as numbers.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from personalir.common.io import atomic_open, read_parquet
from personalir.common.plotting import pyplot
from personalir.ttp.paper.figures import save_figure

SETS = ("General", "Broad", "LongTail", "Avg")
COLUMNS = ("N", "Set", "Recall@20", "CI low", "CI high", "Queries", "Well-formed")


def figure6_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The CSV: one row per (N, set) in N order, then General, Broad, LongTail, Avg."""
    if rows.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    order = {s: i for i, s in enumerate(SETS)}
    out = rows.assign(_set=rows["set"].map(order)).sort_values(["history_n", "_set"])
    return pd.DataFrame(
        {
            "N": out["history_n"].astype(int).to_numpy(),
            "Set": out["set"].to_numpy(),
            "Recall@20": out["value"].to_numpy(),
            "CI low": out["ci_low"].to_numpy(),
            "CI high": out["ci_high"].to_numpy(),
            "Queries": out["queries"].astype(int).to_numpy(),
            # share of the point's test generations that were well formed (not per set)
            "Well-formed": out.get(
                "well_formed_share", pd.Series(float("nan"), out.index)
            ).to_numpy(),
        }
    )


def plot(table: pd.DataFrame, *, out: str | Path, title: str, main_n: int, note: str) -> None:

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    palette = plt.get_cmap("tab10")
    if table.empty:
        ax.text(
            0.5,
            0.5,
            "no history-length sweep configured\n(ttp.history_sweep.values is empty)",
            ha="center",
            va="center",
            fontsize=8,
        )
        ax.set_axis_off()
    span = float(table["N"].max() - table["N"].min()) if not table.empty else 0.0
    for i, s in enumerate(SETS):
        sub = table[table["Set"] == s]
        if sub.empty:
            continue
        color = "black" if s == "Avg" else palette(i)
        # sets dodged sideways so that their 95% intervals do not hide each other
        x = sub["N"] + (i - 1.5) * 0.015 * (span or 1.0)
        y = 100 * sub["Recall@20"]
        ax.errorbar(
            x,
            y,
            yerr=[y - 100 * sub["CI low"], 100 * sub["CI high"] - y],
            marker="o",
            markersize=4,
            capsize=2,
            linewidth=1.6 if s == "Avg" else 1.0,
            linestyle="--" if s == "Avg" else "-",
            color=color,
            label=s,
        )
    if not table.empty:
        ax.axvline(main_n, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xticks(sorted(set(table["N"])))
        formed = table.drop_duplicates("N").set_index("N")["Well-formed"]
        ax.set_xlabel(
            f"history length N (main configuration: N = {main_n})\nwell-formed rewrites: "
            + ", ".join(
                f"N={n}: {'n/a' if pd.isna(v) else f'{100 * v:.0f}%'}" for n, v in formed.items()
            ),
            fontsize=7,
        )
        ax.set_ylabel("Recall@20 (x100)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    import textwrap

    ax.set_title("\n".join([title, *textwrap.wrap(note, 80)]), fontsize=7)
    fig.tight_layout()
    save_figure(fig, out)


def make_figure6(
    *,
    rows_path: str | Path | None,
    paper_path: str | Path,
    main_n: int,
    config_label: str,
    csv_out: str | Path,
    pdf_out: str | Path,
) -> pd.DataFrame:
    import yaml

    paper = yaml.safe_load(Path(paper_path).read_text(encoding="utf-8")) or {}
    rows = read_parquet(rows_path) if rows_path else pd.DataFrame()
    table = figure6_table(rows)
    with atomic_open(csv_out) as fh:
        table.to_csv(fh, index=False, float_format="%.4f")
    fig6 = (paper or {}).get("figure6") or {}
    values = fig6.get("values_of_N")
    note = f"paper: N in {values}; {fig6.get('stated', '')}".strip() if fig6 else ""
    plot(
        table,
        out=pdf_out,
        title=f"{config_label}: Recall@20 vs history length (95% bootstrap CIs)",
        main_n=int(main_n),
        note=note,
    )
    return table
