"""Table 4's Relevance column: history-free searches, pair scores, Spearman, the table."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from personalir.ttp.relevance_eval import (
    pair_scores,
    relevance_examples,
    relevance_of_ranking,
    split_known,
)
from personalir.ttp.relevance_set import GradedPair
from personalir.ttp.tables import relevance_values, table4

PAIRS = [
    GradedPair("q1", "red capo", "a", 2),
    GradedPair("q1", "red capo", "b", 1),
    GradedPair("q1", "red capo", "c", 0),
    GradedPair("q2", "gig bag", "d", 2),
    GradedPair("q2", "gig bag", "a", 0),
]


def test_one_history_free_search_per_query():
    exs = relevance_examples(PAIRS, domain="D")
    assert [e.example_id for e in exs] == ["q1", "q2"]
    assert all(e.selected_history == [] and e.history == [] and e.split == "test" for e in exs)
    assert [e.query for e in exs] == ["red capo", "gig bag"]
    with pytest.raises(ValueError, match="two texts"):
        relevance_examples([*PAIRS, GradedPair("q1", "blue capo", "d", 0)], domain="D")


def test_an_item_not_returned_scores_below_the_querys_lowest():
    ranking = {"q1": [("a", 0.9), ("b", 0.5)], "q2": [("d", 3.0), ("a", 1.0)]}
    scores, missing = pair_scores(ranking, PAIRS)
    assert scores.tolist() == [0.9, 0.5, 0.5 - 1.0, 3.0, 1.0]
    assert missing == 1
    # a query the method returned nothing for: every pair scores -1
    scores, missing = pair_scores({}, PAIRS[:2])
    assert scores.tolist() == [-1.0, -1.0] and missing == 2


def test_spearman_of_a_ranking_golden_values():
    # perfect order within and across queries: labels 2,1,0,2,0 vs scores 0.9,0.5,-0.5,3,1
    # ranks of scores: 0.9->3, 0.5->2, -0.5->1, 3->5, 1->4; of labels (ties averaged):
    # 2->4.5, 1->3, 0->1.5 => pearson of (3,2,1,5,4) and (4.5,3,1.5,4.5,1.5)
    ranking = {"q1": [("a", 0.9), ("b", 0.5)], "q2": [("d", 3.0), ("a", 1.0)]}
    got = relevance_of_ranking(ranking, PAIRS)
    x = [3, 2, 1, 5, 4]
    y = [4.5, 3, 1.5, 4.5, 1.5]
    mx, my = sum(x) / 5, sum(y) / 5
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    want = cov / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))
    assert got["spearman"] == pytest.approx(want, abs=1e-12)
    assert got["pairs"] == 5 and got["queries"] == 2 and got["pairs_not_returned"] == 1
    assert got["mean_score_by_label"]["2"] == pytest.approx((0.9 + 3.0) / 2)


def test_pairs_outside_the_corpus_are_counted_not_scored():
    kept, left = split_known(PAIRS, ["a", "b", "c"])
    assert left == 1 and [p.item_id for p in kept] == ["a", "b", "c", "a"]


def test_relevance_column_of_table4_and_the_mean_over_sets(tmp_path):
    paths = []
    for i, (method, rho) in enumerate([("dense", 0.2), ("dense", 0.4), ("ttp", None)]):
        path = tmp_path / f"{i}.json"
        path.write_text(json.dumps({"method": method, "spearman": rho}))
        paths.append(path)
    values = relevance_values(paths)
    assert values == {"dense": pytest.approx(0.3), "ttp": None}
    summary = pd.DataFrame(
        [
            {
                "domain": "All",
                "method": m,
                "label": "General",
                "measure": "Recall@10",
                "value": v,
                "ci_low": v,
                "ci_high": v,
            }
            for m, v in (("dense", 0.5), ("ttp", 0.6))
        ]
    )
    paper = {"ttp": {"Relevance": {"Spearman": 49.43}}}
    t = table4(
        summary, ["dense", "ttp"], {}, measures=("Recall@10",), paper=paper, relevance=values
    )
    assert list(t.columns)[-4:] == [
        "Relevance Spearman",
        "Relevance Spearman ci_low",
        "Relevance Spearman ci_high",
        "Relevance Spearman paper",
    ]
    assert t["Relevance Spearman"].iloc[0] == pytest.approx(0.3)
    assert math.isnan(t["Relevance Spearman"].iloc[1])
    assert t["Relevance Spearman paper"].iloc[1] == 49.43
    assert "Relevance Spearman" not in table4(summary, ["dense"], {}, measures=("Recall@10",))
