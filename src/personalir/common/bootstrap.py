"""Percentile bootstrap of a ratio metric over resampling units, per domain and averaged.

A metric is ``sum_u num_u / sum_u den_u`` over the units u of a domain: the products of a
retrieval metric (their queries share a target document), the users of an attribution metric
(their queries share a profile). Each row of a units table is one unit, with columns ``num``
and ``den``; a mean over units has ``den = 1``.

Confidence interval (percentile bootstrap): draw the units of each domain with replacement
``samples`` times and recompute the ratio. The equal-weight average over domains is the mean
of the domain values; its replicates are the means of independent per-domain replicates.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from personalir.common.seeding import rng


def ratio(units: pd.DataFrame) -> float:
    den = float(units["den"].sum())
    return float(units["num"].sum()) / den if den > 0 else float("nan")


def bootstrap_replicates(units: pd.DataFrame, samples: int, seed: int, *names) -> np.ndarray:
    """``samples`` bootstrap values of the ratio (units drawn with replacement)."""
    n = len(units)
    if n == 0:
        return np.full(samples, np.nan)
    num = units["num"].to_numpy(dtype=float)
    den = units["den"].to_numpy(dtype=float)
    idx = rng(seed, "bootstrap", *names).integers(0, n, size=(samples, n))
    dens = den[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(dens > 0, num[idx].sum(axis=1) / dens, np.nan)


def percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    values = replicates[~np.isnan(replicates)]
    if values.size == 0:
        return float("nan"), float("nan")
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(values, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def bootstrap_summary(
    units_by_domain: Mapping[str, pd.DataFrame],
    *,
    samples: int,
    confidence: float,
    seed: int,
    names: tuple = (),
    average_label: str = "Average",
    unit: str = "units",
) -> list[dict]:
    """One row per domain and one for the equal-weight average: value, ci_low, ci_high and
    the number of units (under the key ``unit``: "products", "users")."""
    rows = []
    reps = {}
    for domain, units in units_by_domain.items():
        reps[domain] = bootstrap_replicates(units, samples, seed, domain, *names)
        lo, hi = percentile_interval(reps[domain], confidence)
        rows.append(
            {
                "domain": domain,
                "value": ratio(units),
                "ci_low": lo,
                "ci_high": hi,
                unit: len(units),
            }
        )
    if len(units_by_domain) > 1:
        values = [r["value"] for r in rows]
        avg_reps = np.mean(np.vstack(list(reps.values())), axis=0)
        lo, hi = percentile_interval(avg_reps, confidence)
        rows.append(
            {
                "domain": average_label,
                "value": float(np.mean(values)) if not np.isnan(values).any() else float("nan"),
                "ci_low": lo,
                "ci_high": hi,
                unit: sum(r[unit] for r in rows),
            }
        )
    return rows


def bootstrap_group_means(
    per_set: Mapping[str, np.ndarray],
    *,
    samples: int,
    confidence: float,
    gen: np.random.Generator,
) -> dict[str, dict]:
    """Mean per group (a test set) and the groups' unweighted ``Avg``, with percentile CIs
    from a joint resampling that draws each group's values with replacement independently
    (groups in order, one generator); a group without values makes ``Avg`` NaN."""
    alpha = (1.0 - confidence) / 2
    out, boot = {}, []
    for s, vals in per_set.items():
        n = int(vals.size)
        if n == 0:
            out[s] = {
                "difference": float("nan"),
                "ci_low": float("nan"),
                "ci_high": float("nan"),
                "queries": 0,
            }
            boot.append(np.full(samples, float("nan")))
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
        out["Avg"] = {"difference": float("nan"), "ci_low": float("nan"), "ci_high": float("nan")}
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
