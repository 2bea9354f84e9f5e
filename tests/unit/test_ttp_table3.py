"""Table 3 (the test sets' statistics) on hand-built example, item and Relevance files.

Golden values are counted by hand from the records below: the set ``Dom`` has General test
queries "red guitar strap" (3 words, 2 history items) and "capo" (1 word, 4 items), a Broad
"strings" (1 word, 1 item), a LongTail "heavy gauge bronze acoustic strings" (5 words, 3
items), three training and one validation example; five items. The public set ``Amazon`` has
two test queries of 2 and 4 words (histories 6 and 2), three items. The Relevance file has two
queries ("q one" and "q two three": 2 and 3 words) over three distinct items.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import yaml

from personalir.ttp.inputs.data import ExampleFormatError, Item, ItemCorpus
from personalir.ttp.paper.table3 import make_table3

ITEMS = ("I1", "I2", "I3", "I4", "I5")
# The paper-results file's shape (values of config/paper_results/ttp.yaml; LongTail left out).
PAPER_DATASETS = {
    "General": {"queries": 15795, "items": 4481107, "avg_hist": 8.1, "avg_q_len": 7.3},
    "Broad": {"queries": 14634, "items": 4481107, "avg_hist": 8.1, "avg_q_len": 6.2},
    "KuaiSearch": {"queries": 8468, "items": 6634118, "avg_hist": 16.5, "avg_q_len": 10.0},
    "Amazon": {"queries": 2174, "items": 35772, "avg_hist": 40.1, "avg_q_len": 36.0},
    "Relevance": {"queries": 300000, "items": 300000, "avg_q_len": 7.4},
    "training_samples": {"Amazon": 6896, "proprietary": 1000000},
}
FIXTURE = {"Amazon": {"format": "personalwab", "fixture_domain": "Video_Games"}}


def _example(eid, query, label, split, n_hist, domain="Dom"):
    return {
        "example_id": eid,
        "source": "sample_world",
        "domain": domain,
        "user_id": f"U-{eid}",
        "query": query,
        "target": ITEMS[0],
        "label": label,
        "split": split,
        "history": [{"item_id": ITEMS[i % 3], "timestamp": i} for i in range(n_hist)],
        "selected_history": [ITEMS[0]] if n_hist else [],
    }


def _write_set(folder, records, item_ids):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "examples.jsonl", "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")
    ItemCorpus({i: Item(i, f"title {i}") for i in item_ids}).write(folder / "items.parquet")
    return folder / "examples.jsonl", folder / "items.parquet"


@pytest.fixture
def files(tmp_path):
    dom = _write_set(
        tmp_path / "Dom",
        [
            _example("d1", "red guitar strap", "General", "test", 2),
            _example("d2", "capo", "General", "test", 4),
            _example("d3", "strings", "Broad", "test", 1),
            _example("d4", "heavy gauge bronze acoustic strings", "LongTail", "test", 3),
            _example("d5", "train one", "General", "train", 5),
            _example("d6", "train two", "Broad", "train", 5),
            _example("d7", "train three", "LongTail", "train", 5),
            _example("d8", "valid one", "Broad", "valid", 5),
        ],
        ITEMS,
    )
    amazon = _write_set(
        tmp_path / "Amazon",
        [
            _example("a1", "wired mouse", "Amazon", "test", 6, "Amazon"),
            _example("a2", "neon blue gaming mouse", "Amazon", "test", 2, "Amazon"),
        ],
        ITEMS[:3],
    )
    pairs = tmp_path / "pairs.jsonl"
    with open(pairs, "w", encoding="utf-8") as fh:
        for qid, query, item in [
            ("q1", "q one", "I1"),
            ("q1", "q one", "I2"),
            ("q2", "q two three", "I2"),
            ("q2", "q two three", "I3"),
        ]:
            fh.write(json.dumps({"query_id": qid, "query": query, "item_id": item, "label": 1}))
            fh.write("\n")
    paper = tmp_path / "paper.yaml"
    paper.write_text(yaml.safe_dump({"datasets": PAPER_DATASETS}))
    return {"dom": dom, "amazon": amazon, "pairs": pairs, "paper": paper, "root": tmp_path}


def _make(files, *, paper=True, source="sample_world", public=None, relevance=True):
    public = FIXTURE if public is None else public
    root = files["root"]
    table = make_table3(
        ttp_sets=[("Dom", *files["dom"])],
        public_sets=[("Amazon", *files["amazon"])] if public else [],
        relevance_paths=[files["pairs"]] if relevance else [],
        paper_path=files["paper"] if paper else None,
        source=source,
        public=public,
        config_label="unit",
        csv_out=root / "out" / "table3.csv",
        tex_out=root / "out" / "table3.tex",
    )
    return table.set_index("dataset"), (root / "out" / "table3.tex").read_text()


def test_statistics_of_hand_built_sets(files):
    table, _ = _make(files)
    assert list(table.index) == [
        "General",
        "Broad",
        "LongTail",
        "Amazon",
        "KuaiSearch",
        "Relevance",
    ]
    general = table.loc["General"]
    assert (general["queries"], general["items"], general["training_samples"]) == (2, 5, 3)
    assert general["avg_hist"] == pytest.approx(3.0)  # (2 + 4) / 2
    assert general["avg_q_len"] == pytest.approx(2.0)  # (3 + 1) / 2
    assert general["avg_selected_hist"] == pytest.approx(1.0)
    assert table.loc["Broad", "queries"] == 1  # the validation Broad example is not a test query
    assert table.loc["LongTail", "avg_q_len"] == pytest.approx(5.0)
    amazon = table.loc["Amazon"]
    assert (amazon["queries"], amazon["items"], amazon["training_samples"]) == (2, 3, 0)
    assert amazon["avg_hist"] == pytest.approx(4.0) and amazon["avg_q_len"] == pytest.approx(3.0)
    relevance = table.loc["Relevance"]
    assert (relevance["queries"], relevance["items"]) == (2, 3)
    assert relevance["avg_q_len"] == pytest.approx(2.5)
    assert math.isnan(relevance["avg_hist"]) and pd.isna(relevance["training_samples"])


def test_paper_values_sit_beside_ours(files):
    table, tex = _make(files)
    assert table.loc["General", "paper_queries"] == 15795
    assert table.loc["General", "paper_training_samples"] == 1000000  # the proprietary source
    assert table.loc["Amazon", "paper_training_samples"] == 6896
    assert math.isnan(table.loc["LongTail", "paper_avg_hist"])  # not in this paper file
    # a set only the paper reports: its values, ours missing
    assert table.loc["KuaiSearch", "paper_items"] == 6634118
    assert pd.isna(table.loc["KuaiSearch", "queries"])
    assert r"\label{tab:ttp-table3}" in tex and r"\toprule" in tex and r"\bottomrule" in tex
    assert r"General & 2 & 15{,}795 & 5 & 4{,}481{,}107 & 3.0 & 8.1 & 2.0 & 7.3 & 3" in tex
    assert "Paper values beside ours" in tex


def test_without_paper_values_every_paper_cell_is_missing(files):
    table, tex = _make(files, paper=False)
    paper_cols = [c for c in table.columns if c.startswith("paper_")]
    assert paper_cols and table[paper_cols].isna().all().all()
    assert "KuaiSearch" not in table.index  # no paper-only rows without a paper file
    assert "not bundled" in tex and "ours & paper" not in tex
    header = next(line for line in tex.splitlines() if line.startswith("Dataset"))
    assert header == r"Dataset & Queries & Items & Avg. hist. & Avg. q. len & Train \\"
    assert r"Relevance & 2 & 3 & -- & 2.5 & -- \\" in tex


def test_caption_says_synthetic_only_for_the_sample_world(files):
    _, sample = _make(files)
    assert "synthetic sample world" in sample and "synthetic Video\\_Games domain" in sample
    _, released = _make(files, source="personalwab", public={"Amazon": {"format": "personalwab"}})
    assert "synthetic" not in released
    assert "applied to the public sets untrained" in released


def test_no_public_sets_and_no_relevance_set(files):
    table, tex = _make(files, public={}, relevance=False, paper=False)
    assert list(table.index) == ["General", "Broad", "LongTail"]
    assert "untrained" not in tex


def test_a_broken_examples_file_is_named(files):
    path = files["dom"][0]
    path.write_text(path.read_text() + '{"example_id": "x"}\n')
    with pytest.raises(ExampleFormatError, match=str(path)):
        _make(files)
