"""Evaluation of personalised retrieval: exact search, TREC runs, ir_measures, bootstrap CIs.

Measures (one relevant item per query, the purchased one), named as in the TTP paper and
computed by ir_measures from the run's order:

=============  =============
Recall@10      ``R@10``
Recall@20      ``R@20``
Recall@100     ``R@100``
MRR@100        ``RR@100``
HR@20          ``Success@20``
nDCG@20        ``nDCG@20``
=============  =============

A query the run does not list retrieves nothing (every measure 0). Confidence intervals are
percentile bootstraps over queries (``samples`` resamples, seeded); the comparison of two
methods uses the paired bootstrap of their per-query differences.

:func:`evaluate` is the rule ``ttp_evaluate``: the per-query measures of every run, their
summary and each method's display label (``labels.json``). The paper's claims about these
numbers are evaluated by ``ttp_ablations`` (:mod:`personalir.ttp.evaluation.table4_claims`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from personalir.common.bootstrap import mean_interval, paired_difference_interval
from personalir.common.io import read_json, write_json, write_parquet
from personalir.common.seeding import rng
from personalir.retrieval.runio import read_run
from personalir.ttp.inputs.data import read_examples
from personalir.ttp.model.search import MEASURES, per_query_measures


def bootstrap_ci(values: np.ndarray, samples: int, confidence: float, seed: int, *names):
    """Percentile bootstrap CI of the mean of ``values`` (:func:`mean_interval`), drawn from
    ``rng(seed, "ttp_bootstrap", *names)``; NaN when there are no values."""
    return mean_interval(values, samples, confidence, rng(seed, "ttp_bootstrap", *names))


def summarise(
    frame: pd.DataFrame,
    *,
    samples: int,
    confidence: float,
    seed: int,
    groups: Sequence[str] = ("domain", "label"),
) -> pd.DataFrame:
    """Mean and bootstrap CI of every measure per method and group, plus pooled rows.

    Pooled rows: ``domain == "All"`` (every domain) and ``label == "All"`` (every label)."""
    rows = []
    variants = [frame]
    if "domain" in groups:
        variants.append(frame.assign(domain="All"))
    expanded = pd.concat(variants, ignore_index=True)
    if "label" in groups:
        expanded = pd.concat([expanded, expanded.assign(label="All")], ignore_index=True)
    for keys, sub in expanded.groupby(["method", *groups], sort=True):
        base = dict(zip(["method", *groups], keys, strict=True))
        for measure in MEASURES:
            vals = sub[measure].to_numpy(dtype=float)
            lo, hi = bootstrap_ci(vals, samples, confidence, seed, *keys, measure)
            rows.append(
                {
                    **base,
                    "measure": measure,
                    "value": float(vals.mean()),
                    "ci_low": lo,
                    "ci_high": hi,
                    "queries": int(vals.size),
                }
            )
    return pd.DataFrame(rows)


def paired_difference(
    frame: pd.DataFrame,
    method_a: str,
    method_b: str,
    measure: str,
    *,
    samples: int,
    confidence: float,
    seed: int,
    **where,
) -> dict:
    """Mean of ``a - b`` over the queries both methods answered, with its paired bootstrap CI
    and the half-widths of both methods' own CIs."""
    sub = frame
    for col, val in where.items():
        sub = sub[sub[col] == val]
    a = sub[sub["method"] == method_a].set_index("example_id")[measure]
    b = sub[sub["method"] == method_b].set_index("example_id")[measure]
    common = a.index.intersection(b.index)
    diff = (a.loc[common] - b.loc[common]).to_numpy(dtype=float)
    lo, hi = paired_difference_interval(
        a.loc[common].to_numpy(dtype=float),
        b.loc[common].to_numpy(dtype=float),
        samples,
        confidence,
        rng(seed, "ttp_bootstrap", "paired", method_a, method_b, measure, *where.values()),
    )
    b_lo, b_hi = bootstrap_ci(
        b.loc[common].to_numpy(dtype=float),
        samples,
        confidence,
        seed,
        "single",
        method_b,
        measure,
        *where.values(),
    )
    a_lo, a_hi = bootstrap_ci(
        a.loc[common].to_numpy(dtype=float),
        samples,
        confidence,
        seed,
        "single",
        method_a,
        measure,
        *where.values(),
    )
    return {
        "a": method_a,
        "b": method_b,
        "measure": measure,
        "where": dict(where),
        "queries": int(common.size),
        "value_a": float(a.loc[common].mean()) if common.size else float("nan"),
        "value_b": float(b.loc[common].mean()) if common.size else float("nan"),
        "difference": float(diff.mean()) if diff.size else float("nan"),
        "diff_ci_low": lo,
        "diff_ci_high": hi,
        "ci_half_width_a": (a_hi - a_lo) / 2,
        "ci_half_width_b": (b_hi - b_lo) / 2,
    }


def evaluate(
    *,
    examples_paths: Sequence[str | Path],
    runs: Sequence[tuple[str, str, str]],
    infos: Sequence[str | Path],
    ttp: Mapping,
    seed: int,
    per_query_out: str | Path,
    summary_out: str | Path,
    labels_out: str | Path,
    log=print,
) -> dict:
    """``runs``: (example set, method, run path). Writes per-query measures, the summary
    (mean + CI per method, set, label) and the methods' labels."""

    test = {}
    for p in examples_paths:
        for ex in read_examples(p):
            if ex.split == "test":
                test.setdefault(ex.domain, []).append(ex)
    frames = []
    for ex_set, method, path in runs:
        exs = test[ex_set]
        run = read_run(path, query_ids=[e.example_id for e in exs])
        frames.append(per_query_measures(exs, run, method))
    frame = pd.concat(frames, ignore_index=True)
    ev = ttp["evaluation"]
    summary = summarise(
        frame, samples=int(ev["bootstrap_samples"]), confidence=float(ev["confidence"]), seed=seed
    )
    write_parquet(per_query_out, frame)
    write_parquet(summary_out, summary)
    labels = {read_json(p)["method"]: read_json(p)["label"] for p in infos}
    out = {"labels": dict(labels), "methods": list(dict.fromkeys(m for _, m, _ in runs))}
    write_json(labels_out, out)
    log(json.dumps(out, indent=1))
    return out
