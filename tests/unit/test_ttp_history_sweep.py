"""The history-length sweep (Figure 6): point settings, reselected histories, Figure 6's rows,
the history_length_peak claim, the figure's outputs and the workflow helpers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from personalir.common.io import read_json
from personalir.ttp.evaluation import history_sweep as hs
from personalir.ttp.evaluation import names
from personalir.ttp.inputs.data import (
    Example,
    HistoryEntry,
    Item,
    ItemCorpus,
    read_examples,
    write_examples,
)
from personalir.ttp.inputs.relevance import RelevanceModel
from personalir.ttp.paper.figure6 import figure6_table, make_figure6

PAPER_PATH = Path(__file__).resolve().parents[2] / "config" / "paper_results" / "ttp.yaml"
KW = {"samples": 200, "confidence": 0.95, "seed": 7}
TTP = {
    "history": {"n": 3, "relevance": {"type": "dense"}},
    "split": {"max_test_per_label": {"General": 25}, "max_train_per_set": 150},
    "items": {"fields": ["title"], "max_features": 3},
    "sft": {"epochs": 3, "max_query_tokens": 128, "history_item_tokens": 12},
    "history_sweep": {"values": [8, 1, 3], "max_train_per_set": 2, "sft": {"epochs": 1}},
}


class WordOverlap(RelevanceModel):
    """Shared words of query and item text (a transparent relevance model)."""

    name = "overlap"

    def score(self, queries, texts):
        return np.asarray(
            [len(set(q.split()) & set(t.split())) for q, t in zip(queries, texts, strict=True)],
            dtype=float,
        )


def test_point_settings_grow_the_prompt_and_apply_the_sweep_overrides():
    assert names.sweep_values(TTP) == [1, 3, 8]
    assert names.sweep_values({}) == []
    p8 = names.point_ttp(TTP, 8)
    assert p8["history"]["n"] == 8
    assert p8["split"]["max_train_per_set"] == 2
    assert p8["sft"]["epochs"] == 1
    # five items above the main N = 3, 12 tokens each
    assert p8["sft"]["max_query_tokens"] == 128 + 5 * 12
    # a shorter history keeps the main budget; the main section is not changed
    assert names.point_ttp(TTP, 1)["sft"]["max_query_tokens"] == 128
    assert TTP["sft"]["epochs"] == 3 and TTP["history"]["n"] == 3
    assert names.point_method(5) == "ttp_history_n5"


def _examples(tmp_path):
    corpus = ItemCorpus(
        {
            "A": Item("A", "red guitar strap"),
            "B": Item("B", "drum sticks"),
            "C": Item("C", "guitar capo"),
            "T": Item("T", "guitar strap deluxe"),
        }
    )
    hist = [HistoryEntry(h, i) for i, h in enumerate(["A", "B", "C"])]
    exs = [
        Example(f"e{i}", "sample_world", "D", "u", "guitar strap", "T", "Broad", split, list(hist))
        for i, split in enumerate(["train", "train", "train", "valid", "test"])
    ]
    write_examples(tmp_path / "examples.jsonl", exs)
    corpus.write(tmp_path / "items.parquet")
    return tmp_path / "examples.jsonl", tmp_path / "items.parquet"


def test_point_examples_cap_training_and_reselect_history(tmp_path):
    examples, items = _examples(tmp_path)
    report = hs.build_point_examples(
        examples_path=examples,
        items_path=items,
        ttp=names.point_ttp(TTP, 1),
        examples_out=tmp_path / "out.jsonl",
        report_out=tmp_path / "out.report.json",
        relevance=WordOverlap(),
        log=lambda *_: None,
    )
    out = read_examples(tmp_path / "out.jsonl")
    # two of three training searches kept (first by id); validation and test untouched
    assert [e.example_id for e in out] == ["e0", "e1", "e3", "e4"]
    assert report["removed_by_training_cap"] == {"train": 1}
    # N = 1: the item sharing most words with the query ("red guitar strap")
    assert {tuple(e.selected_history) for e in out} == {("A",)}
    assert read_json(tmp_path / "out.report.json")["history_n"] == 1
    hs.build_point_examples(
        examples_path=examples,
        items_path=items,
        ttp=names.point_ttp(TTP, 8),
        examples_out=tmp_path / "out8.jsonl",
        report_out=tmp_path / "out8.report.json",
        relevance=WordOverlap(),
        log=lambda *_: None,
    )
    # a history shorter than N keeps every item, in time order, and is counted
    assert read_examples(tmp_path / "out8.jsonl")[0].selected_history == ["A", "B", "C"]
    assert read_json(tmp_path / "out8.report.json")["shorter_than_n"] == 4


def _sweep(values: dict[int, dict[str, list[int]]]) -> pd.DataFrame:
    rows = []
    for n, per_set in values.items():
        for label, vals in per_set.items():
            for i, v in enumerate(vals):
                rows.append(
                    {
                        "method": names.point_method(n),
                        "example_id": f"{label}-{i}",
                        "domain": "D",
                        "label": label,
                        "Recall@20": float(v),
                        "history_n": n,
                    }
                )
    return pd.DataFrame(rows)


def _sets(g, b, lt):
    return {"General": g, "Broad": b, "LongTail": lt}


PEAK_AT_3 = {
    1: _sets([1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]),
    3: _sets([1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]),
    8: _sets([1, 1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 0]),
}


def test_figure6_rows_golden_means_and_bracketing_cis():
    rows = hs.figure6_rows(_sweep(PEAK_AT_3), **KW)
    got = {(r.history_n, r.set): r.value for r in rows.itertuples()}
    assert got[(3, "General")] == pytest.approx(0.75)
    assert got[(3, "Avg")] == pytest.approx((0.75 + 0.5 + 0.25) / 3)
    assert got[(1, "LongTail")] == 0.0
    assert (rows["ci_low"] <= rows["value"] + 1e-12).all()
    assert (rows["value"] <= rows["ci_high"] + 1e-12).all()
    assert set(rows["queries"]) == {4, 12}
    table = figure6_table(rows)
    assert list(table["N"]) == [1] * 4 + [3] * 4 + [8] * 4
    assert list(table["Set"][:4]) == ["General", "Broad", "LongTail", "Avg"]


def _claim():
    paper = yaml.safe_load(PAPER_PATH.read_text(encoding="utf-8"))
    return next(c for c in paper["claims"] if c["id"] == hs.CLAIM_ID)


def test_peak_claim_held_with_the_runner_up_margin():
    v = hs.history_length_peak(_sweep(PEAK_AT_3), _claim(), main_n=3, **KW)
    assert v["status"] == "held"
    # N = 3: Avg 0.5; runner-up N = 8: (0.5 + 0.5 + 0.25) / 3
    assert v["margin"] == pytest.approx(100 * (0.5 - 1.25 / 3))
    assert v["ci_low"] <= v["margin"] <= v["ci_high"]
    assert "runner-up N = 8" in v["detail"]


def test_peak_claim_not_held_when_a_longer_history_wins():
    values = dict(PEAK_AT_3)
    values[8] = _sets([1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0])
    v = hs.history_length_peak(_sweep(values), _claim(), main_n=3, **KW)
    assert v["status"] == "not held"
    assert v["margin"] == pytest.approx(100 * (0.5 - 0.75))
    assert "peak at N = 8" in v["detail"]


def test_peak_claim_not_applicable_without_the_main_n():
    frame = _sweep({1: PEAK_AT_3[1], 8: PEAK_AT_3[8]})
    v = hs.history_length_peak(frame, _claim(), main_n=3, **KW)
    assert v["status"] == "not applicable"
    assert "main N = 3" in v["detail"]


def test_make_figure6_writes_csv_and_pdf_also_without_a_sweep(tmp_path):
    rows = hs.figure6_rows(_sweep(PEAK_AT_3), **KW)
    rows.to_parquet(tmp_path / "rows.parquet")
    table = make_figure6(
        rows_path=tmp_path / "rows.parquet",
        paper_path=PAPER_PATH,
        main_n=3,
        config_label="test",
        csv_out=tmp_path / "f6.csv",
        pdf_out=tmp_path / "f6.pdf",
    )
    assert len(pd.read_csv(tmp_path / "f6.csv")) == len(table) == 12
    assert (tmp_path / "f6.pdf").read_bytes()[:4] == b"%PDF"
    empty = make_figure6(
        rows_path=None,
        paper_path=PAPER_PATH,
        main_n=3,
        config_label="test",
        csv_out=tmp_path / "e.csv",
        pdf_out=tmp_path / "e.pdf",
    )
    assert empty.empty and (tmp_path / "e.pdf").exists()


def test_workflow_helpers_give_each_point_its_settings():
    from personalir.workflow import ttp as wf

    config = {"results_dir": "res", "ttp": {**TTP, "enabled": True}}
    assert wf.history_values(config) == [1, 3, 8]
    assert wf.history_values({"ttp": {**TTP, "enabled": False}}) == []
    params = json.loads(wf.history_params(config, "8", ("history", "sft")))
    assert params["history"]["n"] == 8 and params["sft"]["max_query_tokens"] == 188
    models = json.loads(wf.history_run_models(config, 8))
    assert models == {
        "ttp_adapter": "res/ttp/history/n8/adapter",
        "ttp_backbone": "res/ttp/backbone",
    }


def test_sweep_claims_read_the_per_query_file_or_say_why_not(tmp_path):
    _sweep(PEAK_AT_3).to_parquet(tmp_path / "pq.parquet")
    claims = [{"id": "other"}, _claim()]
    (v,) = hs.sweep_claims(claims, tmp_path / "pq.parquet", main_n=3, **KW)
    assert v["status"] == "held"
    (none,) = hs.sweep_claims(claims, None, main_n=3, **KW)
    assert none["status"] == "not applicable" and "no history-length sweep" in none["detail"]


def test_well_formed_shares_read_beside_each_run_and_reach_the_csv(tmp_path):
    runs = []
    for n, ex_set, share in ((1, "A", 0.0), (1, "B", 0.5), (3, "A", 1.0)):
        run = tmp_path / f"n{n}" / ex_set / "ttp.trec"
        run.parent.mkdir(parents=True)
        run.write_text("")
        (run.parent / "ttp.info.json").write_text(json.dumps({"well_formed_share": share}))
        runs.append((n, ex_set, run))
    assert hs.well_formed_shares(runs) == {1: 0.25, 3: 1.0}
    rows = hs.figure6_rows(_sweep(PEAK_AT_3), **KW, well_formed={1: 0.25, 3: 1.0})
    table = figure6_table(rows)
    got = table.drop_duplicates("N").set_index("N")["Well-formed"]
    assert got[1] == 0.25 and got[3] == 1.0 and pd.isna(got[8])
    (tmp_path / "n3" / "A" / "ttp.info.json").write_text("{}")
    with pytest.raises(ValueError, match="ttp.info.json: no well_formed_share"):
        hs.well_formed_shares(runs)
