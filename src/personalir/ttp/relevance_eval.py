"""Table 4's Relevance column: a method's history-free scores of graded pairs, and Spearman.

Each distinct query of a Relevance set (:mod:`personalir.ttp.relevance_set`) becomes a search
with **no history** (an empty selected history; TTP then writes its rewrite from the query
alone, as the paper evaluates it). The method ranks the whole item corpus for it, so every
item has a score; a pair's score is its item's score for its query. An item a method does
not return at all (a lexical method gives no score to an item without a query term) scores
below every item it returned for that query. Spearman's correlation between the scores and
the labels over all pairs is the column's value (the paper reports it x 100).

Pairs whose item is not in the corpus are left out, counted in the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from personalir.ttp.data import Example
from personalir.ttp.relevance_set import GradedPair, spearman

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


def relevance_of_ranking(
    ranking: Mapping[str, Sequence[tuple[str, float]]], pairs: Sequence[GradedPair]
) -> dict:
    """Spearman of a ranking's pair scores with the labels, and the mean score per label."""
    scores, missing = pair_scores(ranking, pairs)
    labels = np.array([p.label for p in pairs])
    rho = spearman(scores, labels)
    return {
        "spearman": rho,
        "pairs": len(pairs),
        "queries": len({p.query_id for p in pairs}),
        "pairs_not_returned": missing,
        "mean_score_by_label": {
            str(k): float(scores[labels == k].mean()) for k in sorted(set(labels.tolist()))
        },
    }


def split_known(pairs: Sequence[GradedPair], item_ids) -> tuple[list[GradedPair], int]:
    """The pairs whose item is in the corpus, and how many were left out."""
    known = set(item_ids)
    kept = [p for p in pairs if p.item_id in known]
    return kept, len(pairs) - len(kept)
