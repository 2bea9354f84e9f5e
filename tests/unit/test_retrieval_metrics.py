"""PQB metrics on a tiny inline benchmark whose golden values are computed by hand below.

Two products. Ranks of the relevant document (0 = not retrieved):

  P1  syntactic pair s1: a (user u1) rank 1,  b (user u2) rank 7
      writing-error pair e1: clean (u1, same text as s1:a) rank 1, error rank 0 (miss)
  P2  syntactic pair s2: a (u3) rank 3,  b (u4) rank 3
      syntactic pair s3: a (u5) rank 250 (beyond the RR depth 200), b (u6) rank 12
      writing-error pair e2: clean (u3, same text as s2:a) rank 2, error rank 5
"""

import math

import pandas as pd
import pytest

from personalir.common.bootstrap import bootstrap_replicates
from personalir.retrieval.metrics import (
    METRICS,
    MetricSettings,
    metric_header,
    metric_value,
    parse_metric,
    per_query_frame,
)
from personalir.retrieval.stats import bootstrap_summary

SPEC = [
    # query_id, product, user, pair, kind, role, text, rank
    ("s1a", "P1", "u1", "s1", "syntactic", "a", "red guitar strings", 1),
    ("s1b", "P1", "u2", "s1", "syntactic", "b", "strings for a red guitar", 7),
    ("e1c", "P1", "u1", "e1", "writing_error", "clean", "red guitar strings", 1),
    ("e1e", "P1", "u1", "e1", "writing_error", "error", "red guitra strings", 0),
    ("s2a", "P2", "u3", "s2", "syntactic", "a", "blue drum kit", 3),
    ("s2b", "P2", "u4", "s2", "syntactic", "b", "drum kit in blue", 3),
    ("s3a", "P2", "u5", "s3", "syntactic", "a", "kit drum blue", 250),
    ("s3b", "P2", "u6", "s3", "syntactic", "b", "a blue kit of drums", 12),
    ("e2c", "P2", "u3", "e2", "writing_error", "clean", "blue drum kit", 2),
    ("e2e", "P2", "u3", "e2", "writing_error", "error", "bleu drum kit", 5),
]
FILLER = [f"x{i:03d}" for i in range(300)]


def _records():
    return [
        {
            "query_id": q,
            "domain": "D",
            "product": p,
            "user_id": u,
            "pair_id": pr,
            "kind": k,
            "role": r,
            "text": t,
            "core_terms": [],
            "provenance": {},
        }
        for q, p, u, pr, k, r, t, _ in SPEC
    ]


def _run():
    run = {}
    for q, p, *_, rank in SPEC:
        docs = FILLER[:299]
        run[q] = docs[: rank - 1] + [p] + docs[rank - 1 :] if rank else list(docs)
    return run


@pytest.fixture(scope="module")
def frame():
    return per_query_frame(_records(), _run(), MetricSettings())


def test_per_query_ranks_rr_and_hits(frame):
    f = frame.set_index("query_id")
    assert f.loc["s1b", "rank"] == 7 and f.loc["e1e", "rank"] == 0
    assert f.loc["s1b", "rr"] == pytest.approx(1 / 7)
    assert f.loc["s3a", "rank"] == 250 and f.loc["s3a", "rr"] == 0.0  # cut at depth 200
    assert f.loc["e1e", "rr"] == 0.0  # a miss counts 0
    assert list(f.loc["s1b", ["hit@1", "hit@5", "hit@10", "hit@20"]]) == [0, 0, 1, 1]
    # ir_measures on the same order agrees with our own RR and hit@K.
    assert (f["RR@200"] - f["rr"]).abs().max() < 1e-12
    assert (f["R@10"] == f["hit@10"]).all()
    # nDCG@10 with one relevant document is 1 / log2(rank + 1).
    assert f.loc["s2a", "nDCG@10"] == pytest.approx(1 / math.log2(4))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Flips by hand from the ranks in the module docstring (hit@K = 1 iff 1 <= rank <= K):
        # P1 s1 (1 vs 7) flips at K=1,5, not at K=10,20; P2 s2 (3 vs 3) never flips; P2 s3
        # (250 vs 12) flips only at K=20.  P1 has 1 pair, P2 has 2: the definitions differ.
        # Flip@K (the paper's): flipped pairs / all 3 pairs.
        ("Flip@1", (1 + 0 + 0) / 3),
        ("Flip@5", (1 + 0 + 0) / 3),
        ("Flip@10", (0 + 0 + 0) / 3),
        ("Flip@20", (0 + 0 + 1) / 3),
        # FlipProd@K (the reference code's): per product the share of its pairs, averaged
        # over the 2 products.
        ("FlipProd@1", (1 / 1 + 0 / 2) / 2),
        ("FlipProd@5", (1 / 1 + 0 / 2) / 2),
        ("FlipProd@10", (0 / 1 + 0 / 2) / 2),
        ("FlipProd@20", (0 / 1 + 1 / 2) / 2),
        # P1: population std of {1, 1/7} = (6/7)/2 = 3/7.
        # P2: RR {1/3, 1/3, 0, 1/12}; mean 3/16; variance
        #     (2 (1/3 - 3/16)^2 + (3/16)^2 + (1/12 - 3/16)^2) / 4 = 0.0221354...; std 0.1487797...
        ("RRstd@200", (3 / 7 + math.sqrt(0.08854166666666667 / 4)) / 2),
        # Error pairs: P1 clean hit, error miss -> 1 at every K; P2 ranks 2 vs 5 -> 0 at K=1
        # (both miss) and K>=5 (both hit).  Deg = mean over the two pairs.
        ("Deg@1", (1 + 0) / 2),
        ("Deg@5", (1 + 0) / 2),
        ("Deg@20", (1 + 0) / 2),
        # MRRdeg: (1 - 0) for P1 (the miss counts RR = 0) and (1/2 - 1/5) for P2.
        ("MRRdeg@200", ((1 - 0) + (0.5 - 0.2)) / 2),
    ],
)
def test_pqb_metric_golden_values(frame, name, expected):
    assert metric_value(frame, name) == pytest.approx(expected, abs=1e-12)


def test_mrrdeg_counts_misses_unlike_the_reference_code(frame):
    # The reference averaged RR over found targets only: MRR(clean) = (1 + 1/2)/2 = 0.75,
    # MRR(error) = 1/5 (the miss dropped) -> 0.55. Misses as 0 give 0.65 (above).
    assert metric_value(frame, "MRRdeg@200") == pytest.approx(0.65)
    assert metric_value(frame, "MRRdeg@200") != pytest.approx(0.75 - 0.2)


def test_standard_measures_average_distinct_queries(frame):
    # Distinct (product, user, text): e1c repeats s1a and e2c repeats s2a, so 8 queries.
    # Their R@10 hits: s1a 1, s1b 1, e1e 0, s2a 1, s2b 1, s3a 0, s3b 0, e2e 1 -> 5/8.
    # Products weigh by their queries: P1 2/3 over 3, P2 3/5 over 5 -> (2 + 3) / 8.
    assert metric_value(frame, "R@10") == pytest.approx(5 / 8)


def test_standard_measures_on_clean_and_error_queries(frame):
    # Clean: every query but the error ones, distinct -> s1a s1b s2a s2b s3a s3b (e1c, e2c
    # repeat s1a, s2a): R@10 hits 1 1 1 1 0 0 -> 4/6. Error: e1e 0, e2e 1 -> 1/2.
    assert metric_value(frame, "R@10[clean]") == pytest.approx(4 / 6)
    assert metric_value(frame, "R@10[error]") == pytest.approx(1 / 2)
    assert parse_metric("R@10[clean]").items(frame) == 6
    assert parse_metric("R@10[error]").items(frame) == 2
    assert parse_metric("R@10").items(frame) == 8  # all: both subsets
    # RR@200 of the error queries: e1e missed (0), e2e rank 5 -> (0 + 0.2) / 2
    assert metric_value(frame, "RR@200[error]") == pytest.approx(0.1)
    settings = MetricSettings(standard=("R@10", "nDCG@10"))
    assert settings.effectiveness_metrics() == [
        "R@10[clean]", "nDCG@10[clean]", "R@10[error]", "nDCG@10[error]", "R@10", "nDCG@10",
    ]  # fmt: skip
    assert settings.effectiveness_metrics("error") == ["R@10[error]", "nDCG@10[error]"]
    with pytest.raises(ValueError, match="unknown query subset"):
        parse_metric("R@10[typo]")


def test_units_are_per_product(frame):
    units = parse_metric("Deg@1").units(frame)
    assert units.to_dict("list") == {"product": ["P1", "P2"], "num": [1, 0], "den": [1.0, 1.0]}


def test_pairs_with_an_unevaluated_member_do_not_count():
    sub = per_query_frame(_records(), _run(), MetricSettings(), evaluated=["s1a", "s2a", "s2b"])
    assert len(sub) == 3
    # Only s2 is complete: it never flips.
    assert metric_value(sub, "Flip@1") == 0.0
    assert parse_metric("Flip@1").items(sub) == 1
    assert math.isnan(metric_value(sub, "Deg@1"))


def test_query_missing_from_run_is_a_miss():
    run = _run()
    del run["s1a"]
    f = per_query_frame(_records(), run, MetricSettings()).set_index("query_id")
    assert f.loc["s1a", "rank"] == 0 and f.loc["s1a", "R@10"] == 0.0


def test_parse_metric_names():
    assert parse_metric("Flip@10").params == {"k": 10}
    assert parse_metric("nDCG@10").name == "nDCG@10"
    with pytest.raises(ValueError, match="depth 200"):
        parse_metric("RRstd@100")
    assert isinstance(per_query_frame([], {}, MetricSettings()), pd.DataFrame)


# --- Flip@K: the paper's pair share and the reference code's per-product average ------------
#
# A hand-built run with unequal pairs per product, given directly as the hit@K of each query
# (ranks do not matter here).  hit@1 and hit@10 of (a, b) per syntactic pair:
#
#   product  pairs  hit@1 (a, b)                 flips@1   hit@10 (a, b)             flips@10
#   A        1      (1, 0)                       1 of 1    (1, 1)                    0 of 1
#   B        2      (0, 0) (1, 1)                0 of 2    (1, 0) (0, 1)             2 of 2
#   C        5      (1, 0) (0, 0) x2, (1, 1) x2  1 of 5    (1, 1) x3, (0, 0) x2      0 of 5
#
# Flip@1     = (1 + 0 + 1) / (1 + 2 + 5)      = 2/8 = 0.25
# FlipProd@1 = (1/1 + 0/2 + 1/5) / 3          = 1.2/3 = 0.4   (A's single pair weighs 1/3)
# Flip@10    = (0 + 2 + 0) / 8                = 0.25
# FlipProd@10 = (0/1 + 2/2 + 0/5) / 3         = 1/3           (B's two pairs weigh 1/3)
# A writing-error pair in A (hits at both K) must not count for either.
UNEQUAL = {
    "A": [((1, 0), (1, 1))],
    "B": [((0, 0), (1, 0)), ((1, 1), (0, 1))],
    "C": [((1, 0), (1, 1)), ((0, 0), (1, 1)), ((0, 0), (1, 1)), ((1, 1), (0, 0)), ((1, 1), (0, 0))],
}


def _unequal_frame() -> pd.DataFrame:
    rows = []
    for product, pairs in UNEQUAL.items():
        for i, ((h1a, h1b), (h10a, h10b)) in enumerate(pairs):
            pair = f"{product}{i}"
            for role, h1, h10 in (("a", h1a, h10a), ("b", h1b, h10b)):
                rows.append((product, pair, "syntactic", role, h1, h10))
    rows += [
        ("A", "Ae", "writing_error", "clean", 1, 1),
        ("A", "Ae", "writing_error", "error", 1, 1),
    ]
    frame = pd.DataFrame(rows, columns=["product", "pair_id", "kind", "role", "hit@1", "hit@10"])
    frame["rr"] = frame["hit@1"].astype(float)
    return frame


@pytest.mark.parametrize(
    ("name", "expected"),
    [("Flip@1", 2 / 8), ("FlipProd@1", 1.2 / 3), ("Flip@10", 2 / 8), ("FlipProd@10", 1 / 3)],
)
def test_flip_definitions_differ_with_unequal_pairs_per_product(name, expected):
    assert metric_value(_unequal_frame(), name) == pytest.approx(expected, abs=1e-12)
    assert parse_metric(name).items(_unequal_frame()) == 8


def test_flip_units_are_products_for_both_definitions():
    frame = _unequal_frame()
    pooled = parse_metric("Flip@1").units(frame)
    assert pooled.to_dict("list") == {
        "product": ["A", "B", "C"],
        "num": [1.0, 0.0, 1.0],
        "den": [1.0, 2.0, 5.0],
    }
    per_product = parse_metric("FlipProd@1").units(frame)
    assert per_product.to_dict("list") == {
        "product": ["A", "B", "C"],
        "num": [1.0, 0.0, 0.2],
        "den": [1.0, 1.0, 1.0],
    }


def test_flip_bootstrap_resamples_whole_products():
    # Every replicate of the pair share is a pooled ratio over a multiset of 3 whole products
    # (num, den) = A (1, 1), B (0, 2), C (1, 5).  {A, C, C} gives (1 + 1 + 1) / (1 + 5 + 5) =
    # 3/11, a value resampling the 8 pairs one by one (k/8) could never give.
    import itertools

    units = parse_metric("Flip@1").units(_unequal_frame())
    num, den = units["num"].to_numpy(), units["den"].to_numpy()
    possible = {
        round(num[list(c)].sum() / den[list(c)].sum(), 12)
        for c in itertools.combinations_with_replacement(range(3), 3)
    }
    reps = bootstrap_replicates(units, 500, 0, "D", "Flip@1")
    assert {round(r, 12) for r in reps} <= possible
    assert round(3 / 11, 12) in {round(r, 12) for r in reps}
    for name in ("Flip@1", "FlipProd@1"):
        (row,) = bootstrap_summary(
            {"D": parse_metric(name).units(_unequal_frame())}, samples=200, confidence=0.95, seed=0
        )
        assert row["products"] == 3 and row["ci_low"] <= row["value"] <= row["ci_high"]


def test_flip_variants_are_registered_with_their_tables():
    assert MetricSettings().pqb[:2] == ("Flip", "FlipProd")
    assert METRICS.get("Flip").table == "flip_rrstd"
    assert METRICS.get("FlipProd").table is None  # summary CSV only
    settings = MetricSettings()
    assert "FlipProd@10" in settings.all_metrics()
    assert not any(m.startswith("FlipProd") for m in settings.pqb_metrics("flip_rrstd"))
    assert metric_header("FlipProd@5") == "Flip (per product)@5"
