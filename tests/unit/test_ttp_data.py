"""Example sources (sample world, PersonalWAB, PQB), item text, strict record checks."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from personalir.common.io import write_jsonl, write_parquet
from personalir.ttp.inputs.data import (
    Example,
    ExampleFormatError,
    Item,
    ItemCorpus,
    load_examples,
    read_examples,
    write_examples,
)


def test_item_text_is_key_value_fields_joined_by_sep():
    item = Item("B1", "Kestrel Capo", "Musical Instruments", ("Fits six strings", "Zinc", "x", "y"))
    assert item.text() == (
        "title: Kestrel Capo [SEP] main category: Musical Instruments [SEP] "
        "features: Fits six strings; Zinc; x"
    )
    assert item.text(("title",)) == "title: Kestrel Capo"
    assert Item("B2", "T").text() == "title: T"  # empty fields are left out
    with pytest.raises(ValueError, match="unknown item field"):
        item.text(("price",))


def _record(**over):
    rec = {
        "example_id": "e1",
        "source": "s",
        "domain": "d",
        "user_id": "u",
        "query": "q",
        "target": "B1",
        "label": "Broad",
        "split": "train",
        "history": [{"item_id": "B0", "timestamp": 1}, {"item_id": "B2", "timestamp": 5}],
    }
    rec.update(over)
    return rec


@pytest.mark.parametrize(
    "over, message",
    [
        ({"history": {"B0": 1}}, "history must be a list"),
        # the reference code's PersonalWAB history shape: a list of strings, silently dropped
        ({"history": ["B0", "B2"]}, r"history\[0\] must be"),
        ({"history": [{"item_id": "B0", "timestamp": "1"}]}, r"history\[0\] must be"),
        (
            {"history": [{"item_id": "B2", "timestamp": 5}, {"item_id": "B0", "timestamp": 1}]},
            "not in chronological order",
        ),
        ({"split": "dev"}, "split"),
        ({"query": ""}, "'query'"),
    ],
)
def test_malformed_records_stop_with_where(over, message):
    with pytest.raises(ExampleFormatError, match=message):
        Example.from_record(_record(**over), "file.jsonl:3")


def test_examples_round_trip(tmp_path):
    ex = Example.from_record(_record(selected_history=["B2"], misspelled=True))
    write_examples(tmp_path / "ex.jsonl", [ex])
    assert read_examples(tmp_path / "ex.jsonl")[0] == ex
    corpus = ItemCorpus({"B1": Item("B1", "one", attributes=(("Brand", "K"),))})
    corpus.write(tmp_path / "items.parquet")
    assert ItemCorpus.read(tmp_path / "items.parquet").items == corpus.items


def _pwab_product(asin, title, brand, ts=None):
    return {
        "parent_asin": asin,
        "title": title,
        "main_category": "All Electronics",
        "features": ["Feature of " + title],
        "details": {"Brand": brand, "Color": "Black"},
        "store": brand,
        "price": 9.99,
    }


@pytest.fixture
def pwab_dir(tmp_path):
    """PersonalWAB's documented shapes: user_instructions.json, user_history.json,
    all_products.json (three products, one user, a search, a recommend and a review task)."""
    p = {
        a: _pwab_product(a, f"Product {a}", b)
        for a, b in [("A1", "Acme"), ("A2", "Bolt"), ("A3", "Acme"), ("A4", "Zed")]
    }
    history = {
        "U1": [
            {"product_info": p["A2"], "review": {"timestamp": 300, "rating": 4, "text": "ok"}},
            {"product_info": p["A1"], "review": {"timestamp": 100, "rating": 5, "text": "good"}},
            {"product_info": p["A4"], "review": {"timestamp": 900, "rating": 3, "text": "late"}},
        ]
    }
    target = {"product_info": p["A3"], "review": {"timestamp": 500, "text": "t", "rating": 5}}
    tasks = {
        "train": [
            {
                "user_id": "U1",
                "task": "Find me a charger like my last ones",
                "type": "search",
                "timestamp": 500,
                "target": target,
            },
            {
                "user_id": "U1",
                "task": "Recommend something",
                "type": "recommend",
                "timestamp": 500,
                "target": target,
            },
        ],
        "test": [
            {
                "user_id": "U1",
                "task": "A cable please",
                "type": "search",
                "timestamp": 1000,
                "target": {"product_info": p["A3"], "review": {}},
            },
            {
                "user_id": "U1",
                "task": "Write a review",
                "type": "review",
                "timestamp": 1000,
                "target": target,
            },
        ],
    }
    (tmp_path / "user_history.json").write_text(json.dumps(history))
    (tmp_path / "user_instructions.json").write_text(json.dumps(tasks))
    (tmp_path / "all_products.json").write_text(json.dumps(list(p.values())))
    return tmp_path


def test_personalwab_loader_reads_search_tasks_with_prior_history(pwab_dir):
    examples, corpus = load_examples("personalwab", data_dir=pwab_dir)
    assert [(e.split, e.query) for e in examples] == [
        ("train", "Find me a charger like my last ones"),
        ("test", "A cable please"),
    ]
    train, test = examples
    # history: reviews before the task's timestamp, oldest first
    assert [h.item_id for h in train.history] == ["A1", "A2"]
    assert [h.item_id for h in test.history] == ["A1", "A2", "A4"]
    assert train.target == "A3" and train.label == "General"
    assert corpus["A1"].attribute("Brand") == "Acme"
    assert corpus["A1"].features == ("Feature of Product A1",)
    assert len(corpus) == 4


def test_personalwab_loader_rejects_a_history_without_product_info(pwab_dir):
    bad = {"U1": [{"asin": "A1", "review": {"timestamp": 1}}]}
    (pwab_dir / "user_history.json").write_text(json.dumps(bad))
    with pytest.raises(ExampleFormatError, match=r"expected \{product_info, review\}"):
        load_examples("personalwab", data_dir=pwab_dir)


def _tables(tmp_path):
    products = pa.table(
        {
            "parent_asin": ["P1", "P2", "P3"],
            "title": ["Kestrel Capo", "Bolt Strap", "Kestrel Strap"],
            "main_category": ["Musical Instruments"] * 3,
        }
    )
    meta = pa.table(
        {
            "parent_asin": ["P1", "P2", "P3"],
            "features": [["zinc"], [], ["leather"]],
            "details": [[("Brand", "Kestrel")], [("Brand", "Bolt")], [("Brand", "Kestrel")]],
        }
    )
    reviews = pa.table(
        {
            "user_id": ["U", "U", "U", "V"],
            "parent_asin": ["P2", "P1", "P3", "P1"],
            "timestamp": [30, 10, 20, 5],
        }
    )
    for name, table in (("products", products), ("meta", meta), ("reviews", reviews)):
        write_parquet(tmp_path / f"{name}.parquet", table)
    return {n: tmp_path / f"{n}.parquet" for n in ("products", "meta", "reviews")}


def test_pqb_source_uses_review_history_and_benchmark_queries(tmp_path):
    from personalir.queries.benchmark_format import write_benchmark

    paths = _tables(tmp_path)
    base = {"domain": "Musical_Instruments", "product": "P3", "core_terms": [], "provenance": {}}
    write_benchmark(
        tmp_path / "benchmark.jsonl",
        [
            {
                **base,
                "query_id": "q1",
                "user_id": "U",
                "pair_id": "s1",
                "kind": "syntactic",
                "role": "a",
                "text": "kestrel leather strap",
            },
            {
                **base,
                "query_id": "q2",
                "user_id": "V",
                "pair_id": "s1",
                "kind": "syntactic",
                "role": "b",
                "text": "strap of leather by kestrel",
            },
            {
                **base,
                "query_id": "q3",
                "user_id": "U",
                "pair_id": "w1",
                "kind": "writing_error",
                "role": "clean",
                "text": "kestrel leather strap",
            },
            {
                **base,
                "query_id": "q4",
                "user_id": "U",
                "pair_id": "w1",
                "kind": "writing_error",
                "role": "error",
                "text": "kestrel lether strap",
            },
        ],
    )
    examples, corpus = load_examples(
        "pqb", benchmark=tmp_path / "benchmark.jsonl", domain="Musical_Instruments", **paths
    )
    by_id = {e.example_id: e for e in examples}
    # U's reviews in time order, without the queried product P3
    assert [h.item_id for h in by_id["q1"].history] == ["P1", "P2"]
    assert [h.item_id for h in by_id["q2"].history] == ["P1"]
    assert {e.split for e in examples} == {"test"}
    assert by_id["q4"].misspelled and not by_id["q3"].misspelled
    assert by_id["q1"].label == "syntactic" and by_id["q4"].extra["role"] == "error"
    assert corpus["P1"].attribute("brand") == "Kestrel"


def test_sample_world_source_splits_users(tmp_path, small_world):
    from personalir.data.sample_world import build_world
    from personalir.data.sample_world.search_log import SearchLogParams, build_search_log
    from tests.conftest import SMALL_WORLD

    world = build_world(
        SMALL_WORLD["domain"],
        seed=SMALL_WORLD["seed"],
        n_products=SMALL_WORLD["n_products"],
        n_users=SMALL_WORLD["n_users"],
        min_sentences_per_user=SMALL_WORLD["min_sentences_per_user"],
    )
    write_jsonl(tmp_path / "log.jsonl", build_search_log(world, SearchLogParams(), seed=3))
    examples, corpus = load_examples(
        "sample_world",
        search_log=tmp_path / "log.jsonl",
        products=small_world["products"],
        meta=small_world["meta"],
        domain=small_world["domain"],
        seed=3,
        test_share=0.3,
    )
    assert len(examples) == 2 * SMALL_WORLD["n_users"]
    split_of = {}
    for ex in examples:
        assert split_of.setdefault(ex.user_id, ex.split) == ex.split  # one split per user
    assert set(split_of.values()) == {"train", "test"}
    assert all(ex.target in corpus for ex in examples)


def test_caps_apply_per_label_and_to_training_examples():
    from personalir.ttp.inputs.examples import cap_examples

    examples = [
        Example.from_record(
            _record(example_id=f"{split}{label}{k}", split=split, label=label), "test"
        )
        for split in ("test", "train")
        for label in ("Broad", "General", "LongTail")
        for k in range(4)
    ]
    one = cap_examples(examples, {"max_test_per_label": 2, "max_train_per_set": 5})
    test = [e.example_id for e in one if e.split == "test"]
    # the first two by example id of each label; five training examples in all
    assert test == ["testBroad0", "testBroad1", "testGeneral0", "testGeneral1"] + [
        "testLongTail0",
        "testLongTail1",
    ]
    assert sum(e.split == "train" for e in one) == 5
    per_label = cap_examples(
        examples, {"max_test_per_label": {"Broad": 3, "General": 1}, "max_train_per_set": None}
    )
    counts = {
        lab: sum(e.label == lab for e in per_label if e.split == "test")
        for lab in ("Broad", "General", "LongTail")
    }
    assert counts == {"Broad": 3, "General": 1, "LongTail": 4}  # LongTail not capped
    assert sum(e.split == "train" for e in per_label) == 12


def test_ttp_domains_choose_the_example_sets():
    from personalir.workflow.ttp import example_sets

    def cfg(**ttp):
        return {"domains": ["A", "B", "C"], "ttp": {"source": "sample_world", **ttp}}

    assert example_sets(cfg(domains=None)) == ["A", "B", "C"]
    assert example_sets(cfg(domains=["C", "A"])) == ["A", "C"]  # the domains' order
    with pytest.raises(ValueError, match="not among the configured domains"):
        example_sets(cfg(domains=["D"]))
    assert example_sets(cfg(source="personalwab", domains=["A"])) == ["PersonalWAB"]
    assert example_sets(cfg(source="kuaisearch", domains=None)) == ["KuaiSearch"]
    # A stage that is switched off does not stop a run with other domains.
    assert example_sets(cfg(domains=["D", "A"], enabled=False)) == ["A"]


def test_item_attributes_keep_only_filled_in_details(tmp_path):
    from personalir.ttp.inputs.data import corpus_from_tables

    details = [[("Brand", "Kestrel"), ("Color", None), ("Size", ""), ("Style", "Vintage")]]
    write_parquet(
        tmp_path / "meta.parquet",
        pa.table(
            {
                "parent_asin": ["B1"],
                "features": [["Maple shell"]],
                "details": pa.array(details, type=pa.map_(pa.string(), pa.string())),
            }
        ),
    )
    write_parquet(
        tmp_path / "products.parquet",
        pa.table({"parent_asin": ["B1"], "title": ["Kestrel drum"], "main_category": ["MI"]}),
    )
    corpus = corpus_from_tables(tmp_path / "products.parquet", tmp_path / "meta.parquet")
    assert corpus["B1"].attributes == (("Brand", "Kestrel"), ("Style", "Vintage"))
