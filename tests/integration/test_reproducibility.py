"""Reproducibility guarantees on the data stage of a small sample world: determinism,
resumability, integrity.

- Determinism: two cold runs give byte-identical artifacts (sha256 manifest), and
  `scripts/manifest.py verify` accepts one tree against the other's manifest.
- Resumability: the workflow SIGKILLed at several points (mid-generation, mid-ingest, later),
  then resumed (`--unlock`, rerun), ends byte-identical to the uninterrupted run.
- Integrity: an artifact truncated or corrupted in the workspace is named and the run stops
  before any job reads it; `scripts/manifest.py check` names it too.
"""

from __future__ import annotations

import os
import sys

import pytest

from personalir.common.config import REPO_ROOT
from personalir.common.provenance import format_manifest

from .small_run import (
    CONFIG_ARGS,
    DATA_TARGETS,
    DOMAIN,
    local_run,
    manifest,
    must,
    run,
    run_and_kill,
    small_workflow,
    snakemake_cmd,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]
MANIFEST_CMD = [sys.executable, str(REPO_ROOT / "scripts" / "manifest.py")]


@pytest.fixture(scope="module")
def cold_a(tmp_path_factory):
    work = small_workflow(tmp_path_factory.mktemp("cold_a"))
    local_run(work, *DATA_TARGETS)
    return work


@pytest.fixture(scope="module")
def cold_b(tmp_path_factory):
    work = small_workflow(tmp_path_factory.mktemp("cold_b"))
    local_run(work, *DATA_TARGETS)
    return work


def test_two_cold_runs_are_byte_identical(cold_a, cold_b, tmp_path):
    a, b = manifest(cold_a), manifest(cold_b)
    assert len(a) >= 15 and any(p.endswith("provenance.json") for p in a)
    assert a == b, sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    # The reviewer's command: verify one tree against the other's manifest.
    manifest_file = tmp_path / "a.sha256"
    manifest_file.write_text(format_manifest(a))
    proc = must(run([*MANIFEST_CMD, "verify", str(manifest_file), str(cold_b), "--strict"], cold_b))
    assert f"{len(a)} OK, 0 FAIL" in proc.stdout
    proc = must(run([*MANIFEST_CMD, "check", str(cold_b)], cold_b))
    assert ", 0 FAIL" in proc.stdout


def test_manifest_verify_names_a_changed_file(cold_a, tmp_path):
    a = manifest(cold_a)
    victim = f"results/data/{DOMAIN}/users.parquet"
    a[victim] = "0" * 64
    manifest_file = tmp_path / "tampered.sha256"
    manifest_file.write_text(format_manifest(a))
    proc = run([*MANIFEST_CMD, "verify", str(manifest_file), str(cold_a)], cold_a)
    assert proc.returncode == 1
    assert f"FAIL CHANGED {victim}" in proc.stdout


def test_kill9_at_several_points_then_resume_equals_uninterrupted(cold_a, tmp_path):
    # Each kill point starts from its own cold workspace, so its rule is sure to run: killed in
    # one shared workspace, a kill that lands later than meant leaves the next points nothing
    # to do, and on a fast machine only one of four landed.
    logs = "results/logs"
    kill_points = [
        # Each kill waits for an event of its job, not a delay, so every one lands while
        # Snakemake runs, on a fast machine and on a busy one alike.
        # The world's review file is written, its search log not yet: a half-finished job.
        ("rule sample_world:", f"results/sample_world/{DOMAIN}/{DOMAIN}.jsonl"),
        ("rule ingest:", f"{logs}/data/ingest_{DOMAIN}_*.log"),  # the job has started
        ("rule user_sentences:", f"{logs}/data/user_sentences_{DOMAIN}.log"),
        ("rule provenance:", None),  # as the first provenance job starts
    ]
    expected = manifest(cold_a)
    attempts = []
    for n, (pattern, event) in enumerate(kill_points):
        work = small_workflow(tmp_path / f"killed-{n}")
        attempt = run_and_kill(work, DATA_TARGETS, pattern, event)
        attempts.append(attempt)
        assert attempt.seen, attempt.describe()
        # A run that fails on its own is a bug, whether or not a kill landed.
        assert attempt.killed or attempt.returncode == 0, attempt.describe()
        # A crash leaves Snakemake's lock behind; resuming starts with --unlock.
        must(run(snakemake_cmd("--unlock", *CONFIG_ARGS, "--cores", "1"), work))
        # Whatever was half-written is a hidden temporary file, never the artifact itself.
        partial = manifest(work)
        wrong = [p for p, digest in partial.items() if expected.get(p) != digest]
        assert not wrong, f"after killing at {pattern!r}: artifacts differ: {wrong}"
        # The resumed run ends where the uninterrupted one did, with nothing left to do.
        local_run(work, *DATA_TARGETS)
        assert manifest(work) == expected, f"resumed after killing at {pattern!r}"
        proc = local_run(work, "-n", *DATA_TARGETS)
        assert "Nothing to be done" in proc.stdout + proc.stderr
    kills = sum(a.killed for a in attempts)
    assert kills == len(kill_points), (
        f"only {kills} of {len(kill_points)} kill points were hit:\n"
        + "\n".join(a.describe() for a in attempts)
    )


@pytest.fixture
def damaged(cold_b):
    """cold_b with one input truncated and one intermediate corrupted; restored afterwards."""
    raw = cold_b / f"results/sample_world/{DOMAIN}/{DOMAIN}.jsonl"
    parquet = cold_b / f"results/data/{DOMAIN}/meta.parquet"
    saved = {p: p.read_bytes() for p in (raw, parquet)}
    times = {p: (p.stat().st_atime_ns, p.stat().st_mtime_ns) for p in saved}
    raw.write_bytes(saved[raw][: len(saved[raw]) // 2])
    data = bytearray(saved[parquet])
    data[len(data) // 2] ^= 0xFF  # one flipped byte, same size
    parquet.write_bytes(bytes(data))
    yield {"raw": raw, "parquet": parquet}
    for path, content in saved.items():
        path.write_bytes(content)
        os.utime(path, ns=times[path])  # as the job left it


def test_damaged_artifacts_are_named_and_not_consumed(damaged, cold_b):
    downstream = cold_b / f"results/data/{DOMAIN}/reviews.parquet"
    products = cold_b / f"results/data/{DOMAIN}/products.parquet"
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (downstream, products)}
    proc = local_run(cold_b, *DATA_TARGETS, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"TRUNCATED results/sample_world/{DOMAIN}/{DOMAIN}.jsonl" in out
    assert f"CHANGED results/data/{DOMAIN}/meta.parquet" in out
    # Stopped before any job ran: the files that read them are untouched.
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in before} == before
    check = run([*MANIFEST_CMD, "check", str(cold_b)], cold_b)
    assert check.returncode == 1
    assert f"FAIL TRUNCATED results/sample_world/{DOMAIN}/{DOMAIN}.jsonl" in check.stdout
    assert f"FAIL CHANGED results/data/{DOMAIN}/meta.parquet" in check.stdout
