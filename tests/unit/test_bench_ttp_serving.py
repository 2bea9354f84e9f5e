"""benchmarks/bench_ttp_serving.py end to end on tiny random models (no timing thresholds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures import models as tm
from tests.fixtures.scripts import script_module

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_ttp_serving.py"


@pytest.fixture(scope="module")
def bench():
    with script_module(SCRIPT, "bench_ttp_serving") as module:
        yield module


def test_synthetic_requests_are_deterministic_and_sized(bench):
    a, corpus = bench.synthetic_examples(6, seed=3, history=(5, 10))
    b, _ = bench.synthetic_examples(6, seed=3, history=(5, 10))
    assert [(e.user_id, e.query, e.selected_history) for e in a] == [
        (e.user_id, e.query, e.selected_history) for e in b
    ]
    assert all(5 <= len(e.selected_history) <= 10 for e in a)
    assert all(i in corpus for e in a for i in e.selected_history)
    assert len({e.user_id for e in a}) == 6  # one request per user: one store pair each


def test_four_paths_measured_and_hits_served_from_the_store(bench, tmp_path):
    lm = tm.build_tiny_causal_lm(tmp_path / "lm")
    words = tm.vocabulary(["guitar strap capo strings tuner pedal user history query"])
    encoder = tm.save_bert_encoder(tmp_path / "bert", words)
    out = tmp_path / "serving.json"
    argv = ["--queries", "2", "--warmup", "0", "--repeats", "1", "--max-new-tokens", "3"]
    argv += ["--results", str(tmp_path / "no-results"), "--backbone-model", str(lm)]
    argv += ["--student-model", str(encoder), "--decoupled-model", str(encoder)]
    assert bench.main([*argv, "--threads", "1", "--json", str(out)]) == 0

    figures = json.loads(out.read_text())
    assert set(figures["paths"]) == {"full_ttp", "decoupled", "student", "cache_hit"}
    for path in figures["paths"].values():
        assert 0 < path["p50_ms"] <= path["p95_ms"]
        assert len(path["repeats"]) == 1
    assert figures["paths"]["full_ttp"]["p50_vs_full_ttp"] == 1.0
    cache = figures["cache"]
    # Two timed requests plus the final check's two: every one answered from the store.
    assert (cache["hits"], cache["misses"]) == (4, 0)
    assert cache["routes"] == {"cache": 4, "student": 0}
    assert cache["served_from_store"] and cache["pairs"] == 2
    assert figures["models"]["untrained"] == ["rewriter", "sft"]  # fresh LoRAs, said so
    for name in ("full_ttp", "decoupled"):
        assert 1 <= figures["generation"][name]["mean_generated_tokens"] <= 3 + 2


def test_cuda_without_a_gpu_skips_with_a_message(bench, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert bench.main(["--device", "cuda"]) == 0
    assert "skipped" in capsys.readouterr().out
