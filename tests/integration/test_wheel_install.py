"""The package as a user installs it: a wheel built from the sources, installed with its
``eval`` extra in a clean virtual environment outside the clone (no access to the checkout,
no torch), runs ``pqb-evaluate export-queries`` and ``pqb-evaluate`` on the tiny released
setting of tests/fixtures/byo.py with the packaged default config.

The wheel builds offline (``pip wheel --no-deps --no-build-isolation``); the ``eval``
dependencies (about 35 packages, no torch, ~150 MB to download, ~600 MB installed) come from
the package index pip is configured with, pinned by requirements.lock as constraints. Measured
on the 2-core development machine (local index mirror): build ~2 s, venv ~5 s, install 26-40 s,
the two commands ~10 s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from personalir.common.config import REPO_ROOT
from personalir.queries.benchmark_format import from_released
from tests.fixtures import byo

pytestmark = pytest.mark.slow

D = "Musical_Instruments"


def _run(cmd: list, *, cwd: Path, env: dict | None = None, check: bool = True):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
    if check and proc.returncode:
        raise AssertionError(f"{cmd[:3]} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def _build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the sources (build/ and *.egg-info stay out of the checkout);
    src/personalir/_resources links to config/, as in the clone."""
    source = tmp_path / "source"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", ".integrity")
    shutil.copytree(REPO_ROOT / "src", source / "src", symlinks=True, ignore=skip)
    for name in ("schema", "paper_results", "config.yaml"):
        copy = shutil.copytree if (REPO_ROOT / "config" / name).is_dir() else shutil.copy2
        copy(REPO_ROOT / "config" / name, source / "config" / name)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO_ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", wheels, source],
        cwd=tmp_path,
    )  # fmt: skip
    (wheel,) = wheels.glob("personalir-*.whl")
    return wheel


def test_wheel_in_a_clean_venv_evaluates_a_fixture(tmp_path):
    times = {}
    t0 = time.monotonic()
    wheel = _build_wheel(tmp_path)
    times["build"] = time.monotonic() - t0
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    bin_dir = venv / "bin"
    t0 = time.monotonic()
    _run(
        [bin_dir / "python", "-m", "pip", "install", "-q", f"{wheel}[eval]",
         "-c", REPO_ROOT / "requirements.lock"],
        cwd=tmp_path,
    )  # fmt: skip
    times["install"] = time.monotonic() - t0
    # a user's folder outside the clone; nothing of the checkout on the path
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    where = _run([bin_dir / "python", "-c", "import personalir; print(personalir.__file__)"],
                 cwd=work, env=env).stdout  # fmt: skip
    assert where.startswith(str(venv)), where
    no_torch = _run([bin_dir / "python", "-c", "import torch"], cwd=work, env=env, check=False)
    assert no_torch.returncode != 0  # the eval extra needs no torch
    byo.write_catalogue(work / f"meta_{D}.jsonl")
    byo.write_released(work / f"released_{D}.json")
    (work / "my_own_retriever.py").write_text(byo.OWN_MODULE)
    t0 = time.monotonic()
    inputs = ["--domains", D, "--queries", "released_{domain}.json", "--query-format", "released"]
    inputs += ["--meta", "meta_{domain}.jsonl", "--unknown-products", "drop"]
    export = _run(["pqb-evaluate", "export-queries", *inputs, "--out", "queries/{domain}.tsv"],
                  cwd=work, env=env)  # fmt: skip
    assert f"{D}: 7 queries" in export.stdout
    # the user's retriever: the fixture's graded run over the exported ids
    ids = [line.split("\t")[0] for line in (work / "queries" / f"{D}.tsv").open()]
    records = {r["query_id"]: r for r in from_released(byo.RELEASED, D)}
    (work / f"graded_{D}.run").write_text(byo.graded_run([records[q] for q in ids]))
    evaluate = _run(
        ["pqb-evaluate", *inputs, "--run", "graded=graded_{domain}.run",
         "--class", "mine=my_own_retriever:Mine", "--catalog", "bm25", "--out", "out"],
        cwd=work,
        env=env,
    )  # fmt: skip
    times["commands"] = time.monotonic() - t0
    summary = json.loads((work / "out" / "summary.json").read_text())
    graded = next(r for r in summary["retrievers"] if r["name"] == "graded")
    assert {c: graded["values"][D][c]["value"] for c in byo.GRADED} == byo.GRADED
    assert [r["name"] for r in summary["retrievers"]] == ["graded", "mine", "bm25"]
    assert "graded     --            100.00" in evaluate.stdout
    # an input error: exit status 2, file and line, no traceback
    (work / f"bad_{D}.run").write_text("nope Q0 B0001 1 1.0 t\n")
    bad = _run(["pqb-evaluate", *inputs, "--run", "bad=bad_{domain}.run", "--out", "out2"],
               cwd=work, env=env, check=False)  # fmt: skip
    assert bad.returncode == 2 and f"bad_{D}.run:1: unknown query id 'nope'" in bad.stderr
    assert "Traceback" not in bad.stderr
    print("wheel test seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in times.items()))
