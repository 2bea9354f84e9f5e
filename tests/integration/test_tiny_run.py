"""The whole workflow (`all`, paper PDF included) on config/tiny.yaml, in a copy of the
repository, with every stage's artifacts checked against tests/fingerprints/tiny_<stage>.json.

A few minutes on 2 cores; deselect with `-m "not tiny_run"`. After an intended change of an
artifact, regenerate the expectations from the run's results folder (the test prints it):
`python scripts/fingerprints.py <results> --stage all --config tiny --update`.
"""

from __future__ import annotations

import json

import pytest

from personalir.common.config import REPO_ROOT
from personalir.common.fingerprint import STAGE_PATTERNS, diff_fingerprints, fingerprint_tree

from .tiny import TINY_RESULTS

pytestmark = [pytest.mark.integration, pytest.mark.tiny_run]

EXPECTED = REPO_ROOT / "tests" / "fingerprints"


def test_all_finished_and_paper_built(tiny_run):
    assert "(Rule: all)" in tiny_run["log"] and "(100%) done" in tiny_run["log"]
    pdf = tiny_run["work"] / TINY_RESULTS / "paper" / "main.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize("stage", sorted(STAGE_PATTERNS))
def test_fingerprints_match_checked_in(tiny_run, stage):
    results = tiny_run["work"] / TINY_RESULTS
    expected = json.loads((EXPECTED / f"tiny_{stage}.json").read_text(encoding="utf-8"))
    actual = fingerprint_tree(results, STAGE_PATTERNS[stage])
    problems = diff_fingerprints(expected, actual)
    assert not problems, (
        f"tiny {stage} artifacts changed; if intended, regenerate with "
        f"`python scripts/fingerprints.py {results} --stage all --config tiny --update`: "
        f"{problems[:10]}"
    )
