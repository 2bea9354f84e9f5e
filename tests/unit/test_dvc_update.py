"""`scripts/dvc_update.py --forcerun`: named outputs join the stale ones in Snakemake's
`--forcerun`; a name that is not there stops the script before anything runs."""

from __future__ import annotations

import importlib.util

import pytest

from personalir.common.config import REPO_ROOT


@pytest.fixture
def dvc_update(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location(
        "dvc_update_script", REPO_ROOT / "scripts" / "dvc_update.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    calls = []
    monkeypatch.setattr(module, "ROOT", tmp_path)  # no dvc.lock there: nothing is stale
    monkeypatch.setattr(module, "run", lambda *cmd, **kw: calls.append(cmd))
    module.calls = calls
    return module


def test_forcerun_outputs_reach_snakemake(dvc_update, tmp_path):
    out = tmp_path / "results" / "queries" / "D" / "candidates.parquet"
    out.parent.mkdir(parents=True)
    out.write_bytes(b"x")
    assert dvc_update.main(["--dry-run", "--forcerun", "results/queries/D/candidates.parquet"]) == 0
    snakemake = dvc_update.calls[-1]
    assert snakemake[-1] == "-n"
    at = snakemake.index("--forcerun")
    assert snakemake[at + 1 : -1] == ("results/queries/D/candidates.parquet",)


def test_forcerun_of_a_missing_output_stops_before_anything_runs(dvc_update, capsys):
    assert dvc_update.main(["--forcerun", "results/nope.parquet"]) == 2
    assert dvc_update.calls == []
    assert "no such output: results/nope.parquet" in capsys.readouterr().err
