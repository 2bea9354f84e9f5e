"""The whole workflow (`all`, both paper PDFs included) on config/tiny.yaml, in a copy of the
repository, with every stage's artifacts checked against tests/fingerprints/tiny_<stage>.json.

A few minutes on 2 cores; deselect with `-m "not tiny_run"`. After an intended change of an
artifact, regenerate the expectations from the run's results folder (the test prints it):
`python scripts/fingerprints.py <results> --stage all --config tiny --update`.
"""

from __future__ import annotations

import json
import re

import pypdfium2
import pytest

from personalir.common.config import REPO_ROOT
from personalir.common.fingerprint import STAGE_PATTERNS, diff_fingerprints, fingerprint_tree
from personalir.report.contents import DOCUMENTS, items

from .small_run import must
from .tiny import TINY_RESULTS, run_tiny

pytestmark = [pytest.mark.integration, pytest.mark.tiny_run]

EXPECTED = REPO_ROOT / "tests" / "fingerprints"


def test_all_finished_and_papers_built(tiny_run):
    assert "(Rule: all)" in tiny_run["log"] and "(100%) done" in tiny_run["log"]
    for doc in DOCUMENTS:
        pdf = tiny_run["work"] / TINY_RESULTS / "paper" / f"{doc}.pdf"
        assert pdf.read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_pdf_reads_as_its_paper(tiny_run, doc, tmp_path):
    """As a reader would: every page renders (to PNG, not blank), no reference is left
    unresolved, the contents name every item of the paper, and TTP's present items carry
    the paper's numbers in their captions."""
    pdf = pypdfium2.PdfDocument(str(tiny_run["work"] / TINY_RESULTS / "paper" / f"{doc}.pdf"))
    pages = []
    for i in range(len(pdf)):
        image = pdf[i].render(scale=0.5).to_pil().convert("L")
        image.save(tmp_path / f"{doc}-{i + 1}.png")
        low, high = image.getextrema()
        assert high - low > 100, f"{doc}.pdf page {i + 1} renders blank"
        pages.append(pdf[i].get_textpage().get_text_range())
    # as read: a narrow column wraps an item's name across lines
    text = " ".join("\n".join(pages).split())
    assert "??" not in text, f"{doc}.pdf has unresolved references"
    assert "Produced by." in pages[0] and "Configuration" in pages[0]
    for item in items(doc):
        assert item.paper in text, f"{doc}.pdf's contents lack {item.paper}"
        numbered = re.fullmatch(r"(Table|Figure) \d+", item.paper)
        if numbered and item.label:
            # a table printed in parts (Table 4a, 4b, ...) is captioned from its first part
            assert re.search(rf"{item.paper}a?:", text), f"{doc}.pdf has no caption {item.paper}:"


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


def test_report_shows_every_figure_and_both_documents(tiny_run, tmp_path):
    """`snakemake --report` (make report) gathers every figure the documents include, both
    PDFs and the main tables, each with its caption; a new figure without report() fails."""
    html = tmp_path / "report.html"
    proc = must(run_tiny(tiny_run["work"], "--report", str(html)))
    added = set(re.findall(r"^Adding (\S+) \(", proc.stdout + proc.stderr, flags=re.M))
    generated = tiny_run["work"] / TINY_RESULTS / "paper" / "generated"
    figures = {p.name for p in generated.glob("*.pdf")}
    assert figures and figures <= added, f"figures left out of the report: {figures - added}"
    assert {"pqb.pdf", "ttp.pdf", "claims.csv", "table4.csv", "table_flip_rrstd.csv"} <= added
    text = html.read_text(encoding="utf-8")
    assert "configuration label: <tt" in text and "{{ snakemake" not in text


def test_rule_benchmarks_find_the_critical_path(tiny_run, tmp_path):
    """Every job of the run left a benchmark file; the plan Snakemake prints for a forced
    dry run links them into a critical path (`make rule-benchmarks`)."""
    from personalir.report import rule_benchmarks as rb

    work = tiny_run["work"]
    plan = must(run_tiny(work, "--forceall", "--dry-run")).stdout
    jobs = rb.parse_plan(plan)
    measured = rb.read_jobs(work / TINY_RESULTS / "logs" / "benchmarks")
    assert len(measured) == sum(j.benchmark is not None for j in jobs) == len(jobs) - 1  # all
    chain, summary = rb.critical_path(jobs, measured, f"{TINY_RESULTS}/logs/benchmarks")
    assert summary["unmeasured"] == 1 and summary["measured_jobs"] == len(measured)
    assert list(chain["rule"])[-1] == "all"
    written = {f for j in jobs for f in j.outputs}
    sources = {j.rule for j in jobs if not set(j.inputs) & written}  # need no other job
    assert chain["rule"][0] in sources
    assert 0 < summary["critical_path_s"] < summary["job_wall_s"]
    assert rb.main([str(work / TINY_RESULTS / "logs" / "benchmarks"), "--top", "3"]) == 0
