"""History selection: the top-N history items by relevance to the query, in time order.

Long histories do not fit a prompt, and most of a user's purchases say nothing about the
current query. Each history item is scored against the query by a relevance model
(:mod:`personalir.ttp.inputs.relevance`); the ``n`` best are kept (ties: the more recent first) and
put back in chronological order, so the prompt still reads as a sequence of purchases.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from personalir.ttp.inputs.data import Example, ItemCorpus
from personalir.ttp.inputs.relevance import RelevanceModel


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


def history_aware_text(
    query: str, history_texts: Sequence[str], max_history_words: int | None = None
) -> str:
    """The serialised history prepended to the query, as the paper builds History-Aware:
    ``history: h1 | h2 | ... [SEP] query: q`` (oldest first). The encoder truncates from the
    end, so with ``max_history_words`` the oldest items are dropped first until the history
    has at most that many words, and the query is never cut."""
    kept = list(history_texts)
    if max_history_words is not None:
        while kept and sum(len(t.split()) for t in kept) > max_history_words:
            kept.pop(0)
    return "history: " + " | ".join(kept) + " [SEP] query: " + query


def history_word_budget(max_length: int) -> int:
    """Words of history that leave room for the query within ``max_length`` word pieces
    (product titles take about 1.5 word pieces per word; half the budget is left over)."""
    return max(1, max_length // 3)
