"""The GPU check (personalir.rehearsal.gpu_check): its comparisons, and a CPU-vs-CPU run of two
of its checks (the self-test mode of scripts/gpu_check.sh)."""

import json

import numpy as np
import pytest

from personalir.rehearsal import gpu_check
from personalir.rehearsal.gpu_check_base import Tolerance, compare_scores


def test_tolerance_is_elementwise_absolute_plus_relative():
    tol = Tolerance(atol=0.1, rtol=0.01)
    # |1.15 - 1.0| / (0.1 + 0.01 * 1.0) = 0.15 / 0.11
    assert tol.worst(np.array([1.15, 5.0]), np.array([1.0, 5.0])) == pytest.approx(0.15 / 0.11)
    assert tol.worst(np.array([]), np.array([])) == 0.0
    with pytest.raises(ValueError, match="shapes differ"):
        tol.worst(np.zeros(2), np.zeros(3))


def test_compare_scores_fails_on_a_difference_or_a_missing_pair():
    tol = Tolerance(atol=1e-4)
    ref = {("q", "a"): 1.0, ("q", "b"): 0.5}
    assert compare_scores(dict(ref), ref, tol)["passed"]
    moved = compare_scores({("q", "a"): 1.0, ("q", "b"): 0.5002}, ref, tol)
    assert not moved["passed"] and moved["max_abs_diff"] == pytest.approx(2e-4)
    missing = compare_scores({("q", "a"): 1.0}, ref, tol)
    assert not missing["passed"] and (missing["compared"], missing["of"]) == (1, 2)


def test_cpu_self_test_of_two_checks(tmp_path):
    out = tmp_path / "gpu_check.json"
    argv = ["--device", "cpu", "--out", str(out), "--work", str(tmp_path / "work")]
    argv += ["--docs", "24", "--queries", "3", "--only", "retrieval_splade", "ttp_generate_embed"]
    assert gpu_check.main(argv) == 0
    report = json.loads(out.read_text())
    assert report["environment"]["device"] == report["environment"]["reference"] == "cpu"
    checks = {c["check"]: c for c in report["checks"]}
    assert set(checks) == {"retrieval_splade", "ttp_generate_embed"}
    # the same device twice: identical outputs
    assert checks["retrieval_splade"]["max_abs_diff"] == 0.0
    assert checks["retrieval_splade"]["compared"] == 24 * 3
    assert checks["ttp_generate_embed"]["equal_texts"] == 16
    # throughput is recorded (timings kept in this record)
    assert checks["retrieval_splade"]["device_run"]["texts"] == 27
    assert checks["retrieval_splade"]["device_run"]["texts_per_s"] > 0
