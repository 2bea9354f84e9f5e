"""benchmarks/all_stages.py: summary rows, verdicts and skipped stages from hand-built bench JSON
(nothing is run or timed here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.scripts import script_module

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "all_stages.py"


@pytest.fixture(scope="module")
def bench():
    with script_module(SCRIPT, "bench_all_stages") as module:
        yield module


def test_verdict_thresholds(bench):
    assert bench.LINEAR_LIMIT == 1.5
    assert bench.verdict(1.0) == "PASS"
    assert bench.verdict(1.5) == "PASS"  # the limit itself is linear enough
    assert bench.verdict(1.5001) == "FAIL"
    assert bench.verdict(0.2) == "PASS"  # cheaper per unit at x10 (fixed costs amortised)
    assert bench.verdict(None) == "n/a"


def test_scale_row_per_unit_costs_and_ratio(bench):
    row = bench.scale_row(
        "data", "data (ingest)", "records ingested", "cpu", (100, 2.0), (1000, 30.0)
    )
    assert row["x1_s_per_unit"] == pytest.approx(0.02)
    assert row["x10_s_per_unit"] == pytest.approx(0.03)
    assert row["ratio"] == pytest.approx(1.5)
    assert row["verdict"] == "PASS"
    worse = bench.scale_row(
        "data", "data (ingest)", "records ingested", "cpu", (100, 2), (1000, 31)
    )
    assert worse["ratio"] == pytest.approx(1.55)
    assert worse["verdict"] == "FAIL"


def test_scale_row_without_enough_x10_work_is_not_judged(bench):
    # The validation items file had only 6 items: x10 judged 6, not 40.
    row = bench.scale_row("validation", "validation", "judge items", "wall", (4, 8.0), (6, 30.0))
    assert row["ratio"] == pytest.approx(2.5)
    assert row["verdict"].startswith("n/a: x10 ran only 1.5x")
    zero = bench.scale_row("queries", "queries", "LM candidates", "wall", (0, 1.0), (10, 1.0))
    assert zero["ratio"] is None and zero["verdict"] == "n/a"


def test_data_and_errors_rows_from_bench_json(bench):
    ingest = {
        "x1x10": {
            "rows": [
                {"scale": 1, "records": 3600, "cpu_s": 0.9, "wall_s": 1.2},
                {"scale": 10, "records": 36000, "cpu_s": 12.6, "wall_s": 20.0},
            ]
        }
    }
    (row,) = bench.stage_rows("data", ingest)
    assert (row["x1_units"], row["x10_units"]) == (3600, 36000)
    assert row["clock"] == "cpu"  # CPU seconds, not the wall time
    assert row["x1_s_per_unit"] == pytest.approx(0.9 / 3600)
    assert row["ratio"] == pytest.approx(1.4)
    assert row["verdict"] == "PASS"

    def cold(n, cpu):
        return {"cold": {"sentences": n, "cpu_seconds": cpu, "seconds": 99.0}}

    (err,) = bench.stage_rows("errors", {"x1": cold(3000, 6.0), "x10": cold(30000, 96.0)})
    assert err["unit"] == "sentences corrected"
    assert err["ratio"] == pytest.approx(1.6)
    assert err["verdict"] == "FAIL"


def test_syntax_rows_sum_the_fit_totals_not_the_per_model_entries(bench):
    def fit(users, enc, em, models):
        per_model = {"attribution:knn": models / 2, "attribution:vmf": models / 2}
        cpu = {"encoder_3_epochs": enc, "rank_one_profiles_em": em, "2_attribution_models": models}
        return {"users": users, "sentences": users * 50, "cpu_s": {**cpu, **per_model}}

    def parse(n, per_cpu_s):
        return {"parse": {"sentences": n, "stage_sent_per_cpu_s": per_cpu_s, "ratio_cpu": 0.97}}

    benches = {
        "fit": {"fit": [fit(150, 1.0, 0.5, 0.5), fit(1500, 10.0, 6.0, 6.0)]},
        "parse_x1": parse(3000, 1000.0),
        "parse_x10": parse(30000, 800.0),
    }
    fit_row, parse_row = bench.stage_rows("syntax", benches)
    assert fit_row["x1_seconds"] == pytest.approx(2.0)  # not 2.5: per-model entries left out
    assert fit_row["ratio"] == pytest.approx(1.1)
    assert parse_row["unit"] == "sentences parsed"
    assert parse_row["x1_s_per_unit"] == pytest.approx(0.001)
    assert parse_row["ratio"] == pytest.approx(1.25)
    assert [r["verdict"] for r in (fit_row, parse_row)] == ["PASS", "PASS"]


def _retrieval_json(bm25_ours=(0.5, 5.0), dense_ratio=(0.97, 0.99)):
    def row(kind, scale, first, index, warm, rank, queries):
        return {
            "retriever": kind,
            "first_stage": first,
            "scale": scale,
            "documents": 300 * scale,
            "queries": queries,
            "index_s": index,
            "index_warm_s": warm,
            "rank_s": rank,
        }

    return {
        "retrievers": [
            row("bm25", 1, True, 0.1, 0.1, 0.2, 200),
            row("minilm", 1, True, 5.0, 1.0, 0.8, 200),
            row("rerank", 1, False, 9.0, 0.0, 4.0, 4),
            row("bm25", 10, True, 1.0, 1.0, 0.5, 200),
            row("minilm", 10, True, 15.0, 11.0, 3.0, 200),
            row("rerank", 10, False, 9.0, 0.0, 4.0, 4),
        ],
        "bm25": [
            {"variant": "ours (bm25 wrapper)", "scale": 1, "total_s": bm25_ours[0]},
            {"variant": "plain bm25s", "scale": 1, "total_s": 0.5},
            {"variant": "ours (bm25 wrapper)", "scale": 10, "total_s": bm25_ours[1]},
            {"variant": "plain bm25s", "scale": 10, "total_s": 4.8},
        ],
        "dense": [
            {"scale": 1, "throughput_ratio": dense_ratio[0]},
            {"scale": 10, "throughput_ratio": dense_ratio[1]},
        ],
    }


def test_retrieval_rows_use_warm_index_and_first_stage_rankers(bench):
    index, rank = bench.stage_rows("retrieval", {"x1x10": _retrieval_json()})
    assert (index["x1_units"], index["x10_units"]) == (300, 3000)
    assert index["x1_seconds"] == pytest.approx(1.1)  # warm index: the model load left out
    assert index["ratio"] == pytest.approx((12.0 / 3000) / (1.1 / 300))
    # Ranking: the first-stage retrievers only, per query-document pair.
    assert (rank["x1_units"], rank["x10_units"]) == (200 * 300, 200 * 3000)
    assert rank["x1_seconds"] == pytest.approx(1.0)
    assert rank["ratio"] == pytest.approx(0.35)
    assert rank["verdict"] == "PASS"


def test_ttp_queries_and_validation_rows(bench):
    def ttp(steps, sps, queries, qps):
        return {
            "sft": {"steps": steps, "steps_per_s": sps},
            "query_encoding": {"queries": queries, "generate_and_embed_queries_per_s": qps},
        }

    sft, enc = bench.stage_rows("ttp", {"x1": ttp(2, 0.2, 8, 2.0), "x10": ttp(20, 0.25, 80, 1.0)})
    assert sft["x1_s_per_unit"] == pytest.approx(5.0)
    assert sft["ratio"] == pytest.approx(0.8)
    assert enc["ratio"] == pytest.approx(2.0)
    assert (sft["verdict"], enc["verdict"]) == ("PASS", "FAIL")

    def lm(n, secs):
        return {"lm": {"candidates": n, "sampling_seconds": secs}}

    (q,) = bench.stage_rows("queries", {"x1": lm(24, 12.0), "x10": lm(240, 100.0)})
    assert q["clock"] == "wall" and q["ratio"] == pytest.approx(100 / 120)

    (v,) = bench.stage_rows(
        "validation",
        {"x1": {"items": 4, "cold_wall_s": 10.0}, "x10": {"items": 40, "cold_wall_s": 120.0}},
    )
    assert v["ratio"] == pytest.approx(1.2) and v["verdict"] == "PASS"


def test_missing_figures_are_an_error_row_not_a_crash(bench):
    rows = bench.stage_rows("errors", {"x1": {"cold": {"sentences": 10}}})
    assert [r["row"] for r in rows] == ["errors"]
    assert rows[0]["verdict"].startswith("error: figures missing")
    assert bench.any_failed(rows, [])


def test_skipped_stages_from_missing_results(bench, tmp_path):
    for stage in ("queries", "validation", "ttp"):
        reason = bench.missing_inputs(stage, tmp_path)
        assert reason.startswith("skipped: no ") and str(tmp_path) in reason
    for stage in ("data", "syntax", "errors", "retrieval"):  # they make their own inputs
        assert bench.missing_inputs(stage, tmp_path) is None
    (tmp_path / "validation").mkdir()
    (tmp_path / "validation" / "items.jsonl").write_text("{}\n")
    assert bench.missing_inputs("validation", tmp_path) is None
    (tmp_path / "ttp" / "Musical_Instruments").mkdir(parents=True)
    (tmp_path / "ttp" / "Musical_Instruments" / "sft.jsonl").write_text("{}\n")
    assert bench.missing_inputs("ttp", tmp_path) is None

    rows = bench.status_rows("ttp", bench.missing_inputs("queries", tmp_path))
    assert [r["row"] for r in rows] == ["ttp (SFT)", "ttp (queries)"]
    assert all(r["verdict"].startswith("skipped") for r in rows)
    assert not bench.any_failed(rows, [])  # skipped is not a failure under --check
    table = bench.format_scale_table(rows)
    assert "| ttp (SFT) | SFT steps | wall | - | - | - | - | - | skipped: no " in table


def test_plans_scale_x10_and_quick_is_smaller(bench, tmp_path):
    full = bench.plan("errors", False, tmp_path)
    quick = bench.plan("errors", True, tmp_path)
    assert full["x10"][full["x10"].index("--n-users") + 1] == str(
        10 * int(full["x1"][full["x1"].index("--n-users") + 1])
    )
    assert int(quick["x1"][2]) < int(full["x1"][2])
    ttp = bench.plan("ttp", False, tmp_path)
    assert ttp["x1"][ttp["x1"].index("--results") + 1] == str(tmp_path)
    queries = bench.plan("queries", False, tmp_path)
    assert "--adapter" not in queries["x1"]  # no trained adapter in this results folder
    for stage in bench.STAGES:
        assert bench.plan(stage, True, tmp_path)


def test_reference_rows_targets(bench):
    syntax = {
        "parse_x1": {"parse": {"ratio_cpu": 0.95}},
        "parse_x10": {"parse": {"ratio_cpu": 0.91}},
    }
    benches = {"retrieval": {"x1x10": _retrieval_json()}, "syntax": syntax}
    bm25, parse, dense = bench.reference_rows(benches, {})
    assert bm25["x1"] == pytest.approx(1.0) and bm25["x10"] == pytest.approx(5.0 / 4.8)
    assert bm25["target"] == "<= 1.1" and bm25["verdict"] == "PASS"
    assert parse["target"] == ">= 0.9" and parse["verdict"] == "PASS"
    assert dense["target"] == ">= 0.95" and dense["verdict"] == "PASS"

    slow = {"retrieval": {"x1x10": _retrieval_json(bm25_ours=(0.5, 5.5), dense_ratio=(0.94, 1))}}
    bm25, parse, dense = bench.reference_rows(slow, {"syntax": "stage not selected"})
    assert bm25["x10"] == pytest.approx(5.5 / 4.8) and bm25["verdict"] == "FAIL"
    assert dense["verdict"] == "FAIL"  # one scale below 0.95 fails the reference
    assert parse["verdict"] == "not measured (stage not selected)"
    assert bench.any_failed([], [bm25, parse, dense])
    assert not bench.any_failed([], [parse])
    assert "| parse: stage / plain spaCy nlp.pipe |" in bench.format_reference_table([parse])
    # The targets themselves pass: "within 1.1x", "at least 0.9x".
    assert bench.reference_row("r", "m", {1: 1.1, 10: 1.1}, "<=", 1.1)["verdict"] == "PASS"
    assert bench.reference_row("r", "m", {1: 0.9}, ">=", 0.9)["verdict"] == "PASS"
    assert bench.reference_row("r", "m", {10: 0.89}, ">=", 0.9)["verdict"] == "FAIL"
