"""Helpers for runs of the whole workflow on config/tiny.yaml (see conftest.py's ``tiny_run``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .small_run import run, snakemake_cmd
from .workflow import copy_workflow

TINY_CONFIG = ["--configfile", "config/config.yaml", "config/tiny.yaml"]
TINY_RESULTS = "results-tiny"  # results_dir of config/tiny.yaml


def run_tiny(work: Path, *args: str, **env: str):
    """snakemake on the tiny configuration in ``work`` (targets or options in ``args``)."""
    return run(snakemake_cmd("--profile", "profiles/local", *args, *TINY_CONFIG), work, **env)


def linked_copy(work: Path, dest: Path) -> Path:
    """A copy of a finished workflow tree whose artifacts are hard links (mtimes kept), with
    its own Snakemake metadata. Change a file in it only by replacing it (see ``flip_byte``)."""
    copy_workflow(dest)
    shutil.copytree(work / TINY_RESULTS, dest / TINY_RESULTS, copy_function=os.link)
    shutil.copytree(work / ".snakemake", dest / ".snakemake", symlinks=True)
    return dest


def flip_byte(path: Path, offset: int | None = None) -> None:
    """Flip one bit of a file in place as a bit error would: same size, same mtime."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    offset = len(data) // 2 if offset is None else offset
    data[offset] ^= 0x04
    path.unlink()  # a hard link: leave the shared original alone
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
