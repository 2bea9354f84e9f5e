"""The six validation measures of PQB's LLM-vs-human table, from any set of labels.

The same function scores the judge's labels and the adjudicated human labels, so the two
columns are one computation on two inputs:

==========================  ==================================================================
Naturalness (1-5)           mean rating over the rated queries
Syntactic quality (1-5)     mean rating
Syntactic attribution       correct attributions among the decisive ones (A or B), percent;
                            chance is 50 (who is "A" is a fair coin per item)
No-preference rate          share of attribution answers that are no_preference, percent
Error strict pass           share of writing-error pairs judged strict_pass, percent
Error acceptable            share judged strict_pass or acceptable, percent
==========================  ==================================================================

Each value comes with the number of labels it rests on and a percentile bootstrap interval
over items (seeded).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from personalir.common.bootstrap import mean_interval
from personalir.common.seeding import rng

#: (row name as in the paper's table, dimension, unit)
MEASURES = (
    ("Naturalness (1-5)", "naturalness", "mean"),
    ("Syntactic quality (1-5)", "syntactic_quality", "mean"),
    ("Syntactic attribution", "attribution", "percent"),
    ("No-preference rate", "attribution", "percent"),
    ("Error strict pass", "error_consistency", "percent"),
    ("Error acceptable", "error_consistency", "percent"),
)


def _values(name: str, labels: pd.Series, truth: pd.Series | None) -> np.ndarray:
    """Per-item values whose mean is the measure (NaN: the item does not count)."""
    if name in ("Naturalness (1-5)", "Syntactic quality (1-5)"):
        return labels.astype(int).to_numpy(dtype=float)
    if name == "Syntactic attribution":
        decisive = labels.isin(["A", "B"]).to_numpy()
        correct = (labels.to_numpy() == truth.to_numpy()).astype(float) * 100.0
        return np.where(decisive, correct, np.nan)
    if name == "No-preference rate":
        return (labels == "no_preference").to_numpy(dtype=float) * 100.0
    if name == "Error strict pass":
        return (labels == "strict_pass").to_numpy(dtype=float) * 100.0
    if name == "Error acceptable":
        return labels.isin(["strict_pass", "acceptable"]).to_numpy(dtype=float) * 100.0
    raise KeyError(name)


def measures(
    labels: pd.DataFrame,
    key: pd.DataFrame,
    *,
    bootstrap: int,
    confidence: float,
    seed: int,
    items=None,
) -> pd.DataFrame:
    """One row per measure: value, n, ci_low, ci_high.

    ``labels``: item_id, dimension, label (None/NaN labels, e.g. failed judge answers or
    unresolved disagreements, are left out and not counted in n). ``key``: item_id and
    attribution_truth. ``items``: restrict to these item ids (e.g. the human sample).
    """
    frame = labels.dropna(subset=["label"])
    if items is not None:
        frame = frame[frame["item_id"].isin(set(items))]
    truth = key.set_index("item_id")["attribution_truth"] if "attribution_truth" in key else None
    rows = []
    for name, dim, unit in MEASURES:
        sub = frame[frame["dimension"] == dim]
        t = truth.reindex(sub["item_id"]) if truth is not None else None
        values = _values(name, sub["label"].astype(str), t) if len(sub) else np.array([])
        values = values[~np.isnan(values)]
        n = int(values.size)
        value = float(values.mean()) if n else float("nan")
        low = high = float("nan")
        if n > 1 and bootstrap > 0:
            gen = rng(seed, "validation-measure", name)
            low, high = mean_interval(values, bootstrap, confidence, gen)
        rows.append(
            {
                "measure": name,
                "dimension": dim,
                "unit": unit,
                "value": value,
                "n": n,
                "ci_low": low,
                "ci_high": high,
            }
        )
    return pd.DataFrame(rows)


def label_shares(labels: pd.DataFrame, dimension: str, scale) -> pd.Series:
    """Share of each label of ``scale`` among a dimension's labels (for the figure)."""
    sub = labels[(labels["dimension"] == dimension)].dropna(subset=["label"])
    counts = sub["label"].astype(str).value_counts()
    total = counts.sum()
    return pd.Series(
        [counts.get(label, 0) / total if total else np.nan for label in scale], index=list(scale)
    )
