"""The data stage of the real workflow on the embedded sample (default config, 3 domains)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from personalir.common.config import REPO_ROOT
from personalir.common.fingerprint import STAGE_PATTERNS, diff_fingerprints, fingerprint_tree

from .workflow import copy_workflow, snakemake

pytestmark = pytest.mark.integration

DOMAINS = ["Baby_Products", "Musical_Instruments", "Video_Games"]
EXPECTED = REPO_ROOT / "tests" / "fingerprints" / "sample_data.json"


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("wf"))
    targets = [
        f"results/data/{d}/{name}"
        for d in DOMAINS
        for name in ("products.parquet", "user_sentences.parquet")
    ]
    targets.append("results/report/dataset_statistics.csv")
    # Only the data stage: the paper PDF needs every stage (the whole sample workflow, which
    # `make run` exercises); tests/unit/test_report.py builds a PDF from a small document.
    proc = snakemake(work, "--profile", "profiles/local", *targets)
    return {"work": work, "targets": targets, "log": proc.stderr}


def test_outputs_for_every_domain(sample_run):
    work = sample_run["work"]
    for d in DOMAINS:
        sents = pq.read_table(work / f"results/data/{d}/user_sentences.parquet")
        users = sents.column("user_id").unique()
        assert len(users) >= 150, d
        assert sents.num_rows == 50 * len(users), d  # first 50 sentences of every user
        products = pq.read_table(work / f"results/data/{d}/products.parquet")
        assert products.num_rows >= 300
        quality = json.loads((work / f"results/data/{d}/reviews.quality.json").read_text())
        assert quality["records_read"] == quality["records_written"] + sum(
            quality["quarantined_by_reason"].values()
        )
    stats = (work / "results/report/dataset_statistics.csv").read_text().splitlines()
    assert stats[0].startswith("Domain,Products,") and len(stats) == 1 + len(DOMAINS) + 1
    tex = (work / "results/paper/generated/dataset_statistics.tex").read_text()
    assert r"\begin{tabular}" in tex and "Musical Instruments" in tex


def test_second_run_has_nothing_to_do(sample_run):
    proc = snakemake(
        sample_run["work"], "--profile", "profiles/local", "-n", *sample_run["targets"]
    )
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_fingerprints_match_checked_in(sample_run):
    actual = fingerprint_tree(sample_run["work"] / "results", STAGE_PATTERNS["data"])
    expected = json.loads(EXPECTED.read_text())
    problems = diff_fingerprints(expected, actual)
    assert not problems, (
        "sample artifacts changed; if intended, regenerate with "
        f"`python scripts/fingerprints.py <results> --stage data --update`: {problems[:10]}"
    )


def test_wrong_config_key_stops_the_run(sample_run, tmp_path):
    bad = sample_run["work"] / "config" / "bad.yaml"
    bad.write_text("sample:\n  n_userz: 3\n")
    proc = snakemake(sample_run["work"], "--configfile", "config/bad.yaml", "-n", check=False)
    assert proc.returncode != 0
    assert "unknown config key 'sample.n_userz'" in proc.stdout + proc.stderr
    assert "bad.yaml:2" in proc.stdout + proc.stderr
