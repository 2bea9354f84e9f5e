"""Summaries over retrievers: every metric per domain and averaged over domains, with
bootstrap confidence intervals, and paired randomisation tests between retrievers.

Inputs are the per-query metric tables (one per retriever and domain). Outputs:

``summary``       retriever, label, family, metric, domain (or ``Average``), value, ci_low,
                  ci_high, products (the resampling units), items (the pairs or distinct
                  queries the value averages)
``significance``  metric, domain, retriever_a, retriever_b, difference (a - b), p_value,
                  p_holm (Holm over the retriever pairs of that metric and domain), significant,
                  products, queries (the common evaluated queries the test used); for the PQB
                  metrics and the standard measures on all queries (their clean/error
                  variants have intervals in the summary, no tests: they would double the
                  cost of the tests)
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from personalir.common.bootstrap import sign_matrix, two_sided_p
from personalir.common.io import atomic_open, read_parquet
from personalir.retrieval.metrics import MetricSettings, parse_metric, restrict_to_common
from personalir.retrieval.stats import bootstrap_summary, holm, paired_differences

AVERAGE = "Average"


@dataclass(frozen=True)
class SummarySettings:
    samples: int = 1000
    confidence: float = 0.95
    permutations: int = 5000
    alpha: float = 0.05
    seed: int = 0

    @classmethod
    def from_config(cls, section: Mapping, seed: int) -> SummarySettings:
        boot = section.get("bootstrap", {})
        sig = section.get("significance", {})
        return cls(
            samples=int(boot.get("samples", cls.samples)),
            confidence=float(boot.get("confidence", cls.confidence)),
            permutations=int(sig.get("permutations", cls.permutations)),
            alpha=float(sig.get("alpha", cls.alpha)),
            seed=seed,
        )


def load_frames(paths: Mapping[tuple[str, str], str]) -> dict[tuple[str, str], pd.DataFrame]:
    return {key: read_parquet(path) for key, path in paths.items()}


def summarize(
    frames: Mapping[tuple[str, str], pd.DataFrame],
    names: Sequence[str],
    domains: Sequence[str],
    metrics: MetricSettings,
    settings: SummarySettings,
) -> pd.DataFrame:
    rows = []
    for name in names:
        first = frames[(name, domains[0])]
        label = first["label"].iloc[0] if len(first) else name
        family = first["family"].iloc[0] if len(first) else "external"
        for metric_name in metrics.all_metrics():
            metric = parse_metric(metric_name, metrics.rr_depth)
            units = {d: metric.units(frames[(name, d)]) for d in domains}
            items = {d: metric.items(frames[(name, d)]) for d in domains}
            items[AVERAGE] = sum(items.values())
            for row in bootstrap_summary(
                units,
                samples=settings.samples,
                confidence=settings.confidence,
                seed=settings.seed,
                names=(name, metric_name),
                average_label=AVERAGE,
            ):
                rows.append(
                    {
                        "retriever": name,
                        "label": label,
                        "family": family,
                        "metric": metric_name,
                        **row,
                        "items": items[row["domain"]],
                    }
                )
    return pd.DataFrame(rows)


class _SignCache:
    """One matrix of random signs per (domain, number of products), shared by all tests."""

    def __init__(self, permutations: int, seed: int):
        self.permutations = permutations
        self.seed = seed
        self._cache: dict[tuple[str, int], np.ndarray] = {}

    def __call__(self, domain: str, n: int) -> np.ndarray:
        if (domain, n) not in self._cache:
            self._cache[(domain, n)] = sign_matrix(self.permutations, n, self.seed, domain)
        return self._cache[(domain, n)]


def significance(
    frames: Mapping[tuple[str, str], pd.DataFrame],
    names: Sequence[str],
    domains: Sequence[str],
    metrics: MetricSettings,
    settings: SummarySettings,
) -> pd.DataFrame:
    """Paired randomisation tests for every pair of retrievers, metric and domain."""
    signs = _SignCache(settings.permutations, settings.seed)
    rows = []
    tested = metrics.pqb_metrics() + metrics.effectiveness_metrics("all")
    metric_objs = [parse_metric(m, metrics.rr_depth) for m in tested]
    cache: dict[tuple, pd.DataFrame] = {}

    def units(name: str, domain: str, frame: pd.DataFrame, metric) -> pd.DataFrame:
        # Most pairs of retrievers share every query: one unit table per query set.
        key = (name, domain, metric.name, frozenset(frame["query_id"]))
        if key not in cache:
            cache[key] = metric.units(frame)
        return cache[key]

    for a, b in itertools.combinations(names, 2):
        common = {d: restrict_to_common([frames[(a, d)], frames[(b, d)]]) for d in domains}
        for metric in metric_objs:
            observed, nulls, sizes = {}, {}, {}
            for d in domains:
                fa, fb = common[d]
                diffs = paired_differences(units(a, d, fa, metric), units(b, d, fb, metric))
                den = float(diffs["den"].sum())
                sizes[d] = (len(diffs), len(fa))
                if den <= 0:
                    continue
                dvec = diffs["d"].to_numpy(dtype=float)
                observed[d] = dvec.sum() / den
                nulls[d] = signs(d, dvec.size) @ dvec / den
                rows.append(_row(metric.name, d, a, b, observed[d], nulls[d], sizes[d]))
            if len(domains) > 1 and len(observed) == len(domains):
                t_avg = float(np.mean(list(observed.values())))
                null_avg = np.mean(np.vstack(list(nulls.values())), axis=0)
                size = tuple(map(sum, zip(*sizes.values(), strict=True)))
                rows.append(_row(metric.name, AVERAGE, a, b, t_avg, null_avg, size))
    out = pd.DataFrame(
        rows,
        columns=[
            "metric",
            "domain",
            "retriever_a",
            "retriever_b",
            "difference",
            "p_value",
            "products",
            "queries",
        ],
    )
    out["p_holm"] = np.nan
    for _, idx in out.groupby(["metric", "domain"], sort=False).groups.items():
        out.loc[idx, "p_holm"] = holm(out.loc[idx, "p_value"].tolist())
    out["significant"] = out["p_holm"] < settings.alpha
    return out


def _row(metric, domain, a, b, observed, null, size) -> dict:
    return {
        "metric": metric,
        "domain": domain,
        "retriever_a": a,
        "retriever_b": b,
        "difference": float(observed),
        "p_value": two_sided_p(float(observed), null),
        "products": int(size[0]),
        "queries": int(size[1]),
    }


SUMMARY_TEXT_COLUMNS = {c: str for c in ("retriever", "label", "family", "metric", "domain")}


def read_summary(path) -> pd.DataFrame:
    """The summary CSV with its name columns kept as text (a retriever may be named "1")."""
    return pd.read_csv(
        path,
        dtype=SUMMARY_TEXT_COLUMNS,
        keep_default_na=False,
        na_values={"value": ["", "nan"], "ci_low": ["", "nan"], "ci_high": ["", "nan"]},
    )


def write_csv(path, frame: pd.DataFrame) -> None:

    with atomic_open(path) as fh:
        frame.to_csv(fh, index=False, float_format="%.6f", lineterminator="\n")
