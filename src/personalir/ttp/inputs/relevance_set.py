"""The history-free Relevance test set (TTP paper, Table 4's last column) and its Spearman.

A Relevance set is graded ``(query, item)`` pairs on three levels, scored by a method without
any user history; the measure is Spearman's correlation between the method's scores and the
labels, over all pairs.

On the sample world the set is built from the planted truth (:func:`build_relevance_pairs`):
for each test search (the test split only, so no pair repeats a training query), its query
as the user typed it (misspellings kept) is paired with

- ``2``  its target (the product the user bought);
- ``1``  products of the target's type (same ``product_type``, other brand, colour or size):
  what the query asks for in kind, not in detail;
- ``0``  products of other types.

At paper scale the set is a configured file in the same format (:func:`read_relevance_pairs`):
JSON Lines, one object per pair with ``query_id``, ``query``, ``item_id`` and ``label`` in
{0, 1, 2}; a malformed line is named ``file:line: reason``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from personalir.common.seeding import derive_seed

LEVELS = (0, 1, 2)


class RelevanceSetError(ValueError):
    """A Relevance set that breaks the format; the message says where."""


@dataclass(frozen=True)
class GradedPair:
    query_id: str
    query: str
    item_id: str
    label: int

    def to_record(self) -> dict:
        return asdict(self)


def build_relevance_pairs(
    examples: Iterable,
    products: Mapping[str, Mapping],
    *,
    per_level: int,
    seed: int,
    split: str = "test",
) -> tuple[list[GradedPair], dict]:
    """Graded pairs for the searches of ``examples`` in ``split`` (see the module docstring).

    ``examples``: TTP examples (``example_id``, ``query``, ``target``, ``split``);
    ``products``: the planted truth's products (``product_type`` each). Up to ``per_level``
    items of level 1 and of level 0 are drawn per search, seeded by
    ``(seed, "relevance_set", example_id)``. Returns the pairs and a report of what was used
    and left out (searches whose target has no type, levels with fewer candidates than asked).
    """
    if per_level < 1:
        raise ValueError(f"per_level must be at least 1, got {per_level}")
    by_type: dict[str, list[str]] = {}
    for asin in sorted(products):
        kind = products[asin].get("product_type")
        if kind:
            by_type.setdefault(str(kind), []).append(asin)
    everything = sorted(a for ids in by_type.values() for a in ids)
    pairs: list[GradedPair] = []
    report = {"searches": 0, "left_out": {"not_in_split": 0, "target_without_type": 0}}
    short = {1: 0, 0: 0}
    for ex in examples:
        if ex.split != split:
            report["left_out"]["not_in_split"] += 1
            continue
        kind = (products.get(ex.target) or {}).get("product_type")
        if not kind:
            report["left_out"]["target_without_type"] += 1
            continue
        rng = np.random.default_rng(derive_seed(seed, "relevance_set", ex.example_id))
        same = [a for a in by_type[str(kind)] if a != ex.target]
        other = [a for a in everything if a not in set(by_type[str(kind)])]
        pairs.append(GradedPair(ex.example_id, ex.query, ex.target, 2))
        for label, pool in ((1, same), (0, other)):
            take = min(per_level, len(pool))
            short[label] += take < per_level
            for i in sorted(rng.choice(len(pool), size=take, replace=False).tolist()):
                pairs.append(GradedPair(ex.example_id, ex.query, pool[i], label))
        report["searches"] += 1
    report["pairs"] = len(pairs)
    report["by_label"] = {str(k): sum(p.label == k for p in pairs) for k in LEVELS}
    report["searches_short_of_level"] = {str(k): v for k, v in sorted(short.items())}
    report["per_level"] = per_level
    report["split"] = split
    return pairs, report


def read_relevance_pairs(path: str | Path) -> list[GradedPair]:
    """A Relevance set file (JSON Lines); every problem names ``file:line``."""
    path = Path(path)
    pairs: list[GradedPair] = []
    seen: set[tuple[str, str]] = set()
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            where = f"{path}:{lineno}"
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RelevanceSetError(f"{where}: invalid JSON: {exc.msg}") from None
            if not isinstance(rec, dict):
                raise RelevanceSetError(f"{where}: expected a JSON object")
            for key in ("query_id", "query", "item_id"):
                if not isinstance(rec.get(key), str) or not rec[key].strip():
                    raise RelevanceSetError(f"{where}: {key!r} must be a non-empty string")
            label = rec.get("label")
            if isinstance(label, bool) or not isinstance(label, int) or label not in LEVELS:
                raise RelevanceSetError(f"{where}: 'label' must be 0, 1 or 2, got {label!r}")
            key = (rec["query_id"], rec["item_id"])
            if key in seen:
                raise RelevanceSetError(f"{where}: pair {key} given twice")
            seen.add(key)
            pairs.append(GradedPair(rec["query_id"], rec["query"], rec["item_id"], label))
    if not pairs:
        raise RelevanceSetError(f"{path}: no pairs")
    return pairs


def spearman(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """Spearman's rank correlation of ``scores`` with ``labels`` (ties take average ranks).

    None where it is undefined: fewer than two pairs, or constant scores or labels.
    """
    from scipy.stats import spearmanr

    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    if scores.shape != labels.shape:
        raise ValueError(f"{scores.shape[0]} scores for {labels.shape[0]} labels")
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite")
    if len(scores) < 2 or np.ptp(scores) == 0 or np.ptp(labels) == 0:
        return None
    rho = float(spearmanr(scores, labels).statistic)
    return None if math.isnan(rho) else rho
