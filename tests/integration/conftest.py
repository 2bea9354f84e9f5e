"""The whole workflow on config/tiny.yaml, run once per session in a copy of the repository:
shared by the fingerprint checks (test_tiny_run.py) and the integrity checks that need a
complete results tree (test_integrity.py)."""

from __future__ import annotations

import time

import pytest

from .small_run import must
from .tiny import run_tiny
from .workflow import copy_workflow


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("tiny"))
    start = time.monotonic()
    proc = must(run_tiny(work))
    print(f"tiny run: {time.monotonic() - start:.0f} s in {work}")
    return {"work": work, "log": proc.stdout + proc.stderr}
