"""Bootstrap confidence intervals and paired randomisation tests over products.

A metric is ``sum_p num_p / sum_p den_p`` over the products p of a domain (see
:mod:`personalir.retrieval.metrics`). Products are the resampling unit because the queries
and pairs of one product share a target document and are not independent.

Confidence interval (percentile bootstrap, :mod:`personalir.common.bootstrap`): draw the
products of each domain with replacement ``samples`` times and recompute the ratio. The
equal-weight average over domains is the mean of the domain values; its replicates are the
means of independent per-domain replicates.

Paired test (randomisation, two-sided): for two retrievers evaluated on the same queries, the
per-product differences ``d_p = num_p(A) - num_p(B)`` (same den_p) are sign-flipped at random
``permutations`` times; p = (1 + #{|T*| >= |T|}) / (1 + permutations) with
T = sum d_p / sum den_p (for the domain average, the mean of the domain T's, flipping signs
within each domain). Holm's step-down correction is applied across the retriever pairs of
one metric and domain.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from personalir.common import bootstrap as _bootstrap
from personalir.common.bootstrap import bootstrap_replicates, percentile_interval, ratio
from personalir.common.seeding import rng

__all__ = [
    "bootstrap_replicates",
    "bootstrap_summary",
    "holm",
    "paired_differences",
    "paired_randomisation_test",
    "percentile_interval",
    "ratio",
    "sign_matrix",
    "two_sided_p",
]


def bootstrap_summary(units_by_domain: Mapping[str, pd.DataFrame], **kwargs) -> list[dict]:
    """:func:`personalir.common.bootstrap.bootstrap_summary` with products as the units."""
    return _bootstrap.bootstrap_summary(units_by_domain, unit="products", **kwargs)


def paired_differences(units_a: pd.DataFrame, units_b: pd.DataFrame) -> pd.DataFrame:
    """Align two unit tables on product: columns product, d (= num_a - num_b), den."""
    merged = units_a.merge(units_b, on="product", how="inner", suffixes=("_a", "_b"))
    if not np.allclose(merged["den_a"], merged["den_b"]):
        raise ValueError("paired units differ in their denominators: restrict to common queries")
    return pd.DataFrame(
        {
            "product": merged["product"],
            "d": merged["num_a"] - merged["num_b"],
            "den": merged["den_a"],
        }
    )


def sign_matrix(permutations: int, n: int, seed: int, domain: str) -> np.ndarray:
    """``permutations`` x ``n`` random signs (+1/-1), seeded by domain and size only, so that
    every test of a domain with the same products uses the same draws."""
    draws = rng(seed, "permutation", domain, n).integers(0, 2, size=(permutations, n))
    return (draws * 2 - 1).astype(np.float64)


def two_sided_p(observed: float, null: np.ndarray) -> float:
    # A small tolerance so that exact ties (e.g. T = 0) count as "at least as extreme".
    extreme = np.abs(null) >= abs(observed) - 1e-12
    return float((1 + extreme.sum()) / (1 + null.size))


def paired_randomisation_test(
    diffs_by_domain: Mapping[str, pd.DataFrame],
    *,
    permutations: int,
    seed: int,
    signs=None,
) -> tuple[float, float]:
    """(observed difference A - B, two-sided p) for the average of the given domains.

    ``signs(domain, n)`` supplies the sign matrices (default :func:`sign_matrix`)."""
    signs = signs or (lambda domain, n: sign_matrix(permutations, n, seed, domain))
    observed = []
    null = []
    for domain, diffs in diffs_by_domain.items():
        d = diffs["d"].to_numpy(dtype=float)
        den = float(diffs["den"].sum())
        if den <= 0:
            continue
        observed.append(d.sum() / den)
        null.append(signs(domain, d.size) @ d / den)
    if not observed:
        return float("nan"), float("nan")
    t_obs = float(np.mean(observed))
    return t_obs, two_sided_p(t_obs, np.mean(np.vstack(null), axis=0))


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaNs stay NaN and do not count)."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full_like(p, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if ok.size == 0:
        return out.tolist()
    order = ok[np.argsort(p[ok], kind="stable")]
    m = ok.size
    running = 0.0
    for i, idx in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[idx]))
        out[idx] = running
    return out.tolist()
