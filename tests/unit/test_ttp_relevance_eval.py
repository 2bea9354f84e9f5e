"""Table 4's Relevance column: history-free searches, pair scores, Spearman, the table."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from personalir.ttp.evaluation.relevance_eval import (
    pair_scores,
    relevance_examples,
    relevance_of_ranking,
    split_known,
)
from personalir.ttp.inputs.relevance_set import GradedPair
from personalir.ttp.paper.tables import relevance_values, table4

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
    records = [("dense", 0.2), ("dense", 0.4), ("ttp", None), ("bm25", 0.1)]
    for i, (method, rho) in enumerate(records):
        path = tmp_path / f"{i}.json"
        ci = {"ci_low": 0.05, "ci_high": 0.15} if method == "bm25" else {}
        path.write_text(json.dumps({"method": method, "spearman": rho, **ci}))
        paths.append(path)
    values = relevance_values(paths)
    # two sets: their mean, no CI; one set: its CI
    assert values["dense"] == {"value": pytest.approx(0.3), "ci_low": None, "ci_high": None}
    assert values["ttp"] == {"value": None, "ci_low": None, "ci_high": None}
    assert values["bm25"] == {"value": 0.1, "ci_low": 0.05, "ci_high": 0.15}
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
    t = table4(summary, ["bm25"], {}, measures=("Recall@10",), relevance=values)
    assert t.iloc[0][["Relevance Spearman ci_low", "Relevance Spearman ci_high"]].tolist() == [
        0.05,
        0.15,
    ]
    assert "Relevance Spearman" not in table4(summary, ["dense"], {}, measures=("Recall@10",))


def _rho(scores, labels):
    from personalir.ttp.inputs.relevance_set import spearman

    return spearman(scores, labels)


def test_bootstrap_draws_whole_queries():
    import numpy as np

    from personalir.ttp.evaluation.relevance_eval import bootstrap_spearman

    # q1 ordered perfectly, q2 inverted; a resample is q1+q1, q1+q2 or q2+q2, so every
    # resampled rho is rho(q1) = 1, rho(q2) = -1 or rho(all); drawing pairs one by one
    # would give other values.
    qids = ["q1", "q1", "q1", "q2", "q2", "q2"]
    labels = [2, 1, 0, 2, 1, 0]
    scores = [3.0, 2.0, 1.0, 1.5, 2.5, 3.5]
    allowed = {1.0, -1.0, _rho(scores, labels)}
    got = bootstrap_spearman(
        qids, labels, [(scores, 1.0)], samples=400, confidence=0.999, gen=np.random.default_rng(1)
    )
    assert got["value"] == pytest.approx(_rho(scores, labels))
    assert got["undefined_samples"] == 0
    assert any(got["ci_low"] == pytest.approx(v) for v in allowed)
    assert any(got["ci_high"] == pytest.approx(v) for v in allowed)
    assert got["ci_low"] == pytest.approx(-1.0) and got["ci_high"] == pytest.approx(1.0)


def test_bootstrap_of_a_paired_difference_and_undefined_resamples():
    import numpy as np

    from personalir.ttp.evaluation.relevance_eval import bootstrap_spearman

    qids = ["q1", "q1", "q2", "q2", "q3", "q3"]
    labels = [2, 0, 1, 0, 2, 1]
    a = [0.9, 0.1, 0.7, 0.2, 0.8, 0.3]
    same = bootstrap_spearman(
        qids,
        labels,
        [(a, 1.0), (a, -1.0)],
        samples=200,
        confidence=0.9,
        gen=np.random.default_rng(2),
    )
    assert same["value"] == 0.0 and same["ci_low"] == 0.0 and same["ci_high"] == 0.0
    flat = bootstrap_spearman(
        qids,
        labels,
        [([0.5] * 6, 1.0)],
        samples=50,
        confidence=0.9,
        gen=np.random.default_rng(2),
    )
    assert flat["value"] is None and flat["ci_low"] is None and flat["undefined_samples"] == 50
    # seeded: the same generator seed gives the same interval
    runs = [
        bootstrap_spearman(
            qids, labels, [(a, 1.0)], samples=100, confidence=0.9, gen=np.random.default_rng(7)
        )
        for _ in range(2)
    ]
    assert runs[0] == runs[1]


def test_relevance_output_keeps_every_pairs_score_and_a_ci():
    import numpy as np

    ranking = {"q1": [("a", 0.9), ("b", 0.5)], "q2": [("d", 3.0), ("a", 1.0)]}
    got = relevance_of_ranking(
        ranking, PAIRS, samples=100, confidence=0.9, gen=np.random.default_rng(0)
    )
    assert got["scored"][0] == ["q1", "a", 2, 0.9] and len(got["scored"]) == 5
    assert got["ci_low"] <= got["spearman"] <= got["ci_high"]
    assert got["bootstrap"]["samples"] == 100
