"""Evaluation measures (golden values), exact search, bootstrap CIs, the Table 4 layout."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from personalir.ttp.evaluation.evaluate import bootstrap_ci, paired_difference, summarise
from personalir.ttp.inputs.data import Example
from personalir.ttp.model.search import MEASURES, exact_search, per_query_measures
from personalir.ttp.paper.tables import table4, table4_latex


def _ex(eid, target, label):
    return Example(eid, "s", "d", "u", "q", target, label, "test", [])


def test_measures_golden_values():
    exs = [_ex("q1", "B", "Broad"), _ex("q2", "Z", "General"), _ex("q3", "A", "General")]
    run = {"q1": ["A", "B", "C"], "q2": ["A", "B"]}  # q3 not in the run
    frame = per_query_measures(exs, run, "m").set_index("example_id")
    # q1: target at rank 2 -> recall 1, RR 1/2, nDCG = 1/log2(3); q2: never found; q3: absent
    assert frame.loc["q1", "rank"] == 2
    assert frame.loc["q1", "Recall@10"] == 1.0 and frame.loc["q1", "HR@20"] == 1.0
    assert frame.loc["q1", "MRR@100"] == pytest.approx(0.5)
    assert frame.loc["q1", "nDCG@20"] == pytest.approx(1 / math.log2(3))
    for q in ("q2", "q3"):
        assert all(frame.loc[q, m] == 0.0 for m in MEASURES)
    assert list(frame["method"].unique()) == ["m"]


def test_exact_search_matches_brute_force():
    rng = np.random.default_rng(0)
    items = rng.normal(size=(50, 8)).astype(np.float32)
    queries = rng.normal(size=(5, 8)).astype(np.float32)
    ids = [f"i{k}" for k in range(50)]
    ranking = exact_search([f"q{k}" for k in range(5)], queries, ids, items, depth=7)
    for k in range(5):
        expect = np.argsort(-(items @ queries[k]), kind="stable")[:7]
        assert [d for d, _ in ranking[f"q{k}"]] == [ids[j] for j in expect]


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    values = np.array([0, 1, 1, 0, 1, 1, 1, 0, 1, 1], dtype=float)
    lo, hi = bootstrap_ci(values, 500, 0.95, 1, "x")
    assert (lo, hi) == bootstrap_ci(values, 500, 0.95, 1, "x")
    assert lo < values.mean() < hi
    assert bootstrap_ci(np.ones(5), 200, 0.95, 1) == (1.0, 1.0)


def _frame():
    rows = []
    for k in range(40):
        for method, hit in (("ttp", k % 4 != 0), ("dense", k % 2 == 0)):
            rows.append(
                {
                    "method": method,
                    "example_id": f"e{k}",
                    "domain": "D",
                    "label": "Broad" if k < 20 else "General",
                    "misspelled": False,
                    "rank": 1 if hit else 0,
                    **{m: float(hit) for m in MEASURES},
                }
            )
    return pd.DataFrame(rows)


def test_summary_pools_domains_and_labels_and_paired_difference():
    frame = _frame()
    summary = summarise(frame, samples=200, confidence=0.95, seed=0)
    pooled = summary[
        (summary["domain"] == "All")
        & (summary["label"] == "All")
        & (summary["measure"] == "Recall@10")
    ].set_index("method")
    assert pooled.loc["ttp", "value"] == pytest.approx(0.75)
    assert pooled.loc["dense", "value"] == pytest.approx(0.5)
    assert pooled.loc["ttp", "queries"] == 40
    d = paired_difference(
        frame, "ttp", "dense", "Recall@10", samples=300, confidence=0.95, seed=0, label="Broad"
    )
    assert d["queries"] == 20 and d["difference"] == pytest.approx(0.25)
    assert d["diff_ci_low"] <= 0.25 <= d["diff_ci_high"]


def test_table4_layout_and_latex():
    summary = summarise(_frame(), samples=100, confidence=0.95, seed=0)
    labels = {"ttp": "TTP (SFT)", "dense": "Dense (query only)"}
    paper = {"ttp": {"Broad": {"Recall@10": 0.5}}}
    table = table4(summary, ["dense", "ttp"], labels, measures=("Recall@10",), paper=paper)
    assert list(table["Method"]) == ["Dense (query only)", "TTP (SFT)"]
    assert table.loc[1, "Broad Recall@10"] == pytest.approx(0.75)
    assert table.loc[1, "Broad Recall@10 paper"] == 0.5
    assert math.isnan(table.loc[0, "Broad Recall@10 paper"])
    assert "LongTail Recall@10" not in table.columns  # no such test set in the data
    tex = table4_latex(table, caption="c", label="tab:x", with_paper=True)
    assert r"\textbf{0.750}" in tex and "--" in tex
    # One part per test set; a test set heads its measures (short names), each over ours
    # and the paper's, where the paper has a value for some method.
    assert tex.count(r"\begin{table}") == 3 and r"\label{tab:x-c}" in tex
    lines = tex.splitlines()
    assert r" & \multicolumn{2}{c}{Broad} \\" in lines
    assert r" & \multicolumn{2}{c}{R@10} \\" in lines and r"Method & ours & paper \\" in lines
    assert r" & General \\" in lines and r"Method & ours \\" in lines
    assert "The paper reports no values for General, All." in tex


def test_generating_runs_take_the_sft_threads():
    from personalir.workflow.ttp import run_threads, sft_threads

    config = {"threads": 2, "ttp": {"sft": {"threads": None}}}
    assert sft_threads(config) == 2
    assert run_threads(config, "ttp") == 2 and run_threads(config, "hyde") == 2
    assert run_threads(config, "bm25") == 1 and run_threads(config, "decoupled") == 1
    config["ttp"]["sft"]["threads"] = 1
    assert run_threads(config, "ttp") == 1


def test_decoupled_reads_the_rewriter_and_its_own_retriever():
    from personalir.workflow.ttp import dense_ft_inputs, rewrites_option, run_inputs, run_models

    config = {
        "results_dir": "res",
        "domains": ["A", "B"],
        "ttp": {
            "source": "sample_world",
            "domains": None,
            "methods": ["dense", "decoupled"],
            "dense": {"fine_tune": True, "model": "base"},
            "hyde": {"generator": "backbone"},
        },
    }
    assert run_models(config, "decoupled") == {"decoupled": "res/ttp/dense/decoupled"}
    inputs = run_inputs(config, "decoupled", "B")
    assert inputs == {
        "decoupled": "res/ttp/dense/decoupled/config.json",
        "decoupled_weights": "res/ttp/dense/decoupled/model.safetensors",
        "rewrites": "res/ttp/B/rewrites.json",
    }
    assert rewrites_option(inputs) == ["--rewrites", "res/ttp/B/rewrites.json"]
    # the retriever trains on every set's rewrites; the other variants read none
    ft = dense_ft_inputs(config, "decoupled")
    assert ft == {"rewrites": ["res/ttp/A/rewrites.json", "res/ttp/B/rewrites.json"]}
    assert rewrites_option(ft) == [
        "--rewrites",
        "res/ttp/A/rewrites.json",
        "res/ttp/B/rewrites.json",
    ]
    assert dense_ft_inputs(config, "dense") == {} and rewrites_option({}) == []
    config["ttp"]["dense"]["fine_tune"] = False  # no fine-tuning: the base model, no folder
    assert run_models(config, "decoupled") == {"decoupled": "base"}
    assert "decoupled" not in run_inputs(config, "decoupled", "B")
