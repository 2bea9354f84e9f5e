"""TTP on PQB in LaTeX: the table, the history effects, and the note where a configuration
produces neither (:mod:`personalir.ttp.evaluation.on_pqb` computes them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from personalir.common.domains import display_label
from personalir.common.io import read_json, write_text
from personalir.common.latex import dataframe_to_latex, escape
from personalir.retrieval.metrics import metric_header


def _header(metric: str) -> str:
    """A column header: PQB's (``Flip@10``, ``RRstd``), MRR for the RR measure."""

    return "MRR" if metric.startswith("RR@") else metric_header(metric)


def table_tex(
    table: pd.DataFrame,
    metrics: Sequence[str],
    *,
    config_label: str,
    domains: Sequence[str],
    pairs: Mapping[str, int],
    seen: int,
    queries: int,
    rr_depth: int,
    synthetic: bool,
    effectiveness: Sequence[str] = (),
) -> str:

    cells = pd.DataFrame(
        {
            "Method": [escape(x) for x in table["label"]],
            "History": table["history"],
            **{_header(m): [f"{v:.3f}" for v in table[m]] for m in metrics},
        }
    )
    bold = {}
    for m in metrics:
        values = table[m].to_numpy(dtype=float)
        if np.isfinite(values).any():
            best = np.nanmax(values) if m in effectiveness else np.nanmin(values)
            for i, v in enumerate(values):
                if np.isfinite(v) and np.isclose(v, best):
                    bold[(i, _header(m))] = True
    where = ", ".join(display_label(d) for d in domains)
    caption = (
        "TTP on PQB (not in either paper): PQB's robustness metrics for personalised "
        "retrievers on PQB's query pairs, with the querying user's review history and without "
        f"it ({where}; {pairs.get('syntactic', 0)} syntactic and "
        f"{pairs.get('writing_error', 0)} writing-error pairs, {queries} queries). Lower is "
        "more robust; bold: the most robust"
        + (
            f" ({', '.join(_header(m) for m in effectiveness)}: effectiveness over all"
            " queries, higher is better, bold the best)"
            if effectiveness
            else ""
        )
        + f". RR is cut at depth {rr_depth}. "
        f"{seen} of the {queries} queries' (user, product) were TTP training searches. "
        "95\\% bootstrap intervals (products resampled) are in the CSV. "
        f"Configuration: {escape(config_label)}."
    )
    if synthetic:
        caption += " The sample world is synthetic: these numbers exercise the pipeline only."
    return dataframe_to_latex(
        cells, caption=caption, label="tab:ttp-on-pqb", bold=bold, fit_width=True
    )


def effects_tex(effects: pd.DataFrame, *, config_label: str) -> str:

    if effects.empty:
        cells = pd.DataFrame({"Method": ["(no method reads a history)"], "Metric": [""]})
    else:
        cells = pd.DataFrame(
            {
                "Method": [escape(x) for x in effects["label"]],
                "Metric": [metric_header(m) for m in effects["metric"]],
                "With": [f"{v:.3f}" for v in effects["with_history"]],
                "Without": [f"{v:.3f}" for v in effects["without_history"]],
                "Difference [95\\% CI]": [
                    f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" if np.isfinite(d) else "--"
                    for d, lo, hi in zip(
                        effects["difference"], effects["ci_low"], effects["ci_high"], strict=True
                    )
                ],
                "p": [f"{p:.3f}" if np.isfinite(p) else "--" for p in effects["p_value"]],
                "Verdict": effects["verdict"],
            }
        )
    caption = (
        "Does personalisation repair the ranking variation that wording causes? Per "
        "history-reading method and metric: the value with the user's history, without it, "
        "their paired difference (with - without; negative is more robust with history) with "
        "its bootstrap interval over products, and a paired randomisation test. Held: the "
        "whole interval lies below 0. "
        f"Configuration: {escape(config_label)}."
    )
    return dataframe_to_latex(
        cells, caption=caption, label="tab:ttp-on-pqb-effects", fit_width=True
    )


def absent_tex(reason: str, label: str = "tab:ttp-on-pqb") -> str:
    """What the documents input where this configuration produces no TTP-on-PQB table."""

    return "\n".join(
        [
            r"\begin{table}[h]",
            r"\centering",
            r"\caption{TTP on PQB: not produced by this configuration: " + escape(reason) + "}",
            rf"\label{{{label}}}",
            r"\begin{tabular}{l}\toprule (absent) \\ \bottomrule\end{tabular}",
            r"\end{table}",
            "",
        ]
    )


def write_tex(
    *, table, effects, facts, config_label: str, synthetic: bool, table_out, effects_out
) -> None:
    """Both LaTeX tables from ``ttp_pqb_evaluate``'s table.csv, history_effects.csv and
    facts.json."""

    frame = pd.read_csv(table, keep_default_na=False, na_values=[""])
    effect_rows = pd.read_csv(effects, keep_default_na=False, na_values=[""])
    info = read_json(facts)
    metrics = info["table_metrics"]
    write_text(
        table_out,
        table_tex(
            frame,
            list(metrics["robustness"]) + list(metrics["effectiveness"]),
            config_label=config_label,
            domains=info["domains"],
            pairs=info["pairs"],
            seen=info["seen_in_training"],
            queries=info["queries"],
            rr_depth=info["rr_depth"],
            synthetic=synthetic,
            effectiveness=metrics["effectiveness"],
        ),
    )
    write_text(effects_out, effects_tex(effect_rows, config_label=config_label))


def write_absent(reason: str, table_out, effects_out) -> None:
    write_text(table_out, absent_tex(reason))
    write_text(effects_out, absent_tex(reason, "tab:ttp-on-pqb-effects"))
