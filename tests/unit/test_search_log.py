"""The sample world's search log: determinism, purchase semantics, query kinds by construction."""

from __future__ import annotations

import pytest

from personalir.data.sample_world import build_world
from personalir.data.sample_world.search_log import SearchLogParams, build_search_log


@pytest.fixture(scope="module")
def world():
    return build_world(
        "Musical_Instruments", seed=11, n_products=90, n_users=30, min_sentences_per_user=12
    )


@pytest.fixture(scope="module")
def log(world):
    return build_search_log(world, SearchLogParams(searches_per_user=3), seed=11)


def test_same_arguments_give_identical_records(world, log):
    assert build_search_log(world, SearchLogParams(searches_per_user=3), seed=11) == log
    other = build_search_log(world, SearchLogParams(searches_per_user=3), seed=12)
    assert [r["query"] for r in other] != [r["query"] for r in log]


def test_every_search_ends_in_a_new_purchase_after_the_history(world, log):
    assert len(log) == 3 * len(world.users)
    by_user: dict[str, list[dict]] = {}
    for rec in log:
        bought = {h["item_id"] for h in rec["history"]}
        assert rec["target"] not in bought
        times = [h["timestamp"] for h in rec["history"]]
        assert times == sorted(times) and rec["timestamp"] > times[-1]
        by_user.setdefault(rec["user_id"], []).append(rec)
    for recs in by_user.values():
        # a later search's history holds the earlier searches' purchases
        for a, b in zip(recs, recs[1:], strict=False):
            assert b["history"][-1] == {"item_id": a["target"], "timestamp": a["timestamp"]}


def test_all_three_labels_and_some_misspellings(log):
    labels = {r["label"] for r in log}
    assert labels == {"General", "Broad", "LongTail"}
    typos = [r for r in log if r["misspelled"]]
    assert typos and all(r["query"] != r["clean_query"] for r in typos)
    assert all(r["query"] == r["clean_query"] for r in log if not r["misspelled"])


def test_broad_queries_are_ambiguous_and_resolved_by_history(world, log):
    products = world.products_by_asin
    broad = [r for r in log if r["label"] == "Broad"]
    assert broad
    for rec in broad:
        target = products[rec["target"]]
        same_type = [p for p in world.products if p.product_type == target.product_type]
        assert len(same_type) >= SearchLogParams().broad_min_matches
        assert len({p.brand for p in same_type}) >= SearchLogParams().broad_min_brands
        # the brand is not in the query, but the user bought this type from this brand
        assert target.brand.lower() not in rec["clean_query"].lower()
        assert any(
            products[h["item_id"]].product_type == target.product_type
            and products[h["item_id"]].brand == target.brand
            for h in rec["history"]
        )


def test_general_queries_name_the_brand_and_longtail_targets_are_unpopular(world, log):
    products = world.products_by_asin
    for rec in log:
        if rec["label"] == "General":
            assert products[rec["target"]].brand.lower() in rec["clean_query"].lower()
    pops = sorted(p.popularity for p in world.products)
    median = pops[len(pops) // 2]
    longtail = [r for r in log if r["label"] == "LongTail"]
    assert longtail and all(products[r["target"]].popularity <= median for r in longtail)


def test_bad_label_shares_are_rejected():
    with pytest.raises(ValueError, match="label_shares"):
        SearchLogParams(label_shares={"Vague": 1.0})
