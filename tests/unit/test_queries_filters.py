"""Validity filters: each removal is attributed to the first filter failed, per backend."""

import numpy as np
import pandas as pd
import pytest

from personalir.queries.filters import (
    VALID,
    FilterContext,
    ProductInfo,
    apply_filters,
    filter_counts,
)
from personalir.queries.terms import AttributeVocabulary

INFO = ProductInfo(
    asin="B0TEST0001",
    title="Velvet Fret USB Audio Interface, Red",
    document="Velvet Fret USB Audio Interface, Red. A metal vintage interface.",
    core_terms=["Velvet Fret", "Red", "Metal", "Vintage", "USB"],
    keys=["Brand", "Color", "Material", "Style Name", "Connectivity Technology"],
    values=["Velvet Fret", "Red", "Metal", "Vintage", "USB"],
    head="audio interface",
)
VOCAB = AttributeVocabulary.from_products(
    [INFO.keys, ["Brand", "Color"]], [INFO.values, ["Kestrel", "Blue"]]
)
SETTINGS = {
    "lexical": {"frequency": 1},
    "contradiction": {"keys": None},
    "semantic": {"model": "unused", "min_similarity": 0.5},
    "fluency": {"max_perplexity": 100.0},
}


class FakeEncoder:
    """Similarity 1 with the document unless the text says 'offtopic' (then 0)."""

    def encode(self, texts):
        return np.array([[0.0, 1.0] if "offtopic" in t else [1.0, 0.0] for t in texts])


def candidates(rows):
    return pd.DataFrame(
        [
            {"candidate_id": f"{b}:{i}", "product": INFO.asin, "backend": b, "text": t}
            for i, (b, t) in enumerate(rows)
        ]
    )


def test_each_candidate_is_counted_at_its_first_failed_filter():
    good = "velvet fret red metal vintage USB interface"
    rows = [
        ("lm", good),
        ("lm", "velvet fret red red metal vintage USB"),  # lexical: Red twice
        ("lm", "velvet fret red metal vintage USB like kestrel"),  # contradiction
        ("grammar", "Velvet-Fret RED metal, vintage USB interface!"),  # duplicate of the first
        ("grammar", "offtopic velvet fret red metal vintage USB"),  # semantic
        ("grammar", "B0TEST0001 velvet fret red metal vintage USB"),  # product id
        ("grammar", "a USB interface by Velvet Fret in red, made of metal, vintage"),
    ]
    ctx = FilterContext({INFO.asin: INFO}, VOCAB, SETTINGS)
    ctx.encoder = FakeEncoder()
    order = ["lexical", "contradiction", "duplicate", "semantic"]
    out = apply_filters(candidates(rows), ctx, order)
    assert out["status"].tolist() == [
        VALID,
        "lexical",
        "contradiction",
        "duplicate",
        "semantic",
        "lexical",
        VALID,
    ]
    assert "'Red'=2" in out.loc[1, "reason"] and "product id" in out.loc[5, "reason"]
    assert out.loc[3, "reason"] == "same words as lm:0"
    counts = filter_counts(out, order)
    assert counts["lm"] == {
        "generated": 3,
        "removed_lexical": 1,
        "removed_contradiction": 1,
        "removed_duplicate": 0,
        "removed_semantic": 0,
        "valid": 1,
    }
    assert counts["grammar"]["removed_duplicate"] == 1
    assert counts["grammar"]["removed_semantic"] == 1
    # Similarity is computed only for the candidates that reached the semantic filter.
    assert out["similarity"].notna().tolist() == [True, False, False, False, True, False, True]


def test_fluency_filter_uses_the_context_scorer():
    ctx = FilterContext(
        {INFO.asin: INFO},
        VOCAB,
        SETTINGS,
        perplexity=lambda texts: [50.0 if "fine" in t else 500.0 for t in texts],
    )
    out = apply_filters(candidates([("lm", "fine"), ("lm", "bad")]), ctx, ["fluency"])
    assert out["status"].tolist() == [VALID, "fluency"]
    assert out["perplexity"].tolist() == [50.0, 500.0]
    assert out.loc[1, "reason"] == "perplexity 500.0 > 100.0"


def test_youden_bound_and_shuffled_seeds_golden():
    from personalir.queries.generator import fluency_bound, shuffled_texts, youden_bound

    # keep <= b: b = 3 keeps 3/4 of the fluent and 0/4 of the shuffled texts (J = 0.75); b = 9
    # keeps all fluent and 1/4 shuffled (J = 0.75 too): ties take the smaller bound.
    assert youden_bound([1, 2, 3, 9], [5, 6, 9.5, 20]) == (3.0, 0.75)
    assert youden_bound([1, 2], [3, 4]) == (2.0, 1.0)
    out = shuffled_texts(["a b c d", "one", "x x", "red guitar strap"], seed=3)
    assert out[1:3] == ["one", "x x"]  # nothing to reorder
    for orig, new in ((out[0], "a b c d"), (out[3], "red guitar strap")):
        assert orig != new and sorted(orig.split()) == sorted(new.split())
    assert shuffled_texts(["a b c d"], seed=3) == out[:1]  # seeded
    bound, info = fluency_bound(
        {"max_perplexity": None, "calibration": "shuffled_seeds"}, [1, 2, 3, 9], [5, 6, 9.5, 20]
    )
    assert bound == 3.0 and info["seeds_kept"] == 0.75 and info["shuffled_kept"] == 0.0
    assert info["auc_seed_below_shuffled"] == pytest.approx(14 / 16)
    q, info = fluency_bound({"max_perplexity": None, "seed_quantile": 0.5}, [1, 2, 3, 9], None)
    assert q == 2.5 and info["bound_from"] == "seed quantile 0.5"
    assert fluency_bound({"max_perplexity": 7.0}, [1], None) == (7.0, {"bound_from": "config"})


def test_semantic_bound_from_mismatched_documents():
    from personalir.queries.filters import semantic_bound

    mism = np.array([0.1, 0.2, 0.3, 0.4, np.nan])
    bound, info = semantic_bound(
        {"semantic": {"min_similarity": None, "mismatch_quantile": 0.5}}, mism
    )
    assert bound == pytest.approx(0.25) and info["mismatched"] == 4
    fixed = {"semantic": {"min_similarity": 0.35, "mismatch_quantile": 0.5}}
    assert semantic_bound(fixed, mism) == (0.35, {"bound_from": "config"})
    with pytest.raises(ValueError, match="single sampled product"):
        semantic_bound({"semantic": {"min_similarity": None, "mismatch_quantile": 0.5}}, mism[-1:])


def test_mismatched_products_are_of_another_type_and_seeded():
    from personalir.queries.filters import mismatched_products

    head = {"a": "stroller", "b": "stroller", "c": "bottle", "d": "bottle", "e": "crib"}
    other = mismatched_products(sorted(head), head, seed=4)
    assert set(other) == set(head)
    assert all(head[other[p]] != head[p] for p in head)
    assert other == mismatched_products(sorted(head), head, seed=4)
    same = {"a": "stroller", "b": "stroller"}
    assert mismatched_products(["a", "b"], same, seed=0) == {"a": "b", "b": "a"}
