"""Agreement between the primary annotators: Krippendorff's alpha and Cohen's kappa.

Alpha uses the ``krippendorff`` package on the reliability matrix annotators x items (each
item holds the labels of its primary annotators; the other annotators' cells are missing),
ordinal on the ordinal scales (the label's position on the scale), nominal otherwise. Kappa is
scikit-learn's ``cohen_kappa_score`` between each item's first and second primary label,
quadratic-weighted on ordinal scales. Both get percentile bootstrap intervals over items.
Where a statistic is undefined (every label the same, fewer than two items) it is NaN and the
``note`` says why; nothing raises.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from personalir.common.bootstrap import percentile_interval, resample_indices
from personalir.common.seeding import rng


def _alpha(matrix: np.ndarray, level: str) -> float:
    import krippendorff

    values = matrix[~np.isnan(matrix)]
    if values.size == 0 or np.unique(values).size < 2:
        return float("nan")
    try:
        return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))
    except (ValueError, ZeroDivisionError):
        return float("nan")


def _kappa(first: np.ndarray, second: np.ndarray, weights, n_labels: int) -> float:
    from sklearn.metrics import cohen_kappa_score

    if first.size < 2 or np.unique(np.concatenate([first, second])).size < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(first, second, weights=weights, labels=list(range(n_labels)))
    return float(value)


def agreement(
    annotations: pd.DataFrame,
    assignment: pd.DataFrame,
    dimension,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> dict:
    """alpha, kappa (with ``*_ci_low``/``*_ci_high``), ``n_items`` with two primary labels,
    ``percent_agreement`` and a ``note``, for one dimension."""
    primary = assignment[assignment["role"].isin(["primary_1", "primary_2"])]
    roles = {(r.item_id, r.annotator): r.role for r in primary.itertuples(index=False)}
    sub = annotations[annotations["dimension"] == dimension.name]
    per_item: dict[str, dict] = {}
    for rec in sub.itertuples(index=False):
        role = roles.get((rec.item_id, rec.annotator))
        if role is not None:
            per_item.setdefault(rec.item_id, {})[role] = (
                rec.annotator,
                dimension.labels.index(rec.label),
            )
    items = sorted(i for i, got in per_item.items() if len(got) == 2)
    annotators = sorted({a for i in items for a, _ in per_item[i].values()})
    index = {a: k for k, a in enumerate(annotators)}
    matrix = np.full((len(annotators), len(items)), np.nan)
    first = np.empty(len(items), dtype=int)
    second = np.empty(len(items), dtype=int)
    for col, item in enumerate(items):
        for who, value in per_item[item].values():
            matrix[index[who], col] = value
        first[col] = per_item[item]["primary_1"][1]
        second[col] = per_item[item]["primary_2"][1]
    level = "ordinal" if dimension.scale == "ordinal" else "nominal"
    weights = "quadratic" if dimension.scale == "ordinal" else None
    n_labels = len(dimension.labels)
    alpha = _alpha(matrix, level) if items else float("nan")
    kappa = _kappa(first, second, weights, n_labels)
    out = {
        "alpha": alpha,
        "alpha_ci_low": float("nan"),
        "alpha_ci_high": float("nan"),
        "kappa": kappa,
        "kappa_ci_low": float("nan"),
        "kappa_ci_high": float("nan"),
        "n_items": len(items),
        "percent_agreement": float((first == second).mean() * 100) if items else float("nan"),
        "level": level,
        "note": "",
    }
    if len(items) < 2:
        out["note"] = "fewer than two items with two primary labels"
        return out
    if np.isnan(alpha) or np.isnan(kappa):
        out["note"] = "undefined: the primaries used a single label"
    # A bootstrap of two agreement statistics over items (not means): the resamples are the
    # draws scipy.stats.bootstrap would make; both statistics are computed on each.
    gen = rng(seed, "agreement-bootstrap", dimension.name)
    alphas, kappas = [], []
    for cols in resample_indices(len(items), n_boot, gen):
        alphas.append(_alpha(matrix[:, cols], level))
        kappas.append(_kappa(first[cols], second[cols], weights, n_labels))
    for name, reps in (("alpha", alphas), ("kappa", kappas)):
        if not np.isnan(out[name]):
            lo, hi = percentile_interval(np.asarray(reps, dtype=float), ci)
            out[f"{name}_ci_low"], out[f"{name}_ci_high"] = lo, hi
    return out
