"""User selection: chronological order, first-N cut, exclusions counted."""

import pyarrow as pa

from personalir.data.sentences import SentenceRules, build_user_sentences


def _reviews(rows):
    cols = [
        "review_id",
        "user_id",
        "parent_asin",
        "asin",
        "timestamp",
        "rating",
        "text",
        "source_line",
    ]
    return pa.table({c: [r[i] for r in rows] for i, c in enumerate(cols)})


def test_order_cut_and_counts():
    rows = [
        # user u1: two reviews given out of order; the earlier one comes first
        ("r2", "u1", "P2", "P2", 200, 5.0, "Second review here. It has two sentences.", 2),
        ("r1", "u1", "P1", "P1", 100, 4.0, "First review text. Ok. Another good sentence.", 1),
        # user u2: too few usable sentences
        ("r3", "u2", "P1", "P1", 150, 3.0, "Only one sentence here.", 3),
    ]
    out = build_user_sentences(
        _reviews(rows), SentenceRules(min_per_user=3, max_per_user=3, min_words=3)
    )
    sents = out["sentences"].to_pylist()
    assert [s["text"] for s in sents] == [
        "First review text.",
        "Another good sentence.",
        "Second review here.",
    ]
    assert [s["position"] for s in sents] == [0, 1, 2]
    assert sents[0]["sentence_id"] == "u1:0" and sents[2]["review_id"] == "r2"
    rep = out["report"]
    assert rep["sentences_too_short"] == 1  # "Ok."
    assert rep["sentences_beyond_max_per_user"] == 1
    assert rep["sentences_of_excluded_users"] == 1
    assert rep["users_selected"] == 1 and rep["users_excluded_too_few_sentences"] == 1
    users = {u["user_id"]: u for u in out["users"].to_pylist()}
    assert not users["u2"]["selected"] and "fewer than 3" in users["u2"]["reason"]
    reviewers = out["reviewers"].to_pylist()
    assert [(r["parent_asin"], r["user_id"], r["selected_user"]) for r in reviewers] == [
        ("P1", "u1", True),
        ("P1", "u2", False),
        ("P2", "u1", True),
    ]
