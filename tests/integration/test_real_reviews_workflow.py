"""The workflow on a review file alone (config/real_reviews.yaml), planned with a dry run:
the text stages are planned, and a stage that needs the missing catalogue stops the run at
start with the setting to change. The review file is written here, in the real schema."""

from __future__ import annotations

import pytest

from tests.fixtures.real_reviews import write_reviews
from tests.integration.workflow import copy_workflow, snakemake

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = tmp_path_factory.mktemp("real_reviews")
    reviews = write_reviews(root / "reviews.jsonl")
    return copy_workflow(root / "repo"), reviews


def _plan(work, *configfiles, targets=(), check=True):
    workdir, reviews = work
    return snakemake(
        workdir,
        *targets,
        "-n",
        "--cores",
        "1",
        "--configfile",
        "config/real_reviews.yaml",
        *configfiles,
        "--config",
        f"data={{local: {{reviews: {reviews}}}}}",
        check=check,
    )


def test_text_stages_are_planned_without_a_catalogue(work):
    out = _plan(work).stdout
    for rule in ("ingest", "user_sentences", "syntax_attribution", "errors_sampling_eval"):
        assert f"rule {rule}:" in out
    for rule in ("product_documents", "queries_select", "retrieval_run", "ttp_examples"):
        assert f"rule {rule}:" not in out
    # Everything under the configuration's results root: artifacts, logs, generated tables.
    # (config/paper_results/ holds the papers' values: an input, not a results root)
    assert "results/" not in out.replace("results_real/", "").replace("config/paper_results/", "")
    written = [
        path.strip()
        for line in out.splitlines()
        if line.strip().startswith(("output:", "log:"))
        for path in line.split(":", 1)[1].split(",")
    ]
    assert written and all(p.startswith("results_real/") for p in written), written
    assert "results_real/logs/errors/tables.log" in written
    assert "results_real/paper/generated/errors_sampling.tex" in written


def test_a_stage_that_needs_the_catalogue_stops_at_start(work, tmp_path):
    overlay = tmp_path / "on.yaml"
    overlay.write_text("queries: {enabled: true}\n", encoding="utf-8")
    proc = _plan(work, str(overlay), check=False)
    assert proc.returncode != 0
    err = proc.stderr
    assert "no product catalogue (meta file) for Musical_Instruments" in err
    assert "data.local.meta" in err and "queries.enabled: false" in err
    assert "Building DAG" not in err  # stopped before the job graph


def test_a_catalogue_target_names_the_missing_file(work):
    target = "results_real/data/Musical_Instruments/products.parquet"
    proc = _plan(work, targets=[target], check=False)
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr  # snakemake reports input-function errors on stdout
    assert "no product catalogue" in said and "data.local.meta" in said
