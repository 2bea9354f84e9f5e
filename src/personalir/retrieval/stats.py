"""Bootstrap confidence intervals and paired randomisation tests over products.

A metric is ``sum_p num_p / sum_p den_p`` over the products p of a domain (see
:mod:`personalir.retrieval.metrics`). Products are the resampling unit because the queries
and pairs of one product share a target document and are not independent.

Confidence interval (percentile bootstrap, :mod:`personalir.common.bootstrap`): draw the
products of each domain with replacement ``samples`` times and recompute the ratio. The
equal-weight average over domains is the mean of the domain values; its replicates are the
means of independent per-domain replicates.

Paired test (randomisation, two-sided; ``paired_randomisation_test`` and ``sign_matrix`` in
:mod:`personalir.common.bootstrap`): for two retrievers evaluated on the same queries, the
per-product differences
``d_p = num_p(A) - num_p(B)`` (same den_p, :func:`paired_differences`) are sign-flipped at
random ``permutations`` times; p = (1 + #{|T*| >= |T|}) / (1 + permutations) with
T = sum d_p / sum den_p (for the domain average, the mean of the domain T's, flipping signs
within each domain). Holm's step-down correction (:func:`holm`) is applied across the
retriever pairs of one metric and domain.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from personalir.common import bootstrap


def bootstrap_summary(units_by_domain: Mapping[str, pd.DataFrame], **kwargs) -> list[dict]:
    """:func:`personalir.common.bootstrap.bootstrap_summary` with products as the units."""
    return bootstrap.bootstrap_summary(units_by_domain, unit="products", **kwargs)


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
