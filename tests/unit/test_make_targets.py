"""Every Makefile target installs only what it uses, read from `make -n -B` (what make would run
from nothing, printed, not run).

`fetch`, `cluster-setup` and the Python tools set up the venv without root: no TeX, no Java, no
apt-get. `run` checks for TeX (the paper PDF), `test` for TeX and Java (the Lucene parity test),
installing them with apt-get only where missing. Every venv setup chooses torch's build first
(scripts/torch_build.py, tests/unit/test_torch_build.py), with `TORCH`/`TORCH_CUDA` passed on.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess  # nosec B404  # runs make -n on the repository's Makefile, argv lists

import pytest

from personalir.common.config import REPO_ROOT

TEX = "command -v pdflatex"
JAVA = "command -v java"
APT = "apt-get"
CHOOSE = "scripts/torch_build.py choose"
INSTALL = "scripts/torch_build.py install"
# Targets that need neither TeX nor Java (the venv and what runs in it).
PYTHON_ONLY = [
    "fetch",
    "cluster-setup",
    "setup-python",
    "lint",
    "report",
    "rule-benchmarks",
    "paper-scale-plan",
    "benchmarks",
]


def make_n(*args: str, **env: str) -> str:
    """The commands `make -n -B <args>` prints (nothing runs), with TORCH/TORCH_CUDA unset
    unless given."""
    make = shutil.which("make")
    assert make, "make is not installed"
    environ = {k: v for k, v in os.environ.items() if k not in {"TORCH", "TORCH_CUDA", "MAKEFLAGS"}}
    proc = subprocess.run(  # nosec B603  # make from PATH, fixed argv, no shell
        [make, "-n", "-B", "--no-print-directory", *args],
        cwd=REPO_ROOT,
        env={**environ, **env},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_targets_exist():
    text = (REPO_ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", text, flags=re.M))
    assert {"setup", "setup-python", "system-deps", "system-tex", "system-java"} <= targets
    assert set(PYTHON_ONLY) <= targets


@pytest.mark.parametrize("target", PYTHON_ONLY)
def test_python_targets_need_no_system_packages(target):
    out = make_n(target)
    assert CHOOSE in out and INSTALL in out, f"make {target}: no torch build choice"
    for marker in (TEX, JAVA, APT, "sudo"):
        assert marker not in out, f"make {target} would run {marker!r}"


def test_fetch_and_cluster_setup_do_their_own_work():
    assert "scripts/fetch_artifacts.py" in make_n("fetch")
    assert "requirements-cluster.txt" in make_n("cluster-setup")


def test_run_checks_tex_and_test_checks_tex_and_java():
    run = make_n("run")
    assert TEX in run and APT in run and JAVA not in run
    assert "snakemake --profile profiles/local" in run
    test = make_n("test")
    assert TEX in test and JAVA in test
    assert "scripts/run_tests.sh" in test
    setup = make_n("setup")
    assert TEX in setup and JAVA in setup and CHOOSE in setup


def test_torch_settings_reach_the_choice():
    def choose_line(out: str) -> str:
        return next(line for line in out.splitlines() if CHOOSE in line)

    assert '--torch "auto" --cuda ""' in choose_line(make_n("setup-python"))
    assert '--torch "cuda" --cuda "cu130"' in choose_line(
        make_n("setup-python", "TORCH=cuda", "TORCH_CUDA=cu130")
    )
    assert '--torch "cpu"' in choose_line(make_n("setup-python", TORCH="cpu"))
    # the choice comes before the install, the lock without torch before torch
    out = make_n("setup-python")
    order = [out.index(s) for s in (CHOOSE, "requirements-without-torch.txt", INSTALL, "-e .")]
    assert order == sorted(order)
