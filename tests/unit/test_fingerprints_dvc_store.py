"""The embedded default's artifacts, read straight from the in-repo DVC store, match the
checked-in fingerprints of every stage (tests/fingerprints/sample_<stage>.json).

dvc.lock names each output's md5 and dvc-store/ holds the objects, so this needs no run. After
a change that alters an artifact, `make dvc-update` re-records the store; then regenerate the
expectations with `python scripts/fingerprints.py --dvc-store --stage all --update`.
"""

from __future__ import annotations

import json

import pytest

from personalir.common.config import REPO_ROOT
from personalir.common.fingerprint import (
    STAGE_PATTERNS,
    diff_fingerprints,
    fingerprint_tree,
    link_dvc_outputs,
    pinned_files,
)

EXPECTED = REPO_ROOT / "tests" / "fingerprints"


@pytest.fixture(scope="module")
def default_results(tmp_path_factory):
    tree = link_dvc_outputs(
        REPO_ROOT / "dvc.lock", REPO_ROOT / "dvc-store", tmp_path_factory.mktemp("dvc_outputs")
    )
    return tree / "results"


@pytest.mark.parametrize("stage", sorted(STAGE_PATTERNS))
def test_default_artifacts_match_fingerprints(default_results, stage):
    expected = json.loads((EXPECTED / f"sample_{stage}.json").read_text(encoding="utf-8"))
    actual = fingerprint_tree(default_results, STAGE_PATTERNS[stage])
    assert actual, f"no {stage} artifacts in dvc.lock"
    problems = diff_fingerprints(expected, actual)
    assert not problems, (
        f"{stage} artifacts in dvc-store/ differ from tests/fingerprints/sample_{stage}.json; "
        "if intended, run `python scripts/fingerprints.py --dvc-store --stage all --update`: "
        f"{problems[:10]}"
    )


def test_every_stage_pins_its_key_artifacts(default_results):
    pinned = {
        str(path.relative_to(default_results))
        for patterns in STAGE_PATTERNS.values()
        for path in pinned_files(default_results, patterns)
    }
    for key in [
        "queries/Musical_Instruments/benchmark.jsonl",
        "retrieval/Musical_Instruments/bm25.run.gz",
        "syntax/attribution.csv",
        "errors/sampling_eval.csv",
        "ttp/Musical_Instruments/examples.jsonl",
        "syntax/Musical_Instruments/profiles.parquet",
        "errors/Musical_Instruments/profiles.csv",
        "queries/Musical_Instruments/candidates.parquet",
    ]:
        assert key in pinned, key
