"""Per-rule and per-stage costs from Snakemake's benchmark files."""

from __future__ import annotations

import pytest

from personalir.report import rule_benchmarks as rb
from personalir.workflow_support import benchmark_path

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _write(path, *rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        HEADER
        + "".join(f"{s}\t0:00:01\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n" for s, rss, cpu in rows),
        encoding="utf-8",
    )


def test_benchmark_path_names_stage_rule_and_wildcards():
    assert benchmark_path("r/benchmarks/rules", "ttp", "ttp_sft") == (
        "r/benchmarks/rules/ttp/ttp_sft.tsv"
    )
    assert benchmark_path("b", "ttp", "ttp_run", "ttp_set", "method") == (
        "b/ttp/ttp_run.{ttp_set}.{method}.tsv"
    )


def test_jobs_rules_and_stages_add_up(tmp_path):
    root = tmp_path / "rules"
    _write(root / "ttp" / "ttp_run.A.bm25.tsv", (2.0, 100, 1.5))
    _write(root / "ttp" / "ttp_run.A.ttp.tsv", (10.0, 300, 18.0))
    _write(root / "ttp" / "ttp_sft.tsv", (30.0, 900, 55.0))
    # repeats: the job's cost is the median of its rows
    _write(root / "data" / "ingest.D.reviews.tsv", (1.0, 50, 1.0), (3.0, 70, 2.0), (2.0, 60, 9.0))
    # a wildcard value with a slash (provenance's folder) lies one level deeper
    _write(root / "provenance" / "provenance.ttp" / "PQB-D.tsv", (0.5, 10, 0.0))
    jobs = rb.read_jobs(root)
    assert len(jobs) == 5
    prov = jobs[jobs["rule"] == "provenance"].iloc[0]
    assert (prov["stage"], prov["job"]) == ("provenance", "ttp/PQB-D")
    ingest = jobs[jobs["rule"] == "ingest"].iloc[0]
    assert (ingest["job"], ingest["wall_s"], ingest["cpu_s"]) == ("D.reviews", 2.0, 2.0)
    rules = rb.per_rule(jobs)
    assert list(rules["rule"]) == ["ttp_sft", "ttp_run", "ingest", "provenance"]
    run = rules.set_index("rule").loc["ttp_run"]
    assert (run["jobs"], run["wall_s"], run["max_wall_s"], run["cpu_s"], run["max_rss_mb"]) == (
        2,
        12.0,
        10.0,
        19.5,
        300.0,
    )
    assert rules["share_of_wall"].sum() == pytest.approx(1.0)
    stages = rb.per_stage(rules).set_index("stage")
    assert stages.loc["ttp", "jobs"] == 3 and stages.loc["ttp", "wall_s"] == 42.0
    text = rb.markdown(rules, rb.per_stage(rules), len(jobs))
    assert "From 5 Snakemake benchmark files" in text and "| ttp | ttp_sft | 1 | 30.0" in text


def test_a_file_that_is_not_a_benchmark_is_named(tmp_path):
    bad = tmp_path / "rules" / "ttp" / "ttp_sft.tsv"
    bad.parent.mkdir(parents=True)
    bad.write_text("wall\n1\n", encoding="utf-8")
    with pytest.raises(rb.BenchmarkFileError, match="ttp_sft.tsv"):
        rb.read_jobs(tmp_path / "rules")


def test_cli_writes_tables_and_figure(tmp_path, capsys):
    root = tmp_path / "rules"
    _write(root / "syntax" / "syntax_parse.D.tsv", (4.0, 200, 3.9))
    out = tmp_path / "out"
    assert (
        rb.main(
            [
                str(root),
                "--csv",
                str(out / "r.csv"),
                "--md",
                str(out / "r.md"),
                "--figure",
                str(out / "r.pdf"),
            ]
        )
        == 0
    )
    assert (out / "r.pdf").read_bytes().startswith(b"%PDF")
    assert "syntax_parse" in (out / "r.csv").read_text(encoding="utf-8")
    assert "# Rule benchmarks" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        rb.main([str(tmp_path / "missing")])
