"""Bandit (security lint) finds nothing in the package, the workflow scripts and the scripts.

Configuration is ``[tool.bandit]`` in pyproject.toml (B101 skipped there, with the reason);
every other finding is fixed or justified inline with ``# nosec BXXX  # reason``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("bandit")

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ("src", "workflow_scripts", "scripts")


def test_bandit_reports_no_issue():
    cmd = [sys.executable, "-m", "bandit", "-c", "pyproject.toml", "-r", *TARGETS]
    proc = subprocess.run([*cmd, "-q", "-f", "json"], cwd=ROOT, capture_output=True, text=True)
    # Exit 0: clean; 1: issues found; anything else: bandit itself failed.
    assert proc.returncode in (0, 1), f"bandit failed ({proc.returncode}):\n{proc.stderr}"
    report = json.loads(proc.stdout)
    assert not report["errors"], f"bandit could not scan: {report['errors']}"
    findings = [
        f"{r['filename']}:{r['line_number']} {r['test_id']} {r['issue_text']}"
        for r in report["results"]
    ]
    assert not findings, (
        f"bandit: {len(findings)} finding(s); fix them or justify each inline with"
        " `# nosec BXXX  # reason`:\n" + "\n".join(findings)
    )
    assert proc.returncode == 0, proc.stderr
