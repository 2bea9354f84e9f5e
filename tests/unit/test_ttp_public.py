"""Table 5's path: fixture-scale public sets written in the published formats and read back
by their loaders, the public measures against several relevant items, the claim on them and
the table's layout beside the paper's values."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from personalir.ttp.evaluation.public import generalises, public_measures, relevant_items
from personalir.ttp.inputs.data import load_examples
from personalir.ttp.inputs.public_fixture import write_fixture
from personalir.ttp.paper.table5 import table5


def _product(asin, title, store, cats):
    return {
        "parent_asin": asin,
        "title": title,
        "main_category": cats[0],
        "features": ["f"],
        "details": {"Brand": store},
        "store": store,
        "categories": cats,
        "images": [],
    }


@pytest.fixture
def world(tmp_path):
    meta = [
        _product("A1", "red capo", "Acme", ["Music", "Capos"]),
        _product("A2", "blue strap", "Bolt", ["Music", "Straps", "Leather"]),
        _product("A3", "gold sticks", "Acme", ["Music"]),
    ]
    reviews = [
        {"user_id": "U1", "parent_asin": "A1", "timestamp": 100, "rating": 5.0, "text": "ok"},
        {"user_id": "U1", "parent_asin": "A2", "timestamp": 50, "rating": 4.0, "text": "fine"},
        {"user_id": "U2", "parent_asin": "A3", "timestamp": 70, "rating": 3.0, "text": "meh"},
        {"user_id": "U9", "parent_asin": "A3", "timestamp": 70, "rating": 3.0, "text": "no"},
    ]
    searches = [
        {"user_id": "U1", "timestamp": 200, "query": "gold sticks", "target": "A3"},
        {"user_id": "U2", "timestamp": 300, "query": "capo", "target": "A1"},
    ]
    paths = {}
    for name, recs in (("meta", meta), ("reviews", reviews), ("search_log", searches)):
        paths[name] = tmp_path / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return paths


@pytest.mark.parametrize("fmt", ["personalwab", "kuaisearch"])
def test_fixture_is_read_back_by_the_published_format_loader(world, tmp_path, fmt):
    out = tmp_path / fmt
    # test_share 0.999: every user is a test user
    report = write_fixture(fmt, **world, out_dir=out, domain="D", seed=3, test_share=0.999)
    examples, corpus = load_examples(fmt, data_dir=str(out), domain="D")
    assert set(corpus.ids) == {"A1", "A2", "A3"}
    test = {e.user_id: e for e in examples if e.split == "test"}
    assert {u: e.target for u, e in test.items()} == {"U1": "A3", "U2": "A1"}
    assert test["U1"].query == "gold sticks"
    # history: the user's earlier purchases, oldest first (a user outside the log is left out)
    assert [h.item_id for h in test["U1"].history] == ["A2", "A1"]
    assert [h.item_id for h in test["U2"].history] == ["A3"]
    assert "U9" not in {e.user_id for e in examples}
    # same inputs, same bytes
    again = tmp_path / "again"
    write_fixture(fmt, **world, out_dir=again, domain="D", seed=3, test_share=0.999)
    for f in out.rglob("*"):
        if f.is_file() and ".integrity" not in f.parts:
            assert f.read_bytes() == (again / f.relative_to(out)).read_bytes()
    assert report["format"] == fmt


def test_fixture_refuses_a_target_without_a_product(world, tmp_path):
    world["search_log"].write_text(
        json.dumps({"user_id": "U1", "timestamp": 1, "query": "q", "target": "ZZ"}) + "\n"
    )
    with pytest.raises(ValueError, match="targets without a product"):
        write_fixture(
            "personalwab", **world, out_dir=tmp_path / "x", domain="D", seed=1, test_share=0.5
        )


def test_fixture_names_file_and_line_of_a_broken_record(world, tmp_path):
    world["meta"].write_text('{"parent_asin": "A1"}\nnot json\n')
    with pytest.raises(ValueError, match=r"meta\.jsonl:2: not JSON"):
        write_fixture(
            "kuaisearch", **world, out_dir=tmp_path / "x", domain="D", seed=1, test_share=0.5
        )


class _Ex:
    def __init__(self, eid, target, relevant=None, label="S"):
        self.example_id, self.target, self.label = eid, target, label
        self.extra = {"relevant": relevant} if relevant else {}


def test_public_measures_count_every_relevant_item():
    examples = [_Ex("q1", "a", ["a", "b"]), _Ex("q2", "c"), _Ex("q3", "d")]
    run = {"q1": ["x", "b", "y"], "q2": ["c"]}  # q3 retrieves nothing
    frame = public_measures(examples, run, "m").set_index("example_id")
    assert relevant_items(examples[0]) == ["a", "b"] and relevant_items(examples[1]) == ["c"]
    assert frame.loc["q1", "HR@20"] == 1.0 and frame.loc["q1", "Recall@20"] == 0.5
    # nDCG@20 of one of two relevant items at rank 2: (1/log2 3) / (1 + 1/log2 3)
    ideal = 1 + 1 / np.log2(3)
    assert frame.loc["q1", "nDCG@20"] == pytest.approx((1 / np.log2(3)) / ideal)
    assert frame.loc["q2", ["HR@20", "nDCG@20", "Recall@20"]].tolist() == [1.0, 1.0, 1.0]
    assert frame.loc["q3", ["HR@20", "nDCG@20", "Recall@20"]].tolist() == [0.0, 0.0, 0.0]


def _frame(values):
    rows = []
    for (s, m), xs in values.items():
        for i, x in enumerate(xs):
            rows.append(
                {
                    "set": s,
                    "method": m,
                    "example_id": f"{s}{i}",
                    "HR@20": x,
                    "nDCG@20": x,
                    "Recall@20": x,
                }
            )
    return pd.DataFrame(rows)


CLAIM = {"id": "public_generalises", "table": "table5", "text": "t"}


def test_public_claim_held_not_held_and_not_applicable():
    kw = {"samples": 200, "confidence": 0.95, "seed": 1}
    good = _frame(
        {("A", "ttp_rl"): [1, 1, 1, 0], ("A", "ttp"): [1, 0, 1, 0], ("A", "bm25"): [0, 0, 1, 0]}
    )
    v = generalises(good, CLAIM, **kw)
    assert v["status"] == "held" and v["margin"] == pytest.approx(25.0)
    assert "bm25" not in v["measured"] and "ttp" in v["measured"]
    bad = _frame(
        {("A", "ttp_rl"): [1, 0, 0, 0], ("A", "ttp"): [1, 1, 0, 0], ("A", "bm25"): [1, 1, 1, 0]}
    )
    v = generalises(bad, CLAIM, **kw)
    assert v["status"] == "not held" and v["margin"] == pytest.approx(-50.0)
    assert v["ci_low"] <= v["margin"] <= v["ci_high"]
    assert generalises(bad[bad["method"] != "ttp"], CLAIM, **kw)["status"] == "not applicable"


def test_table5_puts_the_papers_values_beside_ours_and_quoted_rows_without_ours():
    summary = pd.DataFrame(
        [
            {
                "set": "Amazon",
                "method": m,
                "measure": k,
                "value": v,
                "ci_low": v - 0.1,
                "ci_high": v + 0.1,
                "queries": 4,
            }
            for m, v in (("bm25", 0.2), ("ttp", 0.5), ("maps", 0.3))
            for k in ("HR@20", "nDCG@20", "Recall@20")
        ]
    )
    paper = {
        "columns": {"Amazon": ["HR@20", "nDCG@20"]},
        "rows": {
            "bm25": {"Amazon": {"HR@20": 65.04, "nDCG@20": 44.9}},
            "copps_quoted": {"Amazon": {"HR@20": 72.86, "nDCG@20": 34.39}},
            "maps_quoted": {"Amazon": {"HR@20": 89.87, "nDCG@20": 49.95}},
            "ttp_sft": {"Amazon": {"HR@20": 87.85, "nDCG@20": 50.09}},
        },
    }
    labels = {"bm25": "BM25", "ttp": "TTP (SFT)", "maps": "MAPs-style"}
    table, shown = table5(summary, ["bm25", "ttp", "maps"], labels, ["Amazon"], paper)
    assert shown == {"Amazon": ("HR@20", "nDCG@20")}
    assert list(table["Method"]) == ["BM25", "CoPPS*", "MAPs-style (paper: MAPs*)", "TTP (SFT)"]
    row = table.set_index("Method")
    assert row.loc["TTP (SFT)", "Amazon HR@20"] == 0.5
    assert row.loc["TTP (SFT)", "Amazon HR@20 paper"] == 87.85
    assert np.isnan(row.loc["CoPPS*", "Amazon HR@20"])
    assert row.loc["CoPPS*", "Amazon nDCG@20 paper"] == 34.39
    assert "Amazon Recall@20" not in table.columns


def test_public_sets_config_is_checked_naming_the_set():
    from personalir.workflow.ttp_public import public_data_dir, public_sets, public_source_inputs

    def cfg(sets, methods=("bm25",)):
        return {
            "domains": ["A", "B"],
            "results_dir": "res",
            "ttp": {
                "source": "sample_world",
                "domains": ["A"],
                "methods": ["bm25", "ttp"],
                "public": {"sets": sets, "methods": list(methods)},
            },
        }

    ok = cfg(
        {
            "Amazon": {"format": "personalwab", "fixture_domain": "B"},
            "Kuai": {"format": "kuaisearch", "dir": "data/K"},
        }
    )
    assert public_sets(ok)["Amazon"]["dir"] is None
    assert public_data_dir(ok, "Amazon") == "res/ttp/public/Amazon/files"
    assert public_data_dir(ok, "Kuai") == "data/K"
    assert public_source_inputs(ok, "Kuai") == {}
    assert public_source_inputs(ok, "Amazon")["files"][0].endswith("Amazon/files/all_products.json")
    with pytest.raises(ValueError, match=r"ttp.public.sets.X: give exactly one of dir"):
        public_sets(cfg({"X": {"format": "personalwab", "dir": "d", "fixture_domain": "B"}}))
    with pytest.raises(ValueError, match=r"ttp.public.sets.X: give exactly one of dir"):
        public_sets(cfg({"X": {"format": "personalwab"}}))
    with pytest.raises(ValueError, match="fixture_domain 'Z' is not a configured domain"):
        public_sets(cfg({"X": {"format": "personalwab", "fixture_domain": "Z"}}))
    with pytest.raises(ValueError, match="already a training example set"):
        public_sets(cfg({"A": {"format": "personalwab", "fixture_domain": "B"}}))
    with pytest.raises(ValueError, match=r"ttp.public.methods \['hyde'\] are not in ttp.methods"):
        public_sets(cfg({"X": {"format": "kuaisearch", "dir": "d"}}, methods=("hyde",)))
    assert public_sets(cfg({})) == {}


def test_kuaisearch_as_the_training_source_names_its_folder():
    from personalir.workflow.ttp import example_inputs, example_source_args

    config = {
        "results_dir": "r",
        "ttp": {"source": "kuaisearch", "kuaisearch_dir": "data/K", "personalwab_dir": None},
    }
    assert example_inputs(config, "KuaiSearch") == {}
    assert example_source_args(config, {}) == ["--kuaisearch-dir", "data/K"]


def test_public_claim_reads_only_the_cells_table5_shows():
    kw = {"samples": 100, "confidence": 0.95, "seed": 1}
    frame = _frame(
        {("A", "ttp_rl"): [1, 1, 0, 0], ("A", "ttp"): [1, 0, 0, 0], ("A", "bm25"): [0, 0, 0, 0]}
    )
    frame.loc[frame["method"] == "bm25", "nDCG@20"] = 1.0  # bm25 best on a hidden measure
    assert generalises(frame, CLAIM, **kw)["status"] == "not held"
    shown = generalises(frame, CLAIM, cells={"A": ["HR@20", "Recall@20"]}, **kw)
    assert shown["status"] == "held" and "nDCG" not in shown["detail"]
