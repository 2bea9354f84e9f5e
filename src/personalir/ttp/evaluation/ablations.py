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

:func:`run_ablations` writes the tables' parquet files and ``claims.json``; the CSV, LaTeX and
figure renderings are in :mod:`personalir.ttp.paper.ablation_tables`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from personalir.common.io import read_parquet, write_json, write_parquet
from personalir.common.seeding import rng
from personalir.ttp.paper.ablation_layout import (  # noqa: F401  (re-exported)
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


def set_means(
    frame: pd.DataFrame,
    method: str,
    measure: str = MEASURE,
    sets: Sequence[str] = SETS,
) -> dict[str, float]:
    """Mean of ``measure`` per test set (pooled over domains) and their unweighted ``Avg``.

    A set without queries of ``method`` is NaN, and then so is ``Avg``."""
    sub = frame[frame["method"] == method]
    out = {}
    for s in sets:
        vals = sub.loc[sub["label"] == s, measure].to_numpy(dtype=float)
        out[s] = float(vals.mean()) if vals.size else NAN
    out["Avg"] = float(np.mean([out[s] for s in sets])) if sets else NAN
    return out


def _contrasts(
    frame: pd.DataFrame,
    weights: Sequence[tuple[str, float]],
    measure: str,
    sets: Sequence[str],
) -> dict[str, np.ndarray]:
    """Per set: ``sum of weight * value`` over the ``(method, weight)`` terms, for each query
    every listed method answered, in ``example_id`` order."""
    out = {}
    for s in sets:
        sub = frame[frame["label"] == s]
        series = []
        for method, _ in weights:
            vals = sub.loc[sub["method"] == method].set_index("example_id")[measure]
            if vals.index.has_duplicates:
                raise ValueError(f"{method!r} has repeated example_id values in set {s!r}")
            series.append(vals)
        common = series[0].index
        for vals in series[1:]:
            common = common.intersection(vals.index)
        common = common.sort_values()
        total = np.zeros(len(common))
        for (_, w), vals in zip(weights, series, strict=True):
            total += float(w) * vals.loc[common].to_numpy(dtype=float)
        out[s] = total
    return out


def _bootstrap_contrast(
    per_set: Mapping[str, np.ndarray],
    *,
    samples: int,
    confidence: float,
    gen: np.random.Generator,
) -> dict[str, dict]:
    """Mean contrast per set and their Avg, with percentile CIs from a joint resampling that
    draws each set's queries with replacement independently (sets in order)."""
    alpha = (1.0 - confidence) / 2
    out, boot = {}, []
    for s, vals in per_set.items():
        n = int(vals.size)
        if n == 0:
            out[s] = {"difference": NAN, "ci_low": NAN, "ci_high": NAN, "queries": 0}
            boot.append(np.full(samples, NAN))
            continue
        means = vals[gen.integers(0, n, (samples, n))].mean(axis=1)
        lo, hi = np.quantile(means, [alpha, 1 - alpha])
        out[s] = {
            "difference": float(vals.mean()),
            "ci_low": float(lo),
            "ci_high": float(hi),
            "queries": n,
        }
        boot.append(means)
    if any(out[s]["queries"] == 0 for s in per_set):
        out["Avg"] = {"difference": NAN, "ci_low": NAN, "ci_high": NAN}
    else:
        avg = np.mean(np.vstack(boot), axis=0)
        lo, hi = np.quantile(avg, [alpha, 1 - alpha])
        out["Avg"] = {
            "difference": float(np.mean([out[s]["difference"] for s in per_set])),
            "ci_low": float(lo),
            "ci_high": float(hi),
        }
    out["Avg"]["queries"] = int(sum(out[s]["queries"] for s in per_set))
    return out


def paired_avg_difference(
    frame: pd.DataFrame,
    a: str,
    b: str,
    *,
    measure: str = MEASURE,
    samples: int,
    confidence: float,
    seed: int,
    sets: Sequence[str] = SETS,
) -> dict[str, dict]:
    """Mean ``a - b`` per set over the queries both methods answered, and their Avg.

    ``{set: {"difference", "ci_low", "ci_high", "queries"}, "Avg": {...}}`` (fractions); the
    CIs come from one paired bootstrap seeded by ``rng(seed, "ablation", a, b, measure)``."""
    per_set = _contrasts(frame, [(a, 1.0), (b, -1.0)], measure, sets)
    gen = rng(seed, "ablation", a, b, measure)
    return _bootstrap_contrast(per_set, samples=samples, confidence=confidence, gen=gen)


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


def _pts(x: float) -> str:
    return "nan" if math.isnan(x) else f"{100 * x:+.2f}"


def _verdict(claim: Mapping, held: bool, margin: float, lo: float, hi: float, **kw) -> dict:
    status = "not applicable" if math.isnan(margin) else ("held" if held else "not held")
    detail = kw.pop("detail", "")
    if math.isnan(margin):
        detail = (detail + "; " if detail else "") + "a test set has no matched queries"
    return {
        "id": claim["id"],
        "table": claim.get("table", ""),
        "text": claim.get("text", ""),
        "status": status,
        "measured": kw.pop("measured", ""),
        "margin": 100 * margin,
        "ci_low": 100 * lo,
        "ci_high": 100 * hi,
        "detail": detail,
    }


def _not_applicable(claim: Mapping, reason: str) -> dict:
    return {
        "id": claim["id"],
        "table": claim.get("table", ""),
        "text": claim.get("text", ""),
        "status": "not applicable",
        "measured": "",
        "margin": NAN,
        "ci_low": NAN,
        "ci_high": NAN,
        "detail": reason,
    }


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
        f"{a} - {b}: " + ", ".join(f"{s} {_pts(d[s]['difference'])}" for s in SETS)
        for a, b, d in diffs
    )
    return _verdict(
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
    per_set = _contrasts(frame, weights, kw["measure"], SETS)
    gen = rng(kw["seed"], "ablation", claim["id"], kw["measure"])
    out = _bootstrap_contrast(per_set, samples=kw["samples"], confidence=kw["confidence"], gen=gen)[
        "Avg"
    ]
    margin = out["difference"]
    return _verdict(
        claim,
        margin > 0,
        margin,
        out["ci_low"],
        out["ci_high"],
        measured=f"Avg (ttp_rl - ttp_rl_no_intent_q) - (ttp - ttp_no_intent_q) = {_pts(margin)}",
        detail=f"queries matched across the four methods: {out['queries']}",
    )


def _random_selection_hurts(frame, claim, kw) -> dict:
    d = paired_avg_difference(frame, "ttp", "ttp_rl_no_dynamic_selection", **kw)["Avg"]
    margin = d["difference"]
    return _verdict(
        claim,
        margin > 0,
        margin,
        d["ci_low"],
        d["ci_high"],
        measured=f"Avg ttp - ttp_rl_no_dynamic_selection = {_pts(margin)}",
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
    return _verdict(
        claim,
        lowest and margin > 0,
        margin,
        d["ci_low"],
        d["ci_high"],
        measured=f"Avg ttp - ttp_rl_unfrozen_reward = {_pts(margin)}",
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
    measured = ", ".join(f"{k} = {_pts(v['difference'])}" for k, v in quantities.items())
    return _verdict(
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
                _not_applicable(claim, "methods not in the per-query frame: " + ", ".join(missing))
            )
        else:
            out.append(_CLAIMS[claim["id"]](frame, claim, kw))
    return out


def _json_safe(obj):
    """NaN -> None, so claims.json is strict JSON."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_json_safe(v) for v in obj]
    return obj


def run_ablations(
    *,
    per_query_path: str | Path,
    paper_path: str | Path,
    ttp_eval: Mapping,
    seed: int,
    out_dir: str | Path,
    relevance_paths: Sequence[str | Path] = (),
    teacher: str = "ttp_rl",
    history_sweep_path: str | Path | None = None,
    main_n: int | None = None,
    public_claims_path: str | Path | None = None,
) -> dict:
    """Write ``table6.parquet``, ``table7.parquet``, ``figure5.parquet`` and ``claims.json``
    into ``out_dir``; return a summary (methods present and missing, claim statuses).
    ``relevance_paths``: the ``ttp_relevance`` outputs (Table 4's Relevance column, for the
    claims that include it); ``teacher``: the distilled student's teacher (Table 8);
    ``history_sweep_path``: the sweep's per-query measures (Figure 6), whose claim expects the
    peak at ``main_n`` (the main run's ``history.n``); ``public_claims_path``: the public
    sets' claim verdicts (Table 5, :mod:`personalir.ttp.evaluation.public`)."""
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
    from personalir.ttp.evaluation.relevance_eval import read_relevance_records
    from personalir.ttp.evaluation.table4_claims import evaluate_table4_claims
    from personalir.ttp.methods.base import PERSONAL_RETRIEVERS

    order = list(dict.fromkeys(frame["method"]))
    known = [m for m in order if m in PERSONAL_RETRIEVERS]
    paper_claims = paper.get("claims") or []
    found = evaluate_claims(frame, paper_claims, **kw) + evaluate_table4_claims(
        frame,
        paper_claims,
        table4=[m for m in known if PERSONAL_RETRIEVERS.get(m).table4_row],
        uses_history={m: PERSONAL_RETRIEVERS.get(m).uses_history for m in known},
        samples=kw["samples"],
        confidence=kw["confidence"],
        seed=kw["seed"],
        relevance=read_relevance_records(relevance_paths) if relevance_paths else None,
        teacher=teacher,
    )
    from personalir.ttp.evaluation.history_sweep import sweep_claims

    found += sweep_claims(paper_claims, history_sweep_path, main_n=main_n, **kw)
    from personalir.common.io import read_json

    public = read_json(public_claims_path) if public_claims_path else []
    found += public or [
        _not_applicable(c, "no public sets configured (ttp.public.sets)")
        for c in paper_claims
        if c.get("id") == "public_generalises"
    ]
    rank = {c["id"]: i for i, c in enumerate(paper_claims)}
    claims = sorted(found, key=lambda c: rank[c["id"]])
    write_json(out_dir / "claims.json", _json_safe(claims))
    summary["claims"] = {c["id"]: c["status"] for c in claims}
    return summary
