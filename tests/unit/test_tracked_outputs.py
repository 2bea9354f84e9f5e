"""Recorded outputs (dvc.lock) checked by content before and after ``make run`` and by the
expected-results check, reading again only what changed since its last check."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from personalir.common.io import write_text
from personalir.common.tracked import (
    LOCK_CACHE_NAME,
    STATE_DIR,
    STATE_NAME,
    content_checker,
    verify_tracked,
)
from personalir.report import expected as ex

ROOT = Path(__file__).resolve().parents[2]
FILES = {
    "results/report/dataset_statistics.csv": b"Domain,Share\nMusical_Instruments,0.6747\n",
    "results/data/x.bin": bytes(range(256)) * 8,
}


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _tree(root: Path) -> Path:
    """A workflow folder whose two outputs are as dvc.lock records them (fetched)."""
    stages = {}
    for i, (rel, data) in enumerate(FILES.items()):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        stages[f"s{i}"] = {
            "cmd": "true",
            "outs": [{"path": rel, "hash": "md5", "md5": _md5(data), "size": len(data)}],
        }
    (root / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": stages}))
    return root


def _flip(path: Path, offset: int = 20) -> None:
    """One flipped bit, in place, size and modification time kept."""
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([byte ^ 0x01]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_intact_outputs_pass_and_a_second_check_reads_nothing(tmp_path):
    root = _tree(tmp_path)
    first = verify_tracked(root)
    assert first.problems == [] and (first.recorded, first.present, first.hashed) == (2, 2, 2)
    again = verify_tracked(root)
    assert again.problems == [] and again.hashed == 0  # a no-op run costs a stat per file
    assert (root / STATE_DIR / STATE_NAME).is_file()
    assert (root / STATE_DIR / LOCK_CACHE_NAME).is_file()


def test_a_flipped_byte_with_its_mtime_kept_is_named(tmp_path):
    """The reproduction: after `make fetch`, a flipped byte (mtime kept) passed a no-op
    `make run` as up to date."""
    root = _tree(tmp_path)
    verify_tracked(root)
    _flip(root / "results/report/dataset_statistics.csv")
    found = verify_tracked(root)
    assert found.hashed == 1
    (problem,) = found.problems
    assert problem.startswith("CHANGED results/report/dataset_statistics.csv: md5 ")
    assert "is not dvc.lock's" in problem
    # Still named on the next check: a damaged file is never taken into the state.
    assert verify_tracked(root).problems == [problem]


def test_a_truncated_output_is_named(tmp_path):
    root = _tree(tmp_path)
    path = root / "results/data/x.bin"
    path.write_bytes(FILES["results/data/x.bin"][:100])
    (problem,) = verify_tracked(root).problems
    assert problem == "TRUNCATED results/data/x.bin: 100 of 2048 bytes"


def test_an_output_rewritten_by_a_workflow_job_passes_until_it_is_damaged(tmp_path):
    root = _tree(tmp_path)
    verify_tracked(root)
    table = root / "results/report/dataset_statistics.csv"
    write_text(table, "Domain,Share\nMusical_Instruments,0.7001\n")  # a rerun, with its record
    found = verify_tracked(root)
    assert found.problems == [] and found.hashed == 1
    _flip(table)
    (problem,) = verify_tracked(root).problems
    assert problem.startswith("CHANGED results/report/dataset_statistics.csv: not as the job")


def test_outputs_a_run_wrote_are_accepted_after_it_and_only_those(tmp_path):
    root = _tree(tmp_path)
    verify_tracked(root)
    table = root / "results/report/dataset_statistics.csv"
    table.unlink()
    table.write_bytes(b"Domain,Share\nMusical_Instruments,0.5\n")  # no writer's record
    mtime = table.stat().st_mtime_ns
    assert verify_tracked(root).problems  # before the run: nothing says who wrote it
    after_run = verify_tracked(root, written_since_ns=mtime - 1_000_000_000)
    assert after_run.problems == []
    assert verify_tracked(root).problems == []  # accepted once, served by its stat
    # A flip with the old mtime after that run is not taken for the run's own output.
    _flip(table)
    assert verify_tracked(root, written_since_ns=mtime + 1_000_000_000).problems


def test_a_damaged_state_file_is_named_and_everything_read_again(tmp_path, caplog):
    root = _tree(tmp_path)
    verify_tracked(root)
    state = root / STATE_DIR / STATE_NAME
    saved = json.loads(state.read_text())
    # A damaged entry that would wave a changed file through: its stamp made to match.
    _flip(root / "results/report/dataset_statistics.csv")
    st = (root / "results/report/dataset_statistics.csv").stat()
    saved["body"]["files"]["results/report/dataset_statistics.csv"][0] = [
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_ino,
    ]
    state.write_text(json.dumps(saved))
    found = verify_tracked(root)
    assert "does not match its sha256" in caplog.text and str(state) in caplog.text
    assert found.hashed == 2 and len(found.problems) == 1


def test_a_changed_lock_is_parsed_again(tmp_path):
    root = _tree(tmp_path)
    verify_tracked(root)
    # A re-recording with other bytes, and those bytes fetched (no writer's record).
    new = b"Domain,Share\nMusical_Instruments,0.7\n"
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    lock["stages"]["s0"]["outs"][0].update(md5=_md5(new), size=len(new))
    (root / "dvc.lock").write_text(yaml.safe_dump(lock))
    table = root / "results/report/dataset_statistics.csv"
    table.unlink()
    table.write_bytes(new)
    assert verify_tracked(root).problems == []
    table.unlink()
    table.write_bytes(FILES["results/report/dataset_statistics.csv"])  # the old recording
    (problem,) = verify_tracked(root).problems
    assert f"is not dvc.lock's {_md5(new)}" in problem


def test_the_script_exits_1_naming_the_file(tmp_path):
    root = _tree(tmp_path)
    script = [sys.executable, str(ROOT / "scripts" / "verify_outputs.py"), "--root", str(root)]
    ok = subprocess.run(script, capture_output=True, text=True)
    assert ok.returncode == 0 and "2 of 2 outputs recorded in dvc.lock checked" in ok.stdout
    _flip(root / "results/data/x.bin")
    bad = subprocess.run(script, capture_output=True, text=True)
    assert bad.returncode == 1 and "CHANGED results/data/x.bin" in bad.stdout
    assert "make fetch" in bad.stderr


def test_make_run_checks_before_and_after_snakemake():
    plan = subprocess.run(
        ["make", "-n", "-o", "setup", "run"], cwd=ROOT, capture_output=True, text=True
    )
    lines = [line for line in plan.stdout.splitlines() if line.strip()]
    where = {
        "before": next(i for i, x in enumerate(lines) if x.endswith("verify_outputs.py")),
        "snakemake": next(i for i, x in enumerate(lines) if "snakemake --profile" in x),
        "after": next(i for i, x in enumerate(lines) if "--written-since-ns" in x),
    }
    assert where["before"] < where["snakemake"] < where["after"], plan.stdout


# ---------------------------------------------------------------------------------------------
# The expected-results check reads no damaged table


def _expected(root: Path) -> Path:
    doc = ex.record(root / "results", configuration="t")
    path = root / "expected.yaml"
    ex.write_document(doc, path, "results")
    return path


def test_the_expected_check_names_a_flipped_table(tmp_path, capsys, monkeypatch):
    """A flipped digit inside the tolerance used to pass; any flip now fails, named. Run as a
    reviewer runs it, from the workflow folder (its dvc.lock is the default)."""
    root = _tree(tmp_path)
    expected = _expected(root)
    monkeypatch.chdir(root)
    args = ["check", "results", str(expected)]
    assert ex.main([*args, "--csv", str(tmp_path / "ok.csv")]) == 0
    assert set(pd.read_csv(tmp_path / "ok.csv")["status"]) == {"OK"}
    table = root / "results/report/dataset_statistics.csv"
    data = table.read_bytes()
    offset = data.index(b"0.6747") + 5  # the last digit: 0.6747 -> 0.6746, within 0.005
    _flip(table, offset)
    assert b"0.6746" in table.read_bytes()
    capsys.readouterr()
    assert ex.main([*args, "--csv", str(tmp_path / "bad.csv")]) == 1
    out = capsys.readouterr().out
    assert "CHANGED results/report/dataset_statistics.csv: md5 " in out and "1 CHANGED" in out
    report = pd.read_csv(tmp_path / "bad.csv")
    assert list(report["status"]) == ["CHANGED"]


def test_without_a_lock_a_table_is_checked_against_its_writer(tmp_path):
    table = tmp_path / "results-tiny" / "report" / "dataset_statistics.csv"
    write_text(table, "Domain,Share\nMusical_Instruments,0.5\n")
    check = content_checker(tmp_path / "no-such.lock")
    assert check(table) is None
    _flip(table)
    assert check(table).startswith(f"CHANGED {table}: not as the job that wrote it")


@pytest.mark.parametrize("name", ["config.yaml", "tiny.yaml"])
def test_the_expected_files_of_the_configurations_load(name):
    cfg = yaml.safe_load((ROOT / "config" / name).read_text())
    path = (cfg.get("paper") or {}).get("expected")
    if path:
        assert ex.load(ROOT / path)["tables"]
