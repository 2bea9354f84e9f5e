"""The TTP paper's ablations (Tables 6 and 7, Figure 5) and their claims, from per-query values.

Input is the evaluation's per-query frame (one row per method x test query, ``label`` the test
set). A set's value is the mean over its queries pooled over domains; ``Avg`` is the unweighted
mean of the three set means, as in the paper. Differences between methods are paired: per set,
over the queries both (or all) methods answered, matched on ``example_id``. Their confidence
intervals are percentile bootstraps that resample each set's queries with replacement
independently and recompute the per-set means and their Avg from the same draws.

Our values are fractions (0..1); the paper's (``config/paper_results/ttp.yaml``) are percent.
Claim margins are in Recall@20 points (fractions x 100). The LLM-embedding baseline
(``llm_embedding``: the TTP backbone without generation) is the paper's Qwen-Embedding row;
without it the query-only dense baseline (``dense``) stands in. A method the frame lacks is left out
of the tables and makes the claims that need it "not applicable".

:func:`run_ablations` writes the tables' parquet files (:func:`evaluate_claims` gives the
verdicts that :mod:`personalir.ttp.evaluation.claims` gathers); the CSV, LaTeX and
figure renderings are in :mod:`personalir.ttp.paper.ablation_tables`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from personalir.common.bootstrap import bootstrap_group_means
from personalir.common.claims import not_applicable, points, verdict
from personalir.common.io import read_parquet, write_parquet
from personalir.common.seeding import rng
from personalir.ttp.evaluation.contrasts import paired_avg_difference, per_set_contrasts, set_means
from personalir.ttp.evaluation.layout import (  # noqa: F401  (re-exported)
    COLUMNS,
    FIGURE5,
    LABELS,
    MEASURE,
    QWEN_EMBEDDING_STAND_INS,
    SETS,
    TABLE6,
    TABLE7,
    TABLES,
    qwen_embedding_stand_in,
)

# The claims of config/paper_results/ttp.yaml that this module evaluates.
CLAIM_IDS = (
    "intent_q_helps",
    "intent_q_gain_grows_with_rl",
    "random_selection_hurts",
    "unfrozen_rm_catastrophic",
    "both_reward_terms_help",
)
NAN = float("nan")


def _methods(frame: pd.DataFrame) -> set[str]:
    return set(frame["method"].unique())


def _paper_row(paper: Mapping | None, table: str, key: str) -> Mapping:
    return (((paper or {}).get(table) or {}).get("rows") or {}).get(key) or {}


def ablation_rows(
    frame: pd.DataFrame,
    table: str,
    *,
    samples: int,
    confidence: float,
    seed: int,
    reference: str = "ttp",
    paper: Mapping | None = None,
    measure: str = MEASURE,
) -> pd.DataFrame:
    """One row per method of ``table`` ("table6" or "table7") that the frame has, in the
    paper's order: our set means and Avg (fractions), the paired Avg difference to
    ``reference`` with its CI, and the paper's values (percent) as ``<column> paper``."""
    if table not in TABLES:
        raise ValueError(f"unknown ablation table {table!r}; expected one of {sorted(TABLES)}")
    present = _methods(frame)
    rows = []
    for method, key in TABLES[table].items():
        if method not in present or (
            method in QWEN_EMBEDDING_STAND_INS and method != qwen_embedding_stand_in(present)
        ):
            continue
        row = {"method": method, "label": LABELS.get(method, method), "paper_key": key}
        row.update(set_means(frame, method, measure))
        if reference in present:
            avg = paired_avg_difference(
                frame,
                method,
                reference,
                measure=measure,
                samples=samples,
                confidence=confidence,
                seed=seed,
            )["Avg"]
            diff = (avg["difference"], avg["ci_low"], avg["ci_high"])
        else:
            diff = (NAN, NAN, NAN)
        row["diff_vs_sft"], row["diff_ci_low"], row["diff_ci_high"] = diff
        ref = _paper_row(paper, table, key)
        for col in COLUMNS:
            row[f"{col} paper"] = float(ref[col]) if col in ref else NAN
        row["confidence"] = float(confidence)
        row["bootstrap_samples"] = int(samples)
        rows.append(row)
    columns = [
        "method",
        "label",
        "paper_key",
        *COLUMNS,
        "diff_vs_sft",
        "diff_ci_low",
        "diff_ci_high",
        *(f"{c} paper" for c in COLUMNS),
        "confidence",
        "bootstrap_samples",
    ]
    return pd.DataFrame(rows, columns=columns)


def figure5_rows(
    frame: pd.DataFrame,
    *,
    samples: int,
    confidence: float,
    seed: int,
    baseline: str | None = None,
    paper: Mapping | None = None,
    measure: str = MEASURE,
) -> pd.DataFrame:
    """Figure 5: the gain of each Intent-Q variant over ``baseline`` (None: the Qwen-Embedding
    stand-in, :func:`qwen_embedding_stand_in`) per test set, in points (x100), with its
    paired-bootstrap CI and the paper's gain (``paper_gain``)."""
    present = _methods(frame)
    if baseline is None:
        baseline = qwen_embedding_stand_in(present)
    rows = []
    figure = (paper or {}).get("figure5") or {}
    if baseline in present:
        for method, key in FIGURE5.items():
            if method not in present:
                continue
            diff = paired_avg_difference(
                frame,
                method,
                baseline,
                measure=measure,
                samples=samples,
                confidence=confidence,
                seed=seed,
            )
            for s in SETS:
                ref = figure.get(s) or {}
                rows.append(
                    {
                        "method": method,
                        "label": LABELS.get(method, method),
                        "paper_key": key,
                        "test_set": s,
                        "gain": 100 * diff[s]["difference"],
                        "ci_low": 100 * diff[s]["ci_low"],
                        "ci_high": 100 * diff[s]["ci_high"],
                        "queries": int(diff[s]["queries"]),
                        "paper_gain": float(ref[key]) if key in ref else NAN,
                        "confidence": float(confidence),
                        "bootstrap_samples": int(samples),
                    }
                )
    columns = [
        "method",
        "label",
        "paper_key",
        "test_set",
        "gain",
        "ci_low",
        "ci_high",
        "queries",
        "paper_gain",
        "confidence",
        "bootstrap_samples",
    ]
    out = pd.DataFrame(rows, columns=columns)
    return out.astype({"queries": "int64", "bootstrap_samples": "int64"})


# --------------------------------------------------------------------------- claims


_CLAIM_METHODS = {
    "intent_q_helps": ("ttp", "ttp_no_intent_q", "ttp_rl", "ttp_rl_no_intent_q"),
    "intent_q_gain_grows_with_rl": ("ttp", "ttp_no_intent_q", "ttp_rl", "ttp_rl_no_intent_q"),
    "random_selection_hurts": ("ttp", "ttp_rl_no_dynamic_selection"),
    "unfrozen_rm_catastrophic": ("ttp", "ttp_rl_unfrozen_reward"),
    "both_reward_terms_help": ("ttp_rl", "ttp_rl_no_positive_gain", "ttp_rl_no_margin_gain"),
}


def _intent_q_helps(frame, claim, kw) -> dict:
    pairs = (("ttp", "ttp_no_intent_q"), ("ttp_rl", "ttp_rl_no_intent_q"))
    diffs = [(a, b, paired_avg_difference(frame, a, b, **kw)) for a, b in pairs]
    cells = [(a, b, s, d[s]) for a, b, d in diffs for s in SETS]
    a, b, s, worst = min(
        cells, key=lambda c: -math.inf if math.isnan(c[3]["difference"]) else c[3]["difference"]
    )
    margin = worst["difference"]
    measured = "; ".join(
        f"{a} - {b}: " + ", ".join(f"{s} {points(d[s]['difference'])}" for s in SETS)
        for a, b, d in diffs
    )
    return verdict(
        claim,
        margin > 0,
        margin,
        worst["ci_low"],
        worst["ci_high"],
        measured=measured,
        detail=f"smallest difference: {a} - {b} on {s}",
    )


def _intent_q_gain_grows_with_rl(frame, claim, kw) -> dict:
    weights = [
        ("ttp_rl", 1.0),
        ("ttp_rl_no_intent_q", -1.0),
        ("ttp", -1.0),
        ("ttp_no_intent_q", 1.0),
    ]
    per_set = per_set_contrasts(frame, weights, kw["measure"], SETS)
    gen = rng(kw["seed"], "ablation", claim["id"], kw["measure"])
    out = bootstrap_group_means(
        per_set, samples=kw["samples"], confidence=kw["confidence"], gen=gen
    )["Avg"]
    margin = out["difference"]
    return verdict(
        claim,
        margin > 0,
        margin,
        out["ci_low"],
        out["ci_high"],
        measured=f"Avg (ttp_rl - ttp_rl_no_intent_q) - (ttp - ttp_no_intent_q) = {points(margin)}",
        detail=f"queries matched across the four methods: {out['queries']}",
    )


def _random_selection_hurts(frame, claim, kw) -> dict:
    d = paired_avg_difference(frame, "ttp", "ttp_rl_no_dynamic_selection", **kw)["Avg"]
    margin = d["difference"]
    return verdict(
        claim,
        margin > 0,
        margin,
        d["ci_low"],
        d["ci_high"],
        measured=f"Avg ttp - ttp_rl_no_dynamic_selection = {points(margin)}",
        detail="positive margin: RL without dynamic selection is below SFT only",
    )


def _unfrozen_rm_catastrophic(frame, claim, kw) -> dict:
    present = _methods(frame)
    avgs = {m: set_means(frame, m, kw["measure"])["Avg"] for m in TABLE7 if m in present}
    unfrozen = avgs["ttp_rl_unfrozen_reward"]
    others = {m: v for m, v in avgs.items() if m != "ttp_rl_unfrozen_reward"}
    worst = min(avgs, key=lambda m: -math.inf if math.isnan(avgs[m]) else avgs[m])
    lowest = all(unfrozen < v for v in others.values())
    d = paired_avg_difference(frame, "ttp", "ttp_rl_unfrozen_reward", **kw)["Avg"]
    margin = d["difference"]
    ranked = ", ".join(f"{m} {100 * v:.2f}" for m, v in sorted(avgs.items(), key=lambda x: x[1]))
    return verdict(
        claim,
        lowest and margin > 0,
        margin,
        d["ci_low"],
        d["ci_high"],
        measured=f"Avg ttp - ttp_rl_unfrozen_reward = {points(margin)}",
        detail=f"lowest Avg among the Table 7 rows present: {worst} (Avg x100: {ranked})",
    )


def _both_reward_terms_help(frame, claim, kw) -> dict:
    pos = paired_avg_difference(frame, "ttp_rl", "ttp_rl_no_positive_gain", **kw)["Avg"]
    mar = paired_avg_difference(frame, "ttp_rl", "ttp_rl_no_margin_gain", **kw)["Avg"]
    # (ttp_rl - no_positive) - (ttp_rl - no_margin) = no_margin - no_positive
    more = paired_avg_difference(frame, "ttp_rl_no_margin_gain", "ttp_rl_no_positive_gain", **kw)[
        "Avg"
    ]
    quantities = {
        "ttp_rl - no_positive_gain": pos,
        "ttp_rl - no_margin_gain": mar,
        "alpha's drop - beta's drop": more,
    }
    name = min(
        quantities,
        key=lambda k: (
            -math.inf if math.isnan(quantities[k]["difference"]) else quantities[k]["difference"]
        ),
    )
    worst = quantities[name]
    margin = worst["difference"]
    measured = ", ".join(f"{k} = {points(v['difference'])}" for k, v in quantities.items())
    return verdict(
        claim,
        margin > 0,
        margin,
        worst["ci_low"],
        worst["ci_high"],
        measured=f"Avg {measured}",
        detail=f"smallest quantity: {name}",
    )


_CLAIMS = {
    "intent_q_helps": _intent_q_helps,
    "intent_q_gain_grows_with_rl": _intent_q_gain_grows_with_rl,
    "random_selection_hurts": _random_selection_hurts,
    "unfrozen_rm_catastrophic": _unfrozen_rm_catastrophic,
    "both_reward_terms_help": _both_reward_terms_help,
}


def evaluate_claims(
    frame: pd.DataFrame,
    paper_claims: Sequence[Mapping],
    *,
    samples: int,
    confidence: float,
    seed: int,
    measure: str = MEASURE,
) -> list[dict]:
    """The verdict on each paper claim about Tables 6, 7 and Figure 5 (ids in
    :data:`CLAIM_IDS`; other claims are skipped), in the paper's order.

    Each verdict: ``id, table, text, status ("held" | "not held" | "not applicable"),
    measured, margin, ci_low, ci_high, detail``; margins and CIs in points (x100), a positive
    margin meaning the claim holds."""
    present = _methods(frame)
    kw = {"measure": measure, "samples": samples, "confidence": confidence, "seed": seed}
    out = []
    for claim in paper_claims:
        if claim.get("id") not in _CLAIMS:
            continue
        missing = [m for m in _CLAIM_METHODS[claim["id"]] if m not in present]
        if missing:
            out.append(
                not_applicable(claim, "methods not in the per-query frame: " + ", ".join(missing))
            )
        else:
            out.append(_CLAIMS[claim["id"]](frame, claim, kw))
    return out


def run_ablations(
    *,
    per_query_path: str | Path,
    paper_path: str | Path,
    ttp_eval: Mapping,
    seed: int,
    out_dir: str | Path,
) -> dict:
    """Write ``table6.parquet``, ``table7.parquet`` and ``figure5.parquet`` into ``out_dir``;
    return a summary (methods present and missing). The claims about them are evaluated by
    :mod:`personalir.ttp.evaluation.claims`."""
    import yaml

    frame = read_parquet(per_query_path)
    paper = yaml.safe_load(Path(paper_path).read_text(encoding="utf-8")) or {}
    kw = {
        "samples": int(ttp_eval["bootstrap_samples"]),
        "confidence": float(ttp_eval["confidence"]),
        "seed": int(seed),
    }
    out_dir = Path(out_dir)
    present = _methods(frame)
    summary: dict = {"measure": MEASURE, "missing": {}, "rows": {}}
    for table in TABLES:
        rows = ablation_rows(frame, table, paper=paper, **kw)
        write_parquet(out_dir / f"{table}.parquet", rows)
        summary["rows"][table] = list(rows["method"])
        summary["missing"][table] = [
            m
            for m in TABLES[table]
            if m not in present
            and not (m in QWEN_EMBEDDING_STAND_INS and qwen_embedding_stand_in(present) in present)
        ]
    fig = figure5_rows(frame, paper=paper, **kw)
    write_parquet(out_dir / "figure5.parquet", fig)
    summary["rows"]["figure5"] = sorted(set(fig["method"]), key=list(FIGURE5).index)
    summary["missing"]["figure5"] = [
        m for m in (qwen_embedding_stand_in(present), *FIGURE5) if m not in present
    ]

    return summary
