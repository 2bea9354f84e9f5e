"""Run the real workflow in an isolated copy of the repository (shared by integration tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from personalir.common.config import REPO_ROOT

# What a workflow run needs; `src` is linked, not copied.
WORKFLOW_FILES = [
    "Snakefile",
    "rules",
    "config",
    "workflow_scripts",
    "profiles",
    "envs",
    "paper",
    "benchmarks/results",  # measured latencies Figure 8 reads
]


def copy_workflow(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = REPO_ROOT / name
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(
                src, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(src, target)
    link = dest / "src"
    if not link.exists():
        link.symlink_to(REPO_ROOT / "src")
    return dest


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run snakemake in ``workdir``: no time limit of its own (a busy machine is slower, not
    wrong); pytest-timeout's per-test limit (pyproject.toml) is the backstop for a hang."""
    exe = Path(sys.executable).with_name("snakemake")
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    proc = subprocess.run([str(exe), *args], cwd=workdir, env=env, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
            f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
        )
    return proc
