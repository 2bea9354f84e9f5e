"""Paths reach the jobs' shell commands quoted: a checkout whose path has a blank, a quote and
a command substitution runs the rules, and nothing in it is executed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from .small_run import CONFIG_ARGS, DOMAIN, env, small_workflow, snakemake_cmd

pytestmark = [pytest.mark.integration, pytest.mark.slow]
RULES = Path(__file__).resolve().parents[2] / "rules"


def test_every_path_substitution_in_a_shell_command_is_quoted():
    """In every rule module, each ``{input...}``, ``{output...}`` and ``{log}`` of a shell
    command carries ``:q``, and every ``$(dirname ...)`` is inside double quotes."""
    unquoted, bare_dirname = [], []
    for smk in sorted(RULES.glob("*.smk")):
        for lineno, line in enumerate(smk.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\{(input|output|log)(\.\w+)?\}", line):
                unquoted.append(f"{smk.name}:{lineno}: {line.strip()}")
            if re.search(r'(?<!\\")\$\(dirname', line):
                bare_dirname.append(f"{smk.name}:{lineno}: {line.strip()}")
    assert not unquoted, "unquoted substitutions:\n" + "\n".join(unquoted)
    assert not bare_dirname, "unquoted $(dirname ...):\n" + "\n".join(bare_dirname)


def test_a_checkout_path_with_a_space_a_quote_and_a_substitution_runs_and_executes_nothing(
    tmp_path,
):
    """Config values that are paths are held to a safe character set (the config refuses
    others, naming file and line); the folder the workflow runs in is not, so the data stage
    runs in a checkout whose path has a blank, a quote and ``$(...)``."""
    work = small_workflow(tmp_path / "work dir'o$(touch PWNED)")
    target = f"results/data/{DOMAIN}/products.parquet"
    proc = subprocess.run(
        snakemake_cmd("--cores", "2", *CONFIG_ARGS, "--", target),
        cwd=work,
        env=env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (work / target).is_file()
    # the command substitution was never run, in the workflow folder or beside it
    assert not list(tmp_path.rglob("PWNED")), "a path in a shell command was executed"
    assert not (tmp_path / "work").exists(), "a path was split at its blank"
