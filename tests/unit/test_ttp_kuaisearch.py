"""KuaiSearch's recall release as TTP examples, on a hand-written fixture in the published format.

The fixture (tests/fixtures/kuaisearch/): nine items and eight sessions of three users, in
``items_lite/train.jsonl`` and ``recall_lite/{train,test}.jsonl``. The golden values below
are worked out by hand from those lines: user 1's sessions are written out of time order
(1012 at time 20 before 1011 at time 10) and one of them (1014) has no click or purchase;
user 2's sessions 1021 and 1022 share time index 5; user 3 only purchases.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from personalir.ttp.inputs.data import ExampleFormatError, read_examples, write_examples
from personalir.ttp.inputs.kuaisearch import kuaisearch_examples, load_kuaisearch

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kuaisearch"

# example id -> (split, user, query, target, relevant, history as (item, time index))
EXPECTED = {
    "kuaisearch-1011": ("train", "1", "连衣裙夏季", "101", ["101", "103"], []),
    "kuaisearch-1012": ("train", "1", "碎花连衣裙", "102", ["102"], [("101", 10), ("103", 10)]),
    "kuaisearch-1013": (
        "test",
        "1",
        "连衣裙",
        "105",
        ["105", "104"],  # the purchase first, then the other click
        [("101", 10), ("103", 10), ("102", 20)],  # 1012 clicked and bought 102: one entry
    ),
    "kuaisearch-1021": ("train", "2", "蓝牙耳机", "107", ["107"], []),
    "kuaisearch-1022": ("train", "2", "耳机 降噪", "108", ["108"], []),  # 1021 is a tie
    "kuaisearch-1023": ("test", "2", "耳机", "106", ["106"], [("107", 5), ("108", 5)]),
    "kuaisearch-1031": ("test", "3", "小米", "103", ["103"], []),  # purchase without click
}


@pytest.fixture(scope="module")
def loaded():
    return load_kuaisearch(data_dir=FIXTURE)


def test_fixture_examples_exact(loaded):
    got = {
        ex.example_id: (
            ex.split,
            ex.user_id,
            ex.query,
            ex.target,
            ex.extra["relevant"],
            [(h.item_id, h.timestamp) for h in ex.history],
        )
        for ex in loaded.examples
    }
    assert got == EXPECTED
    assert len(loaded.examples) == 7  # 1014 (no click, no purchase) is dropped
    assert {(ex.source, ex.domain, ex.label) for ex in loaded.examples} == {
        ("kuaisearch", "KuaiSearch", "KuaiSearch")
    }
    ex = next(e for e in loaded.examples if e.example_id == "kuaisearch-1013")
    assert ex.extra == {
        "session_id": "1013",
        "time_index": 30,
        "relevant": ["105", "104"],
        "clicked": ["104", "105"],
        "purchased": ["105"],
        "n_impressed": 4,
    }


def test_history_is_earlier_sessions_oldest_first(loaded):
    for ex in loaded.examples:
        times = [h.timestamp for h in ex.history]
        assert times == sorted(times)
        assert all(t < ex.extra["time_index"] for t in times)


def test_fixture_counts(loaded):
    s = loaded.stats
    assert (s.sessions_read, s.dropped_no_interaction, s.examples) == (8, 1, 7)
    assert s.by_split == {"train": 4, "test": 3}
    assert s.without_history == 4  # 1011, 1021, 1022, 1031
    assert s.multi_relevant == 2  # 1011, 1013
    assert s.impressed_not_in_items == 1  # item 199, impressed in 1014 only
    assert (s.items_read, s.corpus_items, s.cut_by_max_sessions) == (9, 9, 0)
    assert "1 dropped (no click and no purchase)" in s.summary()
    assert "4 without any history" in s.summary()


def test_fixture_corpus(loaded):
    corpus = loaded.corpus
    assert corpus.ids == [str(i) for i in range(101, 110)]
    item = corpus["104"]  # category level 3 UNKNOWN: left out
    assert item.title == "纯棉连衣裙宽松休闲"
    assert item.main_category == "女装 > 连衣裙"
    assert item.features == ()
    assert item.attributes == (
        ("Brand", "无品牌"),
        ("Seller", "棉麻生活馆"),
        ("Category L1", "女装"),
        ("Category L2", "连衣裙"),
    )
    assert corpus["108"].attribute("brand") is None  # brand UNKNOWN: left out
    assert corpus["108"].text() == (
        "title: 降噪耳机半入耳学生党 [SEP] main category: 手机/数码/电脑办公 > 影音娱乐 > 耳机/耳麦"
    )


def test_source_returns_examples_and_corpus_and_logs_counts(loaded, caplog):
    lines = []
    examples, corpus = kuaisearch_examples(data_dir=FIXTURE, log=lines.append, seed=3)
    assert examples == loaded.examples
    assert corpus.items == loaded.corpus.items
    assert lines == [loaded.stats.summary()]
    with caplog.at_level("INFO", logger="personalir.ttp.inputs.kuaisearch"):
        kuaisearch_examples(data_dir=str(FIXTURE))
    assert "1 dropped (no click and no purchase)" in caplog.text


def test_options(loaded):
    scoped = load_kuaisearch(data_dir=FIXTURE, items_scope="sessions")
    assert "109" not in scoped.corpus and len(scoped.corpus) == 8  # no session names 109
    assert scoped.examples == loaded.examples

    first = load_kuaisearch(data_dir=FIXTURE, max_sessions=2)
    assert first.examples == loaded.examples[:2]
    assert first.stats.cut_by_max_sessions == 5

    short = load_kuaisearch(data_dir=FIXTURE, max_history=1)
    ex = next(e for e in short.examples if e.example_id == "kuaisearch-1013")
    assert [(h.item_id, h.timestamp) for h in ex.history] == [("102", 20)]  # the most recent

    remapped = load_kuaisearch(data_dir=FIXTURE, split_map={"train": "train", "test": "valid"})
    assert remapped.stats.by_split == {"train": 4, "valid": 3}

    one_file = load_kuaisearch(data_dir=FIXTURE, recall="recall_lite/test.jsonl")
    ex = next(e for e in one_file.examples if e.example_id == "kuaisearch-1013")
    assert ex.history == []  # the earlier sessions are in the file not read

    with pytest.raises(ValueError, match="items_scope"):
        load_kuaisearch(data_dir=FIXTURE, items_scope="some")
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_kuaisearch(data_dir=FIXTURE, recall="recall_full")


def test_examples_round_trip_with_chinese_text(loaded, tmp_path):
    write_examples(tmp_path / "ex.jsonl", loaded.examples)
    assert read_examples(tmp_path / "ex.jsonl") == loaded.examples
    assert "连衣裙" in (tmp_path / "ex.jsonl").read_text(encoding="utf-8")


def _set(key, value):
    def edit(rec):
        rec[key] = value
        return json.dumps(rec, ensure_ascii=False)

    return edit


def _drop(key):
    def edit(rec):
        del rec[key]
        return json.dumps(rec, ensure_ascii=False)

    return edit


def _raw(text):
    return lambda rec: text


RECALL = "recall_lite/train.jsonl"
ITEMS = "items_lite/train.jsonl"


@pytest.mark.parametrize(
    "file, line, edit, reason",
    [
        (RECALL, 2, _raw('{"user_id": 2, "session_id": 1021,'), "invalid JSON"),
        (RECALL, 1, _raw("[1, 2, 3]"), "expected a JSON object, got list"),
        (RECALL, 3, _drop("time_index"), "missing field 'time_index'"),
        (RECALL, 3, _set("time_index", "10"), "field 'time_index' must be an integer"),
        (RECALL, 3, _set("user_id", True), "field 'user_id' must be an id"),
        (RECALL, 1, _set("clicked_item_ids", "102"), "field 'clicked_item_ids' must be a list"),
        (RECALL, 1, _set("clicked_item_ids", [102.5]), r"clicked_item_ids\[0\] must be an id"),
        (RECALL, 1, _set("purchased_item_ids", [999]), "purchased item 999 is not in the items"),
        (RECALL, 5, _set("session_id", 1012), "duplicate session_id 1012 .first at .*:1\\)"),
        (RECALL, 2, _set("split", "holdout"), "unknown split 'holdout'"),
        (RECALL, 2, _set("query", "  "), "field 'query' is empty"),
        (ITEMS, 4, _drop("brand_name"), "missing field 'brand_name'"),
        (ITEMS, 2, _set("item_title", None), "field 'item_title' must be a string"),
        (ITEMS, 9, _set("item_id", 101), "duplicate item_id 101 .first at .*:1\\)"),
        (ITEMS, 5, _raw("not json"), "invalid JSON"),
    ],
)
def test_malformed_input_stops_with_file_line_reason(tmp_path, file, line, edit, reason):
    data = tmp_path / "kuaisearch"
    shutil.copytree(FIXTURE, data)
    path = data / file
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[line - 1] = edit(json.loads(lines[line - 1]))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ExampleFormatError, match=re.escape(f"{path}:{line}: ") + reason):
        load_kuaisearch(data_dir=data)
