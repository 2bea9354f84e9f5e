"""Percentile bootstraps and paired sign-flip tests: the one place the project resamples.

**Means and differences of means** (:func:`mean_replicates`, :func:`mean_interval`,
:func:`paired_difference_interval`, :func:`difference_of_means_interval`,
:func:`bootstrap_group_means`) go through ``scipy.stats.bootstrap`` (``method="percentile"``,
a vectorised statistic, the caller's seeded ``numpy.random.Generator`` as ``rng``). For each
batch and each sample in order, scipy draws ``rng.integers(0, n, (batch, n))``, the rows
being the resamples; with the default batch (every resample at once) that is the draw of
:func:`resample_indices`, so a generator gives the same replicates through scipy as through a
hand-written loop over the same draws. The interval is the linear ``np.quantile`` of the
replicates (:func:`quantile_interval`), not scipy's ``confidence_interval``:
``scipy.stats.quantile`` interpolates as ``(1 - g) * y[j] + g * y[j + 1]``, NumPy as
``y[j] + g * (y[j + 1] - y[j])``, which differ in the last bits (equal neighbours included).
scipy wants two or more observations; with one, every replicate is that value (NumPy draws
nothing for a range of one, so the generator is left as scipy would leave it), and with none
the replicates are NaN and nothing is drawn.

**Ratios over clusters** (:func:`ratio`, :func:`bootstrap_replicates`,
:func:`bootstrap_summary`) keep their own resampling: a metric is ``sum_u num_u / sum_u den_u``
over the units u of a domain (the products of a retrieval metric, the users of an attribution
metric; ``den = 1`` for a mean over units), a replicate is NaN when its units have no
denominator, and each domain has its own generator ``rng(seed, "bootstrap", domain, *names)``.
The equal-weight average over domains is the mean of the domain values; its replicates are the
means of the per-domain replicates.

Bootstraps of other statistics over clusters (Spearman over queries, agreement over items)
draw their resamples with :func:`resample_indices` and take :func:`percentile_interval`.

**Paired sign-flip test** (:func:`sign_matrix`, :func:`two_sided_p`,
:func:`paired_randomisation_test`) keeps its own draws: ``scipy.stats.permutation_test``
(``permutation_type="samples"``) flips signs by ranking ``rng.random`` draws (exactly, by
enumeration, once ``2**n`` is at most the number of resamples) and its two-sided p doubles the
smaller one-sided p, while this test draws ``rng.integers(0, 2, (permutations, n))`` once per
domain and size (shared by every pair of retrievers tested there), flips the signs of the
per-unit differences of a ratio (``T = sum d / sum den``, averaged over domains) and counts
``|T*| >= |T|``. Neither the draws nor the p-value would be those recorded.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from personalir.common.seeding import rng

# ---------------------------------------------------------------------- draws and intervals


def resample_indices(n: int, samples: int, gen: np.random.Generator) -> np.ndarray:
    """``samples`` x ``n`` indices drawn with replacement from ``range(n)``, one resample per
    row: the draw ``scipy.stats.bootstrap`` makes for one sample."""
    return gen.integers(0, n, (samples, n))


def quantile_interval(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    """The two-sided percentile interval (linear ``np.quantile``); NaN replicates give NaN."""
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(replicates, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    """:func:`quantile_interval` of the replicates that are not NaN (NaN when none is)."""
    values = replicates[~np.isnan(replicates)]
    if values.size == 0:
        return float("nan"), float("nan")
    return quantile_interval(values, confidence)


# ------------------------------------------------------ means and differences (scipy.stats)


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def _difference_of_means(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def _replicates(
    data: Sequence[np.ndarray],
    statistic: Callable,
    samples: int,
    gen: np.random.Generator,
    *,
    paired: bool = False,
    batch: int | None = None,
) -> np.ndarray:
    """The bootstrap distribution of ``statistic`` (vectorised, ``axis=-1``) over ``data``."""
    data = [np.asarray(x, dtype=float) for x in data]
    if any(x.size == 0 for x in data):
        return np.full(samples, np.nan)
    if min(x.size for x in data) >= 2:
        from scipy.stats import DegenerateDataWarning, bootstrap

        with warnings.catch_warnings():
            # scipy's own interval (not used: see the module's docstring) warns on NaN.
            warnings.simplefilter("ignore", DegenerateDataWarning)
            res = bootstrap(
                tuple(data),
                statistic,
                n_resamples=samples,
                batch=batch,
                vectorized=True,
                paired=paired,
                method="percentile",
                rng=gen,
            )
        return np.asarray(res.bootstrap_distribution, dtype=float)
    # A sample of one observation: scipy's draws, by hand.
    if paired:
        idx = resample_indices(data[0].size, samples, gen)
        return statistic(*(x[idx] for x in data))
    step = batch or samples
    parts = []
    for k in range(0, samples, step):
        size = min(step, samples - k)
        parts.append(statistic(*(x[resample_indices(x.size, size, gen)] for x in data)))
    return np.concatenate(parts) if parts else np.empty(0)


def mean_replicates(values: np.ndarray, samples: int, gen: np.random.Generator) -> np.ndarray:
    """``samples`` bootstrap means of ``values`` (resampled with replacement), drawn from
    ``gen`` by ``scipy.stats.bootstrap``; NaN (and no draw) when ``values`` is empty."""
    return _replicates([values], _mean, samples, gen)


def mean_interval(
    values: np.ndarray, samples: int, confidence: float, gen: np.random.Generator
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``values``; NaN when ``values`` is
    empty or ``samples`` is 0."""
    values = np.asarray(values, dtype=float)
    if values.size == 0 or samples <= 0:
        return float("nan"), float("nan")
    return quantile_interval(mean_replicates(values, samples, gen), confidence)


def paired_difference_interval(
    a: np.ndarray, b: np.ndarray, samples: int, confidence: float, gen: np.random.Generator
) -> tuple[float, float]:
    """The percentile bootstrap interval of ``mean(a - b)`` over paired observations (the
    pairs resampled together, ``paired=True``); NaN when there are none or ``samples`` is 0."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.size} and {b.size}")
    if a.size == 0 or samples <= 0:
        return float("nan"), float("nan")
    reps = _replicates([a, b], _mean_difference, samples, gen, paired=True)
    return quantile_interval(reps, confidence)


def difference_of_means_interval(
    x: np.ndarray, y: np.ndarray, samples: int, confidence: float, gen: np.random.Generator
) -> tuple[float, float]:
    """The percentile bootstrap interval of ``mean(x) - mean(y)`` for independent samples,
    drawn one replicate at a time (``batch=1``: a resample of ``x``, then one of ``y``, the
    order of the recorded draws). NaN when either is empty or ``samples`` is 0."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size == 0 or y.size == 0 or samples <= 0:
        return float("nan"), float("nan")
    reps = _replicates([x, y], _difference_of_means, samples, gen, batch=1)
    return quantile_interval(reps, confidence)


def bootstrap_group_means(
    per_set: Mapping[str, np.ndarray],
    *,
    samples: int,
    confidence: float,
    gen: np.random.Generator,
) -> dict[str, dict]:
    """Mean per group (a test set) and the groups' unweighted ``Avg``, with percentile CIs
    from a joint resampling that draws each group's values with replacement independently
    (groups in order, one generator: :func:`mean_replicates`); a group without values makes
    ``Avg`` NaN."""
    nan = float("nan")
    out, boot = {}, []
    for s, vals in per_set.items():
        n = int(vals.size)
        means = mean_replicates(vals, samples, gen)
        boot.append(means)
        if n == 0:
            out[s] = {"difference": nan, "ci_low": nan, "ci_high": nan, "queries": 0}
            continue
        lo, hi = quantile_interval(means, confidence)
        out[s] = {"difference": float(vals.mean()), "ci_low": lo, "ci_high": hi, "queries": n}
    if any(out[s]["queries"] == 0 for s in per_set):
        out["Avg"] = {"difference": nan, "ci_low": nan, "ci_high": nan}
    else:
        lo, hi = quantile_interval(np.mean(np.vstack(boot), axis=0), confidence)
        out["Avg"] = {
            "difference": float(np.mean([out[s]["difference"] for s in per_set])),
            "ci_low": lo,
            "ci_high": hi,
        }
    out["Avg"]["queries"] = int(sum(out[s]["queries"] for s in per_set))
    return out


# ------------------------------------------------------------------- ratios over clusters


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
    idx = resample_indices(n, samples, rng(seed, "bootstrap", *names))
    dens = den[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(dens > 0, num[idx].sum(axis=1) / dens, np.nan)


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


# ------------------------------------------------------------------ paired sign-flip test


def sign_matrix(permutations: int, n: int, seed: int, domain: str) -> np.ndarray:
    """``permutations`` x ``n`` random signs (+1/-1), seeded by domain and size only, so that
    every test of a domain with the same units uses the same draws."""
    draws = rng(seed, "permutation", domain, n).integers(0, 2, size=(permutations, n))
    return (draws * 2 - 1).astype(np.float64)


def two_sided_p(observed: float, null: np.ndarray) -> float:
    """``(1 + #{|T*| >= |T|}) / (1 + len(null))``."""
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
    """(observed difference A - B, two-sided p) for the average of the given domains; each
    domain's table has the per-unit differences ``d`` and denominators ``den``.

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
