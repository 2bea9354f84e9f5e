"""History selection: the top-N history items by relevance to the query, in time order.

Long histories do not fit a prompt, and most of a user's purchases say nothing about the
current query. Each history item is scored against the query by a relevance model
(:mod:`personalir.ttp.relevance`); the ``n`` best are kept (ties: the more recent first) and
put back in chronological order, so the prompt still reads as a sequence of purchases.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from personalir.ttp.data import Example, ItemCorpus
from personalir.ttp.relevance import RelevanceModel


def select_top_n(scores: Sequence[float], n: int) -> list[int]:
    """Positions (into a chronological list) of the ``n`` best scores, returned in time order.

    Ties go to the later (more recent) position.
    """
    scores = np.asarray(scores, dtype=float)
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], -i))
    return sorted(order[: max(0, n)])


def select_histories(
    examples: Sequence[Example],
    corpus: ItemCorpus,
    model: RelevanceModel,
    n: int,
    item_fields: Sequence[str],
    max_features: int = 3,
) -> list[Example]:
    """Set ``selected_history`` of every example (in place) and return the examples."""
    queries, texts, owners = [], [], []
    for k, ex in enumerate(examples):
        for h in ex.history:
            queries.append(ex.query)
            texts.append(corpus[h.item_id].text(item_fields, max_features))
            owners.append(k)
    scores = model.score(queries, texts) if queries else np.zeros(0)
    start = 0
    for ex in examples:
        m = len(ex.history)
        picked = select_top_n(scores[start : start + m], n)
        ex.selected_history = [ex.history[i].item_id for i in picked]
        start += m
    return list(examples)
