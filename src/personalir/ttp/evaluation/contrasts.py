"""Paired contrasts of the TTP methods on the per-query frame, per test set and averaged.

The frame has one row per method x test query (``label`` the test set, ``example_id`` the
query); a contrast is a weighted sum of methods' values over the queries that every listed
method answered. The Table 4 claims, the ablations and the history sweep read the same
contrasts, bootstrapped by :func:`personalir.common.bootstrap.bootstrap_group_means`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from personalir.common.bootstrap import bootstrap_group_means
from personalir.common.claims import NAN
from personalir.common.seeding import rng
from personalir.ttp.evaluation.layout import MEASURE, SETS


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


def per_set_contrasts(
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
    per_set = per_set_contrasts(frame, [(a, 1.0), (b, -1.0)], measure, sets)
    gen = rng(seed, "ablation", a, b, measure)
    return bootstrap_group_means(per_set, samples=samples, confidence=confidence, gen=gen)
