"""Per-rule and per-stage costs from Snakemake's benchmark files."""

from __future__ import annotations

import pytest

from personalir.report import rule_benchmarks as rb
from personalir.workflow.support import benchmark_path

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


# A dry-run listing as Snakemake prints it: a -> {b, c} -> d, plus the output-less target.
PLAN = """Building DAG of jobs...
Job stats:
job      count
-----  -------
all          1
total        5

[Sat Dec  5 16:53:52 2026]
localrule a:
    output: r/a.txt
    log: r/logs/a.log
    jobid: 4
    benchmark: B/s1/a.tsv
    reason: Missing output files: r/a.txt
    resources: tmpdir=/tmp

[Sat Dec  5 16:53:52 2026]
rule b:
    input: r/a.txt
    output: r/b.txt, r/b.json (temp)
    jobid: 3
    benchmark: B/s1/b.X.tsv
    wildcards: w=X

rule c:
    input: r/a.txt
    output: r/c.txt
    jobid: 2
    benchmark: B/s2/c.tsv

localrule d:
    input: r/b.txt, r/c.txt, r/b.json
    output: r/d.txt
    jobid: 1
    benchmark: B/s2/d.tsv

localrule all:
    input: r/d.txt
    jobid: 0
    reason: Input files updated by another job: r/d.txt
This was a dry-run (flag -n). The order of jobs does not reflect the order of execution.
"""


def test_plan_lists_each_jobs_files_and_benchmark():
    plan = rb.parse_plan(PLAN)
    assert [j.rule for j in plan] == ["a", "b", "c", "d", "all"]
    b = plan[1]
    assert b.inputs == ("r/a.txt",) and b.outputs == ("r/b.txt", "r/b.json")
    assert b.benchmark == "B/s1/b.X.tsv" and plan[4].benchmark is None and plan[4].outputs == ()
    with pytest.raises(rb.PlanError, match="plan.txt: no job listed"):
        rb.parse_plan("Building DAG of jobs...\nNothing to be done.\n", "plan.txt")


def test_critical_path_is_the_heaviest_chain(tmp_path):
    root = tmp_path / "B"
    _write(root / "s1" / "a.tsv", (2.0, 10, 2.0))
    _write(root / "s1" / "b.X.tsv", (5.0, 10, 5.0))
    _write(root / "s2" / "c.tsv", (7.0, 10, 7.0))
    # d never ran: it costs nothing and is counted as unmeasured
    plan = rb.parse_plan(PLAN.replace("B/", f"{root.as_posix()}/"))
    chain, summary = rb.critical_path(plan, rb.read_jobs(root), root)
    assert list(chain["rule"]) == ["a", "c", "d", "all"]  # c (7 s) outweighs b (5 s)
    assert list(chain["cumulative_s"]) == [2.0, 9.0, 9.0, 9.0]
    assert list(chain["job"])[:2] == ["", ""]
    assert summary == {
        "planned_jobs": 5,
        "measured_jobs": 3,
        "unmeasured": 2,
        "critical_path_s": 9.0,
        "critical_path_jobs": 4,
        "job_wall_s": 14.0,
    }
    # b made heavier: the path goes through b, and its job label is its wildcard part
    _write(root / "s1" / "b.X.tsv", (8.0, 10, 8.0))
    chain, summary = rb.critical_path(plan, rb.read_jobs(root), root)
    assert list(chain["rule"])[:2] == ["a", "b"] and chain["job"][1] == "X"
    assert summary["critical_path_s"] == 10.0
    text = rb.markdown(*_tables(root), critical=(chain, summary))
    assert "10.0 s over 4 dependent jobs" in text and "(2 without a benchmark file" in text
    assert "| 2 | b | X | 8.0 | 10.0 |" in text


def _tables(root):
    jobs = rb.read_jobs(root)
    rules = rb.per_rule(jobs)
    return rules, rb.per_stage(rules), len(jobs)


def test_cli_writes_the_critical_path(tmp_path):
    root = tmp_path / "B"
    _write(root / "s1" / "a.tsv", (2.0, 10, 2.0))
    plan = tmp_path / "plan.txt"
    plan.write_text(PLAN.replace("B/", f"{root.as_posix()}/"), encoding="utf-8")
    out = tmp_path / "cp.csv"
    fig = tmp_path / "rules.pdf"
    assert (
        rb.main([str(root), "--plan", str(plan), "--critical-csv", str(out), "--figure", str(fig)])
        == 0
    )
    assert out.read_text(encoding="utf-8").splitlines()[1] == "a,,2.000,2.000"
    assert fig.read_bytes().startswith(b"%PDF")
    with pytest.raises(SystemExit):
        rb.main([str(root), "--critical-csv", str(out)])  # needs --plan


def test_schedule_bounds_count_the_cores_each_job_holds(tmp_path):
    root = tmp_path / "B"
    _write(root / "s1" / "a.tsv", (2.0, 10, 2.0))
    _write(root / "s1" / "b.X.tsv", (5.0, 10, 9.0))
    _write(root / "s2" / "c.tsv", (7.0, 10, 7.0))
    text = PLAN.replace("B/", f"{root.as_posix()}/").replace(
        "    wildcards: w=X\n", "    wildcards: w=X\n    threads: 2\n"
    )
    plan = rb.parse_plan(text)
    assert [j.threads for j in plan] == [1, 2, 1, 1, 1]
    jobs = rb.read_jobs(root)
    two = rb.schedule(plan, jobs, root, cores=2)
    # a (2 s), b (5 s on 2 cores), c (7 s); d never ran (0 s)
    assert two == {
        "cores": 2,
        "core_seconds": 19.0,
        "core_floor_s": 9.5,
        "critical_path_s": 9.0,
        "floor_s": 9.5,
        # a; then c (the longer chain) takes one core and b waits for both: 2 + 7 + 5
        "list_schedule_s": 14.0,
    }
    one = rb.schedule(plan, jobs, root, cores=1)  # b scaled down to the one core
    assert one["core_seconds"] == 14.0 and one["list_schedule_s"] == 14.0
    assert rb.schedule(plan, jobs, root, cores=8)["list_schedule_s"] == 9.0
    with pytest.raises(ValueError, match="at least 1"):
        rb.schedule(plan, jobs, root, cores=0)
    md = rb.markdown(*_tables(root), cores=two)
    assert "## On 2 cores" in md and "19.0 core-seconds" in md and "takes 14.0 s, 47.4%" in md
