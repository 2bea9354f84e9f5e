"""Table 4's Relevance column: a method's history-free scores of graded pairs, and Spearman.

Each distinct query of a Relevance set (:mod:`personalir.ttp.inputs.relevance_set`) becomes a search
with **no history** (an empty selected history; TTP then writes its rewrite from the query
alone, as the paper evaluates it). The method ranks the whole item corpus for it, so every
item has a score; a pair's score is its item's score for its query. An item a method does
not return at all (a lexical method gives no score to an item without a query term) scores
below every item it returned for that query. Spearman's correlation between the scores and
the labels over all pairs is the column's value (the paper reports it x 100).

Its confidence interval is a percentile bootstrap over *queries* (a query's pairs are drawn
together, since they share one ranking): :func:`bootstrap_spearman`, which also gives the
paired CI of a difference between two methods' Spearman on the same pairs (the Table 4
claims). Each output keeps every pair's score (``scored``), so claims can pair methods.

Pairs whose item is not in the corpus are left out, counted in the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from personalir.common.bootstrap import quantile_interval, resample_indices
from personalir.common.io import read_json
from personalir.ttp.inputs.data import Example
from personalir.ttp.inputs.relevance_set import GradedPair, spearman

SOURCE = "relevance"


def relevance_examples(pairs: Sequence[GradedPair], domain: str) -> list[Example]:
    """One history-free search per distinct query of ``pairs`` (in first-seen order)."""
    searches: dict[str, Example] = {}
    for p in pairs:
        ex = searches.get(p.query_id)
        if ex is None:
            searches[p.query_id] = Example(
                example_id=p.query_id,
                source=SOURCE,
                domain=domain,
                user_id=f"{SOURCE}:{p.query_id}",
                query=p.query,
                target=p.item_id,
                label="Relevance",
                split="test",
                history=[],
                selected_history=[],
            )
        elif ex.query != p.query:
            raise ValueError(f"query {p.query_id!r} has two texts: {ex.query!r} and {p.query!r}")
    return list(searches.values())


def pair_scores(
    ranking: Mapping[str, Sequence[tuple[str, float]]], pairs: Sequence[GradedPair]
) -> tuple[np.ndarray, int]:
    """Each pair's score from a ranking (query id -> (item id, score), best first), and how
    many pairs' items the ranking did not return (scored below the query's lowest score)."""
    by_query = {q: dict(items) for q, items in ranking.items()}
    scores = np.empty(len(pairs), dtype=float)
    missing = 0
    for i, p in enumerate(pairs):
        got = by_query.get(p.query_id, {})
        if p.item_id in got:
            scores[i] = got[p.item_id]
        else:
            missing += 1
            scores[i] = (min(got.values()) if got else 0.0) - 1.0
    return scores, missing


def spearman_draws(
    query_ids: Sequence[str],
    labels: Sequence[int],
    terms: Sequence[tuple[Sequence[float], float]],
    *,
    samples: int,
    gen: np.random.Generator,
) -> tuple[float | None, np.ndarray]:
    """``sum(weight * Spearman(scores, labels))`` over ``terms`` (``(scores, weight)``, each
    scores array aligned with ``query_ids`` and ``labels``) on the pairs as given (None when a
    term is undefined), and ``samples`` bootstrap draws of it that resample queries with
    replacement, all of a drawn query's pairs coming along (NaN where a term is undefined).

    A cluster bootstrap of a rank correlation, not a mean: the resamples are the draws
    ``scipy.stats.bootstrap`` would make (:func:`resample_indices`, sorted query ids), the
    statistic is evaluated here, one resample at a time."""
    labels = np.asarray(labels, dtype=float)
    columns = [(np.asarray(s, dtype=float), float(w)) for s, w in terms]
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(query_ids):
        groups.setdefault(str(q), []).append(i)
    blocks = [np.asarray(groups[q]) for q in sorted(groups)]

    def contrast(idx: np.ndarray | None) -> float | None:
        total = 0.0
        for scores, weight in columns:
            picked = (scores, labels) if idx is None else (scores[idx], labels[idx])
            rho = spearman(*picked)
            if rho is None:
                return None
            total += weight * rho
        return total

    value = contrast(None)
    draws = np.full(max(int(samples), 0), np.nan)
    if blocks:
        picks = resample_indices(len(blocks), len(draws), gen)
        for k, row in enumerate(picks):
            got = contrast(np.concatenate([blocks[j] for j in row]))
            if got is not None:
                draws[k] = got
    return value, draws


def percentile_ci(draws: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    """The percentile interval of the defined draws; None when fewer than half are defined."""
    kept = draws[np.isfinite(draws)]
    if not len(draws) or len(kept) * 2 < len(draws):
        return None, None
    return quantile_interval(kept, confidence)


def bootstrap_spearman(
    query_ids: Sequence[str],
    labels: Sequence[int],
    terms: Sequence[tuple[Sequence[float], float]],
    *,
    samples: int,
    confidence: float,
    gen: np.random.Generator,
) -> dict:
    """A percentile bootstrap over queries of a Spearman contrast (:func:`spearman_draws`):
    ``{"value", "ci_low", "ci_high", "samples", "undefined_samples"}``; a resample where a
    term is undefined (constant scores or labels) is skipped and counted; the CI is None
    when fewer than half the resamples are defined (or ``samples`` is 0)."""
    value, draws = spearman_draws(query_ids, labels, terms, samples=samples, gen=gen)
    lo, hi = percentile_ci(draws, confidence)
    return {
        "value": value,
        "ci_low": lo,
        "ci_high": hi,
        "samples": int(samples),
        "undefined_samples": int(len(draws) - np.isfinite(draws).sum()),
    }


def paired_spearman_difference(
    a: Mapping[str, Mapping],
    b: Mapping[str, Mapping],
    *,
    samples: int,
    confidence: float,
    gen: np.random.Generator,
) -> dict | None:
    """Two methods' Relevance outputs per example set (set -> the ``ttp_relevance`` record
    with ``scored``): the mean over the sets both have of Spearman(a) - Spearman(b) on the
    same pairs, and its paired bootstrap CI (each set's queries resampled independently, the
    sets' differences averaged per draw). None when a set's difference is undefined or the
    two methods share no set."""
    sets = [s for s in sorted(a) if s in b]
    if not sets:
        return None
    values, draws = [], []
    for s in sets:
        mine = {(q, i): (lab, sc) for q, i, lab, sc in a[s]["scored"]}
        theirs = {(q, i): sc for q, i, _lab, sc in b[s]["scored"]}
        keys = [k for k in mine if k in theirs]
        if len(keys) != len(mine) or len(keys) != len(theirs):
            raise ValueError(f"set {s}: the two Relevance outputs score different pairs")
        value, d = spearman_draws(
            [k[0] for k in keys],
            [mine[k][0] for k in keys],
            [([mine[k][1] for k in keys], 1.0), ([theirs[k] for k in keys], -1.0)],
            samples=samples,
            gen=gen,
        )
        if value is None:
            return None
        values.append(value)
        draws.append(d)
    mean_draws = np.mean(np.vstack(draws), axis=0)
    lo, hi = percentile_ci(mean_draws, confidence)
    return {"difference": float(np.mean(values)), "ci_low": lo, "ci_high": hi, "sets": sets}


def relevance_of_ranking(
    ranking: Mapping[str, Sequence[tuple[str, float]]],
    pairs: Sequence[GradedPair],
    *,
    samples: int = 0,
    confidence: float = 0.95,
    gen: np.random.Generator | None = None,
) -> dict:
    """Spearman of a ranking's pair scores with the labels, its bootstrap CI over queries
    (``samples`` resamples; none when 0), the mean score per label and every pair's score."""
    scores, missing = pair_scores(ranking, pairs)
    labels = np.array([p.label for p in pairs])
    rho = spearman(scores, labels)
    boot = bootstrap_spearman(
        [p.query_id for p in pairs],
        labels,
        [(scores, 1.0)],
        samples=samples,
        confidence=confidence,
        gen=gen if gen is not None else np.random.default_rng(0),
    )
    return {
        "spearman": rho,
        "ci_low": boot["ci_low"],
        "ci_high": boot["ci_high"],
        "bootstrap": {
            "samples": boot["samples"],
            "undefined_samples": boot["undefined_samples"],
            "confidence": confidence,
            "unit": "query (its pairs drawn together)",
        },
        "pairs": len(pairs),
        "queries": len({p.query_id for p in pairs}),
        "pairs_not_returned": missing,
        "mean_score_by_label": {
            str(k): float(scores[labels == k].mean()) for k in sorted(set(labels.tolist()))
        },
        "scored": [
            [p.query_id, p.item_id, int(p.label), float(s)]
            for p, s in zip(pairs, scores, strict=True)
        ],
    }


def split_known(pairs: Sequence[GradedPair], item_ids) -> tuple[list[GradedPair], int]:
    """The pairs whose item is in the corpus, and how many were left out."""
    known = set(item_ids)
    kept = [p for p in pairs if p.item_id in known]
    return kept, len(pairs) - len(kept)


def read_relevance_records(paths: Sequence) -> dict[str, dict[str, dict]]:
    """Method -> example set -> its ``ttp_relevance`` record, from the rule's outputs
    (``<results>/ttp/<set>/relevance/<method>.json``: the set is the folder's parent)."""
    from pathlib import Path

    out: dict[str, dict[str, dict]] = {}
    for path in paths:
        path = Path(path)
        rec = read_json(path)
        example_set = path.parent.parent.name
        if example_set in out.setdefault(rec["method"], {}):
            raise ValueError(
                f"{path}: a second Relevance output of {rec['method']} for {example_set}"
            )
        out[rec["method"]][example_set] = rec
    return out
