"""Per-query ranks and measures, and PQB's robustness metrics built from them.

Per query (one row of the per-query Parquet): ``rank`` of the relevant document (the query's
``product``) in the run's order, 0 when the run does not retrieve it; ``rr`` = 1/rank when
1 <= rank <= ``rr_depth`` (200) else 0; ``hit@K`` = 1 when 1 <= rank <= K; and the standard
measures computed by ir_measures (``R@10``, ``RR@200``, ``nDCG@10``, ...) from the same order.
A query of the evaluated set that the run does not list retrieves nothing (all measures 0,
as ``trec_eval -c``).

PQB metrics, each written as a ratio of per-product sums, ``value = sum_p num_p / sum_p den_p``
so that the bootstrap and the paired tests resample products (queries of one product are not
independent):

``Flip@K``      the share of syntactic pairs (a, b) with different top-K hit status,
                ``|hit@K(a) - hit@K(b)| = 1``, every pair counting once, pooled over products
                (the paper's definition; num_p = the product's flipped pairs, den_p = its
                pairs).
``FlipProd@K``  the reference code's variant: per product, the share of its pairs that flip;
                averaged over products, each product weighing the same however many pairs it
                has (num_p = that share, den_p = 1). It equals Flip@K when every product has
                the same number of pairs.
``RRstd@D``     per product with at least two distinct syntactic queries (distinct by user and
                text), the population standard deviation of RR@D over them; averaged over
                products. D = 200: a target ranked below 200 counts RR = 0.
``Deg@K``       mean over writing-error pairs of ``hit@K(clean) - hit@K(error)`` (num_p = the
                product's sum, den_p = its pair count).
``MRRdeg@D``    mean over writing-error pairs of ``RR@D(clean) - RR@D(error)``: MRR(clean) -
                MRR(error) over the same pairs, a miss counting RR = 0.
standard        mean over distinct queries (by product, user and text) of the ir_measures value,
                over all queries (``R@10``) and over each subset of :data:`QUERY_SUBSETS`
                (``R@10[clean]``: the queries as the users wrote them without injected
                errors, i.e. both queries of a syntactic pair, the clean query of a
                writing-error pair and unpaired queries; ``R@10[error]``: the error query
                of each writing-error pair).

A pair counts only when both of its queries were evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from personalir.common.registry import Registry

QUERY_COLUMNS = ("query_id", "domain", "product", "user_id", "pair_id", "kind", "role", "text")
DISTINCT_QUERY = ["product", "user_id", "text"]
#: Query subsets the standard measures are also reported on, in table order ("all" is the
#: measure's plain name): clean queries carry no injected writing error, error queries do.
QUERY_SUBSETS = ("clean", "error", "all")
_SUBSET = re.compile(r"^(?P<measure>.+)\[(?P<subset>[a-z]+)\]$")


def subset_metric(measure: str, subset: str) -> str:
    """Summary name of a standard measure on a query subset: ``R@10[clean]``; ``R@10`` for all."""
    if subset not in QUERY_SUBSETS:
        raise ValueError(f"unknown query subset {subset!r} (expected one of {QUERY_SUBSETS})")
    return measure if subset == "all" else f"{measure}[{subset}]"


def in_subset(frame: pd.DataFrame, subset: str) -> pd.DataFrame:
    """The per-query rows of a query subset (:data:`QUERY_SUBSETS`)."""
    if subset == "all":
        return frame
    is_error = frame["role"] == "error"
    return frame.loc[is_error if subset == "error" else ~is_error]


@dataclass(frozen=True)
class MetricSettings:
    flip_k: tuple[int, ...] = (1, 5, 10, 20)
    deg_k: tuple[int, ...] = (1, 5, 10, 20)
    rr_depth: int = 200
    standard: tuple[str, ...] = ("R@1", "R@5", "R@10", "R@20", "RR@200", "nDCG@10")
    #: Registered PQB metric families computed (``retrieval.metrics.pqb``).
    pqb: tuple[str, ...] = ("Flip", "FlipProd", "RRstd", "Deg", "MRRdeg")

    @classmethod
    def from_config(cls, section: Mapping) -> MetricSettings:
        return cls(
            flip_k=tuple(section.get("flip_k", cls.flip_k)),
            deg_k=tuple(section.get("deg_k", cls.deg_k)),
            rr_depth=int(section.get("rr_depth", cls.rr_depth)),
            standard=tuple(section.get("standard", cls.standard)),
            pqb=tuple(section.get("pqb", cls.pqb)),
        )

    @property
    def hit_ks(self) -> list[int]:
        return sorted(set(self.flip_k) | set(self.deg_k))

    def cutoffs(self, family: str) -> list[int]:
        """The cut-offs of a PQB metric family: the settings field its class names."""
        value = getattr(self, METRICS.get(family).cutoff_key)
        return [int(value)] if isinstance(value, int) else [int(k) for k in value]

    def pqb_metrics(self, table: str | None = None) -> list[str]:
        """``Family@K`` names of the configured PQB metrics in table order (of one table)."""
        return [
            f"{family}@{k}"
            for family in METRICS.ordered(self.pqb)
            if table is None or METRICS.get(family).table == table
            for k in self.cutoffs(family)
        ]

    def effectiveness_metrics(self, subset: str | None = None) -> list[str]:
        """Summary names of the standard measures on every query subset (or on one)."""
        subsets = QUERY_SUBSETS if subset is None else (subset,)
        return [subset_metric(m, s) for s in subsets for m in self.standard]

    def all_metrics(self) -> list[str]:
        return self.pqb_metrics() + self.effectiveness_metrics()


def per_query_frame(
    queries: Sequence[Mapping],
    run: Mapping[str, Sequence[str]],
    settings: MetricSettings,
    evaluated: Iterable[str] | None = None,
) -> pd.DataFrame:
    """One row per evaluated query: identity columns, rank, rr, hit@K and standard measures."""
    import ir_measures

    keep = None if evaluated is None else set(evaluated)
    rows = [q for q in queries if keep is None or q["query_id"] in keep]
    ranks = []
    for q in rows:
        docs = run.get(q["query_id"], ())
        try:
            ranks.append(list(docs).index(q["product"]) + 1)
        except ValueError:
            ranks.append(0)
    frame = pd.DataFrame({c: [q[c] for q in rows] for c in QUERY_COLUMNS})
    rank = np.asarray(ranks, dtype=np.int64)
    frame["rank"] = rank
    found = (rank >= 1) & (rank <= settings.rr_depth)
    frame["rr"] = np.where(found, 1.0 / np.maximum(rank, 1), 0.0)
    for k in settings.hit_ks:
        frame[f"hit@{k}"] = ((rank >= 1) & (rank <= k)).astype(np.int8)
    if settings.standard:
        measures = [ir_measures.parse_measure(m) for m in settings.standard]
        qrels = {q["query_id"]: {q["product"]: 1} for q in rows}
        # Scores encode the run's order exactly, so ir_measures cannot reorder ties.
        scored = {
            q["query_id"]: {d: float(len(docs) - i) for i, d in enumerate(docs)}
            for q in rows
            if (docs := run.get(q["query_id"]))
        }
        values = {str(m): dict.fromkeys(frame["query_id"], 0.0) for m in measures}
        for metric in ir_measures.iter_calc(measures, qrels, scored):
            values[str(metric.measure)][metric.query_id] = float(metric.value)
        for name in settings.standard:
            key = str(ir_measures.parse_measure(name))
            frame[name] = frame["query_id"].map(values[key]).astype(float)
    return frame


# --- metric definitions -------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """A metric as per-product (num, den) sums: value = sum(num) / sum(den)."""

    name: str
    lower_is_more_robust: bool = True
    params: dict = field(default_factory=dict)

    # Facts a registered PQB metric family carries (checked at registration):
    #: column header in the tables (``label@K``; the label alone at the RR depth)
    label: ClassVar[str]
    #: position in ``pqb_metrics`` and the tables (lower first)
    order: ClassVar[int]
    #: the ``retrieval.metrics`` key holding its cut-offs K (``flip_k``, ``deg_k``, ``rr_depth``)
    cutoff_key: ClassVar[str]
    #: the table it is printed in (``flip_rrstd``: syntactic pairs, ``degradation``: errors;
    #: None: in no table, only in the summary CSV and the significance tests)
    table: ClassVar[str | None]

    def units(self, frame: pd.DataFrame) -> pd.DataFrame:  # pragma: no cover - interface
        raise NotImplementedError

    def items(self, frame: pd.DataFrame) -> int:  # pragma: no cover - interface
        """How many pairs or queries the value averages (reported next to it)."""
        raise NotImplementedError


METRICS: Registry[type[Metric]] = Registry(
    "metric",
    required=("label", "order", "cutoff_key", "table"),
    package="personalir.retrieval",
    symbol="METRICS",
)
_NAME = re.compile(r"^(?P<family>[A-Za-z]+)@(?P<k>\d+)$")


def query_pairs(frame: pd.DataFrame, kind: str, value: str) -> pd.DataFrame:
    """Pairs of ``kind`` with both roles evaluated: columns product, pair_id, <role values>."""
    first, second = {"syntactic": ("a", "b"), "writing_error": ("clean", "error")}[kind]
    sub = frame.loc[frame["kind"] == kind, ["product", "pair_id", "role", value]]
    left = sub.loc[sub["role"] == first, ["product", "pair_id", value]]
    right = sub.loc[sub["role"] == second, ["pair_id", value]]
    pairs = left.merge(right, on="pair_id", how="inner", suffixes=("_1", "_2"))
    pairs = pairs.rename(columns={f"{value}_1": first, f"{value}_2": second})
    return pairs.sort_values(["product", "pair_id"], kind="stable").reset_index(drop=True)


def empty_units() -> pd.DataFrame:
    """The units of a metric with nothing to average (its value is NaN)."""
    return pd.DataFrame({"product": pd.Series(dtype=str), "num": [], "den": []})


def _syntactic_flips(frame: pd.DataFrame, k: int) -> pd.DataFrame:
    """Evaluated syntactic pairs with ``flip`` = 1 when exactly one query hits at K."""
    pairs = query_pairs(frame, "syntactic", f"hit@{k}")
    pairs["flip"] = (pairs["a"] - pairs["b"]).abs().astype(float)
    return pairs


@METRICS.register("Flip")
@dataclass(frozen=True)
class FlipAtK(Metric):
    """The paper's Flip@K: the share of query pairs with different top-K hit status."""

    label, order, cutoff_key, table = "Flip", 10, "flip_k", "flip_rrstd"

    def items(self, frame: pd.DataFrame) -> int:
        return len(query_pairs(frame, "syntactic", "rr"))

    def units(self, frame: pd.DataFrame) -> pd.DataFrame:
        # A product's flipped pairs over its pairs: the pooled ratio counts each pair once.
        pairs = _syntactic_flips(frame, self.params["k"])
        if pairs.empty:
            return empty_units()
        out = pairs.groupby("product", sort=True)["flip"].agg(["sum", "count"]).reset_index()
        return out.rename(columns={"sum": "num", "count": "den"}).astype({"den": float})


@METRICS.register("FlipProd")
@dataclass(frozen=True)
class FlipPerProduct(Metric):
    """The reference code's Flip@K: per-product flip shares, averaged over products."""

    label, order, cutoff_key, table = "Flip (per product)", 11, "flip_k", None

    def items(self, frame: pd.DataFrame) -> int:
        return len(query_pairs(frame, "syntactic", "rr"))

    def units(self, frame: pd.DataFrame) -> pd.DataFrame:
        pairs = _syntactic_flips(frame, self.params["k"])
        if pairs.empty:
            return empty_units()
        out = pairs.groupby("product", sort=True)["flip"].mean().rename("num").reset_index()
        out["den"] = 1.0
        return out


@METRICS.register("RRstd")
@dataclass(frozen=True)
class RRStd(Metric):
    label, order, cutoff_key, table = "RRstd", 20, "rr_depth", "flip_rrstd"

    def items(self, frame: pd.DataFrame) -> int:
        distinct = frame.loc[frame["kind"] == "syntactic"].drop_duplicates(DISTINCT_QUERY)
        counts = distinct.groupby("product").size()
        return int(counts[counts >= 2].sum())

    def units(self, frame: pd.DataFrame) -> pd.DataFrame:
        syn = frame.loc[frame["kind"] == "syntactic"]
        distinct = syn.drop_duplicates(DISTINCT_QUERY)
        stats = distinct.groupby("product", sort=True)["rr"].agg(["count", lambda s: s.std(ddof=0)])
        stats.columns = ["count", "std"]
        stats = stats[stats["count"] >= 2]
        if stats.empty:
            return empty_units()
        return pd.DataFrame(
            {"product": stats.index.to_numpy(), "num": stats["std"].to_numpy(), "den": 1.0}
        )


def _degradation_units(frame: pd.DataFrame, value: str) -> pd.DataFrame:
    pairs = query_pairs(frame, "writing_error", value)
    if pairs.empty:
        return empty_units()
    pairs["d"] = pairs["clean"] - pairs["error"]
    out = pairs.groupby("product", sort=True)["d"].agg(["sum", "count"]).reset_index()
    return out.rename(columns={"sum": "num", "count": "den"}).astype({"den": float})


@METRICS.register("Deg")
@dataclass(frozen=True)
class DegAtK(Metric):
    label, order, cutoff_key, table = "Deg", 30, "deg_k", "degradation"

    def items(self, frame: pd.DataFrame) -> int:
        return len(query_pairs(frame, "writing_error", "rr"))

    def units(self, frame: pd.DataFrame) -> pd.DataFrame:
        return _degradation_units(frame, f"hit@{self.params['k']}")


@METRICS.register("MRRdeg")
@dataclass(frozen=True)
class MRRDeg(Metric):
    label, order, cutoff_key, table = "MRRdeg", 40, "rr_depth", "degradation"

    def items(self, frame: pd.DataFrame) -> int:
        return len(query_pairs(frame, "writing_error", "rr"))

    def units(self, frame: pd.DataFrame) -> pd.DataFrame:
        return _degradation_units(frame, "rr")


@dataclass(frozen=True)
class StandardMeasure(Metric):
    """An ir_measures column of the per-query frame, averaged over distinct queries (of the
    query subset ``params["subset"]``, all by default)."""

    @property
    def column(self) -> str:
        return self.params.get("measure", self.name)

    def _distinct(self, frame: pd.DataFrame) -> pd.DataFrame:
        return in_subset(frame, self.params.get("subset", "all")).drop_duplicates(DISTINCT_QUERY)

    def items(self, frame: pd.DataFrame) -> int:
        return len(self._distinct(frame))

    def units(self, frame: pd.DataFrame) -> pd.DataFrame:
        if self.column not in frame.columns:
            raise KeyError(f"per-query frame has no column {self.column!r}")
        distinct = self._distinct(frame)
        out = distinct.groupby("product", sort=True)[self.column].agg(["sum", "count"])
        out = out.reset_index().rename(columns={"sum": "num", "count": "den"})
        return out.astype({"den": float})


def parse_metric(name: str, rr_depth: int = 200) -> Metric:
    """``Flip@10``, ``FlipProd@10``, ``RRstd@200``, ``Deg@5``, ``MRRdeg@200``; anything else is
    ir_measures', optionally on a query subset (``R@10[clean]``, ``R@10[error]``)."""
    m = _NAME.match(name)
    if m and m.group("family") in METRICS:
        family, k = m.group("family"), int(m.group("k"))
        if METRICS.get(family).cutoff_key == "rr_depth" and k != rr_depth:
            raise ValueError(
                f"metric {name!r}: the per-query frame holds RR at depth {rr_depth}, not {k}"
            )
        return METRICS.get(family)(name=name, params={"k": k})
    sub = _SUBSET.match(name)
    if sub:
        subset = sub.group("subset")
        if subset not in QUERY_SUBSETS or subset == "all":
            raise ValueError(f"metric {name!r}: unknown query subset (expected clean or error)")
        params = {"measure": sub.group("measure"), "subset": subset}
        return StandardMeasure(name=name, lower_is_more_robust=False, params=params)
    return StandardMeasure(name=name, lower_is_more_robust=False)


def metric_header(name: str) -> str:
    """Column header of a metric: ``label@K``, the label alone when K is the RR depth (the
    caption names the depth); ir_measures names as they are."""
    m = _NAME.match(name)
    if not (m and m.group("family") in METRICS):
        return name
    cls = METRICS.get(m.group("family"))
    return cls.label if cls.cutoff_key == "rr_depth" else f"{cls.label}@{m.group('k')}"


def metric_value(frame: pd.DataFrame, name: str, rr_depth: int = 200) -> float:
    units = parse_metric(name, rr_depth).units(frame)
    den = units["den"].sum()
    return float(units["num"].sum() / den) if den > 0 else float("nan")


def restrict_to_common(frames: Sequence[pd.DataFrame]) -> list[pd.DataFrame]:
    """Each frame limited to the query ids evaluated in all of them (for paired comparisons)."""
    common = set(frames[0]["query_id"])
    for f in frames[1:]:
        common &= set(f["query_id"])
    return [f[f["query_id"].isin(common)].reset_index(drop=True) for f in frames]
