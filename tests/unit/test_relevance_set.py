"""The history-free Relevance set (personalir.ttp.inputs.relevance_set): building, reading,
Spearman."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from scipy.stats import spearmanr

from personalir.ttp.inputs.relevance_set import (
    RelevanceSetError,
    build_relevance_pairs,
    read_relevance_pairs,
    spearman,
)

PRODUCTS = {
    "S1": {"product_type": "strap"},
    "S2": {"product_type": "strap"},
    "S3": {"product_type": "strap"},
    "C1": {"product_type": "capo"},
    "C2": {"product_type": "capo"},
    "T1": {"product_type": "tuner"},
    "X1": {},  # no type: never a candidate
}


def ex(example_id, target, split="test", query="blue strap"):
    return SimpleNamespace(example_id=example_id, target=target, split=split, query=query)


def test_levels_follow_the_planted_types():
    pairs, report = build_relevance_pairs(
        [ex("a", "S1"), ex("b", "C1", query="capo"), ex("c", "S2", split="train")],
        PRODUCTS,
        per_level=2,
        seed=1,
    )
    by_query = {}
    for p in pairs:
        by_query.setdefault(p.query_id, []).append((p.item_id, p.label))
    assert set(by_query) == {"a", "b"}  # the training search is left out
    a = dict(by_query["a"])
    assert a["S1"] == 2
    assert {k for k, v in a.items() if v == 1} == {"S2", "S3"}
    assert {k for k, v in a.items() if v == 0} <= {"C1", "C2", "T1"}
    b = dict(by_query["b"])
    assert b["C1"] == 2 and [k for k, v in b.items() if v == 1] == ["C2"]
    assert report["searches"] == 2 and report["left_out"]["not_in_split"] == 1
    assert report["searches_short_of_level"] == {"0": 0, "1": 1}  # capo has one sibling only
    assert report["pairs"] == len(pairs)
    assert all(p.query == "capo" for p in pairs if p.query_id == "b")


def test_same_seed_same_pairs_and_untyped_targets_are_counted():
    args = ([ex("a", "S1"), ex("z", "X1")], PRODUCTS)
    first, report = build_relevance_pairs(*args, per_level=1, seed=3)
    assert first == build_relevance_pairs(*args, per_level=1, seed=3)[0]
    assert report["left_out"]["target_without_type"] == 1
    with pytest.raises(ValueError, match="per_level"):
        build_relevance_pairs(*args, per_level=0, seed=3)


def test_spearman_matches_scipy_and_is_none_where_undefined():
    scores, labels = [0.9, 0.2, 0.5, 0.5, 0.1], [2, 0, 1, 1, 0]
    assert spearman(scores, labels) == pytest.approx(spearmanr(scores, labels).statistic)
    assert spearman([3, 2, 1], [0, 1, 2]) == pytest.approx(-1.0)
    assert spearman([1.0, 1.0, 1.0], [0, 1, 2]) is None  # constant scores
    assert spearman([0.3], [2]) is None
    with pytest.raises(ValueError, match="2 scores for 3 labels"):
        spearman([1, 2], [0, 1, 2])
    with pytest.raises(ValueError, match="finite"):
        spearman([float("nan"), 1.0], [0, 1])


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_reading_a_configured_set(tmp_path):
    good = json.dumps({"query_id": "q1", "query": "strap", "item_id": "S1", "label": 2})
    other = json.dumps({"query_id": "q1", "query": "strap", "item_id": "C1", "label": 0})
    path = write_lines(tmp_path / "rel.jsonl", [good, "", other])
    pairs = read_relevance_pairs(path)
    assert [(p.item_id, p.label) for p in pairs] == [("S1", 2), ("C1", 0)]


@pytest.mark.parametrize(
    "line, reason",
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"query_id": "q", "query": "", "item_id": "i", "label": 1}', "'query' must be"),
        ('{"query_id": "q", "query": "s", "item_id": "i", "label": 3}', "'label' must be 0, 1"),
        ('{"query_id": "q", "query": "s", "item_id": "i", "label": true}', "'label' must be"),
        ('{"query_id": "q", "query": "s", "item_id": "i", "label": "2"}', "'label' must be"),
    ],
)
def test_a_malformed_line_is_named(tmp_path, line, reason):
    good = json.dumps({"query_id": "q0", "query": "s", "item_id": "i0", "label": 1})
    path = write_lines(tmp_path / "rel.jsonl", [good, line])
    with pytest.raises(RelevanceSetError, match=f"rel.jsonl:2: .*{reason}"):
        read_relevance_pairs(path)


def test_a_pair_given_twice_and_an_empty_file_are_refused(tmp_path):
    good = json.dumps({"query_id": "q0", "query": "s", "item_id": "i0", "label": 1})
    with pytest.raises(RelevanceSetError, match=r"rel.jsonl:2: pair \('q0', 'i0'\) given twice"):
        read_relevance_pairs(write_lines(tmp_path / "rel.jsonl", [good, good]))
    with pytest.raises(RelevanceSetError, match="no pairs"):
        read_relevance_pairs(write_lines(tmp_path / "empty.jsonl", []))
