"""The paper-scale plan: extrapolation arithmetic on hand-built records (golden values worked
by hand in the comments), the mapping's validation, the SLURM block rewrite, and the doc's
table against the checked-in records."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from personalir.report import paper_scale as ps
from personalir.report import paper_scale_outputs as pso

REPO = Path(__file__).resolve().parents[2]

ASSUMPTIONS = {
    "runtime_safety": 2.0,
    "memory_safety": 1.5,
    "min_runtime_min": 10,
    "runtime_step_min": 5,
    "min_mem_mb": 1000,
    "mem_step_mb": 1000,
    "gpu": {
        "name": "test GPU",
        "peak_flops": 1.0e12,
        "peak_flops_source": "stated for the test",
        "utilisation": {"train": 0.5},
        "utilisation_source": "stated for the test",
    },
}
SAMPLE = {"n": 100, "domains": ["a", "b"]}
PAPER = {"n": 1000, "domains": ["a", "b"], "epochs": 3}

RULES = {
    # CPU, linear: 100 -> 1000 units over 2 paper jobs.
    "parse": {
        "rule": "parse",
        "unit": "sentences",
        "source": "test",
        "sample": {"sample": "n"},
        "paper": {"paper": "n"},
        "paper_jobs": {"paper": "domains"},
    },
    # CPU, measured exponent: x10/x1 = 100 is exponent 2.
    "fit": {
        "rule": "fit",
        "unit": "users",
        "source": "test",
        "sample": 10,
        "paper": 20,
        "paper_jobs": 1,
        "exponent": {"x10_over_x1": 100, "source": "test"},
    },
    # GPU: a FLOP count.
    "train": {
        "rule": "train",
        "unit": "records",
        "source": "test",
        "sample": 10,
        "paper": {"product": [{"count": "hundred"}, 10]},
        "paper_jobs": 1,
        "device": "gpu",
        "model": {
            "sample_params": 1.0e8,
            "paper_params": 1.0e9,
            "tokens_per_unit": {"sample": 50, "paper": 100},
            "flops_per_token": 6,
            "work": "train",
        },
        "memory": {"paper_bytes_per_param": 2, "add_mb": 400},
    },
    "skipped": {
        "rule": "judge",
        "unit": "items",
        "source": "test",
        "sample": 4,
        "paper": None,
        "reason": "remote API",
    },
}


def _mapping(tmp_path: Path, rules=None, counts=None, assumptions=None) -> Path:
    path = tmp_path / "paper_scale.yaml"
    doc = {
        "assumptions": assumptions or ASSUMPTIONS,
        "counts": {"hundred": {"value": 100, "source": "test"}} if counts is None else counts,
        "rules": RULES if rules is None else rules,
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _jobs() -> pd.DataFrame:
    rows = [
        # stage, rule, job, wall_s, max_rss_mb, cpu_s
        ("syntax", "parse", "a", 30.0, 900.0, 40.0),
        ("syntax", "parse", "b", 60.0, 700.0, 40.0),
        ("syntax", "fit", "", 40.0, 100.0, 36.0),
        ("ttp", "train", "", 30.0, 1000.0, 30.0),
        ("validation", "judge", "", 5.0, 100.0, 2.0),
        ("syntax", "figure", "", 1.0, 50.0, 0.0),
    ]
    frame = pd.DataFrame(rows, columns=["stage", "rule", "job", "wall_s", "max_rss_mb", "cpu_s"])
    frame["file"] = frame["rule"] + ".tsv"
    return frame


@pytest.fixture
def plan(tmp_path):
    assumptions, entries = ps.load_mapping(_mapping(tmp_path), SAMPLE, PAPER)
    records = ps.group_jobs(_jobs(), entries)
    return ps.plan_rows(records, entries, assumptions, max_runtime_min=2880).set_index("entry")


def test_cpu_linear_extrapolation(plan):
    row = plan.loc["parse"]
    assert row["throughput_units_per_cpu_s"] == pytest.approx(100 / 80)
    # 80 CPU s x (1000 / 100) = 800 s
    assert row["est_cpu_hours"] == pytest.approx(800 / 3600)
    # longest job 60 s x per-job ratio (500 / 50 = 10) = 10 min, x 2 = 20 min
    assert row["runtime_min"] == 20
    # 900 MB x 1.5 = 1350, rounded up to 2000
    assert row["mem_mb"] == 2000
    assert row["gpu"] == 0
    assert math.isnan(row["est_gpu_hours"])


def test_measured_exponent(plan):
    row = plan.loc["fit"]
    # exponent log10(100) = 2: 36 CPU s x 2^2 = 144 s
    assert row["est_cpu_hours"] == pytest.approx(144 / 3600)
    assert row["scaling"].startswith("^2.000")
    # 40 s x 4 = 160 s = 2.67 min, x 2 = 5.3 -> 10 (rounded to 5, the 10-minute floor)
    assert row["runtime_min"] == 10


def test_gpu_flop_count(plan):
    row = plan.loc["train"]
    # 1000 records x 100 tokens x 6 x 1e9 parameters = 6e14 FLOPs at 0.5 x 1e12 = 1200 s
    assert row["est_gpu_hours"] == pytest.approx(1200 / 3600)
    assert math.isnan(row["est_cpu_hours"])
    # 20 GPU-minutes x 2
    assert row["runtime_min"] == 40
    # 1000 MB - 1e8 x 4 B (400) + 1e9 x 2 B (2000) + 400 added = 3000, x 1.5 = 4500 -> 5000
    assert row["mem_mb"] == 5000
    assert row["gpu"] == 1
    # the sample: 10 x 50 tokens x 6 x 1e8 = 3e11 FLOPs in 30 CPU s = 10 GFLOP/s
    assert row["sample_implied_gflops"] == pytest.approx(10.0)
    # work per unit: tokens x2, parameters x10
    assert row["work_per_unit_ratio"] == pytest.approx(20.0)


def test_unestimated_and_unmodelled_rows_and_totals(plan):
    assert plan.loc["skipped", "scaling"] == "not estimated"
    assert plan.loc["skipped", "note"] == "remote API"
    assert math.isnan(plan.loc["skipped", "runtime_min"])
    figure = plan.loc["figure"]
    assert figure["scaling"] == "as measured (not modelled)"
    # no CPU time recorded: the wall second stands in
    assert figure["est_cpu_hours"] == pytest.approx(1 / 3600)
    totals = plan.loc["TOTAL"].set_index("stage")
    assert totals.loc["syntax", "est_cpu_hours"] == pytest.approx((800 + 144 + 1) / 3600)
    assert totals.loc["ttp", "est_gpu_hours"] == pytest.approx(1200 / 3600)


def test_runtime_capped_at_the_partition_limit(tmp_path):
    rules = {"parse": RULES["parse"] | {"paper": 10_000_000}}
    assumptions, entries = ps.load_mapping(_mapping(tmp_path, rules), SAMPLE, PAPER)
    records = ps.group_jobs(_jobs(), entries)
    row = ps.plan_rows(records, entries, assumptions, 2880).set_index("entry").loc["parse"]
    assert row["runtime_min"] == 2880
    assert row["exceeds_partition"].startswith("needs ")


def test_one_job_can_stand_in_for_several_entries(tmp_path):
    rules = {
        "small": RULES["parse"] | {"jobs": "a"},
        "large": RULES["parse"] | {"jobs": ["a"]},
    }
    _, entries = ps.load_mapping(_mapping(tmp_path, rules), SAMPLE, PAPER)
    records = ps.group_jobs(_jobs(), entries).set_index(["rule", "group"])
    assert records.loc[("parse", "small"), "jobs"] == 1
    assert records.loc[("parse", "large"), "cpu_s"] == 40.0
    # job b matches no entry: a row of its own with the rule's unmodelled jobs
    assert records.loc[("parse", ""), "max_wall_s"] == 60.0


def test_counts_read_configs_lists_and_quotients(tmp_path):
    counts = {
        "both": {"product": [{"paper": "n"}, {"paper": "domains"}]},
        "share": {"quotient": [{"count": "both"}, {"sample": "n"}]},
        "plus": {"sum": [{"count": "share"}, {"value": 1, "source": "test"}]},
    }
    rules = {"parse": RULES["parse"] | {"paper": {"count": "plus"}}}
    _, (entry,) = ps.load_mapping(_mapping(tmp_path, rules, counts), SAMPLE, PAPER)
    assert entry.paper_units == 1000 * 2 / 100 + 1


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"rule": "x", "source": "s", "sample": 1, "paper": 1, "paper_jobs": 1}, "`unit`"),
        ({"rule": "x", "unit": "u", "source": "s", "sample": 1, "paper": None}, "`reason`"),
        (
            {"rule": "x", "unit": "u", "source": "s", "sample": 1, "paper": 1},
            "`paper_jobs` is required",
        ),
        (
            {"rule": "x", "unit": "u", "source": "s", "sample": {"count": "nope"}, "paper": 1},
            "no count named `nope`",
        ),
        (
            {"rule": "x", "unit": "u", "source": "s", "sample": {"sample": "a.b"}, "paper": 1},
            "key `a.b`",
        ),
        (
            {"rule": "x", "unit": "u", "source": "s", "sample": {"value": 3}, "paper": 1},
            "needs its `source`",
        ),
        (
            {"rule": "x", "unit": "u", "source": "s", "sample": 1, "paper": 1, "paper_jobs": 0},
            "both zero",
        ),
        (
            {"rule": "x", "unit": "u", "source": "s", "sample": 1, "paper": 1, "paper_jobs": 1,
             "device": "tpu"},
            "device",
        ),
        (
            {"rule": "x", "unit": "u", "source": "s", "sample": 1, "paper": 1, "paper_jobs": 1,
             "device": "gpu"},
            "needs a `model`",
        ),
        (
            {"rule": "x", "unit": "u", "source": "s", "sample": 1, "paper": 1, "paper_jobs": 1,
             "exponent": {"x10_over_x1": 11}},
            "x10_over_x1 and source",
        ),
        (
            {"rule": "x", "unit": "u", "source": "s", "sample": 1, "paper": 1, "paper_jobs": 1,
             "model": {"paper_params": 1, "work": "dance", "sample_params": 1}},
            "`dance` has no utilisation",
        ),
        (
            {"rule": "x", "unit": "u", "source": "s", "sample": 1, "paper": 1, "paper_jobs": 1,
             "model": {"paper_params": 1, "work": "train"}},
            "needs `sample_params`",
        ),
        (
            {"rule": "x", "unit": "u", "source": "s", "sample": 1, "paper": 1, "paper_jobs": 1,
             "colour": "red"},
            "unknown key(s) ['colour']",
        ),
    ],
)  # fmt: skip
def test_malformed_entries_name_file_and_entry(tmp_path, entry, message):
    path = _mapping(tmp_path, {"broken": entry})
    with pytest.raises(ps.PlanSpecError) as err:
        ps.load_mapping(path, SAMPLE, PAPER)
    text = str(err.value)
    assert str(path) in text
    assert "entry `broken`" in text
    assert message in text


def test_missing_source_of_an_assumption_is_named(tmp_path):
    gpu = {k: v for k, v in ASSUMPTIONS["gpu"].items() if k != "utilisation_source"}
    path = _mapping(tmp_path, assumptions=ASSUMPTIONS | {"gpu": gpu})
    with pytest.raises(ps.PlanSpecError, match="utilisation_source"):
        ps.load_mapping(path, SAMPLE, PAPER)


def test_records_without_the_entry_s_jobs_stop_with_the_entry(tmp_path):
    rules = {"ghost": RULES["parse"] | {"rule": "ghost"}}
    assumptions, entries = ps.load_mapping(_mapping(tmp_path, rules), SAMPLE, PAPER)
    with pytest.raises(ps.PlanSpecError, match="entry `ghost`"):
        ps.plan_rows(ps.group_jobs(_jobs(), entries), entries, assumptions)


# --- the SLURM profile's generated block ---------------------------------------------------

PROFILE = """executor: slurm
default-resources:
  mem_mb: 4000
# set-resources:
#   ingest:
#     mem_mb: 16000
"""


def test_slurm_block_appended_then_replaced_only_between_markers(plan):
    block = pso.slurm_block(plan.reset_index(), "cmd", "records")
    once = pso.rewrite_profile(PROFILE, block)
    assert once.startswith(PROFILE)
    assert pso.rewrite_profile(once, block) == once  # idempotent
    edited = "# a comment above\n" + once + "jobs: 50\n"
    other = block.replace("runtime: 20", "runtime: 25")
    assert other != block
    again = pso.rewrite_profile(edited, other)
    assert again == "# a comment above\n" + PROFILE + other + "jobs: 50\n"
    loaded = yaml.safe_load(again)["set-resources"]
    assert loaded["parse"] == {"runtime": 25, "mem_mb": 2000}
    assert loaded["train"] == {"runtime": 40, "mem_mb": 5000, "gpu": 1}
    assert "judge" not in loaded and "figure" not in loaded
    assert "# judge: declared resources kept (skipped: no estimate)" in again


def test_slurm_block_with_one_marker_stops():
    with pytest.raises(ps.PlanSpecError, match="marker"):
        pso.rewrite_profile(PROFILE + pso.BLOCK_START + "\n", "x")


def test_gpu_left_to_the_rule_when_its_job_groups_differ(tmp_path):
    rules = {
        "cpu_part": RULES["parse"] | {"rule": "train"},
        "gpu_part": RULES["train"],
    }
    assumptions, entries = ps.load_mapping(_mapping(tmp_path, rules), SAMPLE, PAPER)
    plan = ps.plan_rows(ps.group_jobs(_jobs(), entries), entries, assumptions)
    resources, notes = pso.slurm_resources(plan)
    assert "gpu" not in resources["train"]
    assert any(n.startswith("train: gpu left to the rule") for n in notes)


# --- the checked-in table ------------------------------------------------------------------


def _repo_plan():
    load = lambda p: yaml.safe_load((REPO / p).read_text(encoding="utf-8"))  # noqa: E731
    assumptions, entries = ps.load_mapping(
        REPO / "config/paper_scale.yaml", load("config/config.yaml"), load("config/paper.yaml")
    )
    records = ps.read_records(REPO / "docs/data/cold_run_f64f772_rules.csv")
    limit = ps._max_runtime(REPO / "profiles/slurm/partitions.yaml")
    return ps.plan_rows(records, entries, assumptions, limit), assumptions


def test_doc_table_is_regenerated_from_the_checked_in_records():
    plan, assumptions = _repo_plan()
    doc = (REPO / "docs/paper_scale.md").read_text(encoding="utf-8")
    assert pso.doc_table(doc) == pso.markdown(plan, assumptions), (
        "docs/paper_scale.md is stale: run the command in its 'The table' section"
    )


def test_slurm_profile_block_matches_the_plan():
    plan, _ = _repo_plan()
    profile = (REPO / "profiles/slurm/config.yaml").read_text(encoding="utf-8")
    assert profile.count(pso.BLOCK_START) == 1 and profile.count(pso.BLOCK_END) == 1
    resources, _ = pso.slurm_resources(plan)
    assert yaml.safe_load(profile)["set-resources"] == resources


def test_checked_in_records_fingerprint():
    records = ps.read_records(REPO / "docs/data/cold_run_f64f772_rules.csv")
    # the f64f772 cold run: 295 benchmark files (296 jobs; `all` has none); the MiniLM job
    # stands in for four paper systems (three extra rows), so the groups hold 298 job rows
    assert int(records["jobs"].sum()) == 298
    sft = records.set_index("group").loc["ttp_sft"]
    assert (sft["jobs"], sft["wall_s"], sft["cpu_s"], sft["max_rss_mb"]) == (
        1,
        211.87,
        191.39,
        4111.37,
    )


def test_cli_on_benchmark_files(tmp_path):
    root = tmp_path / "benchmarks" / "syntax"
    root.mkdir(parents=True)
    head = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for job, wall in (("a", 30.0), ("b", 60.0)):
        (root / f"parse.{job}.tsv").write_text(
            head + f"{wall}\t0:00:30\t900\t0\t0\t0\t0\t0\t0\t40\n", encoding="utf-8"
        )
    # The real sample config, and paper overrides with ten times its users: the CLI reads
    # both through the schema, the paper's laid over the sample's (snakemake --configfile).
    sample_text = (REPO / "config" / "config.yaml").read_text(encoding="utf-8")
    n_users = yaml.safe_load(sample_text)["sample"]["n_users"]
    rules = {
        "parse": {
            **RULES["parse"],
            "sample": {"sample": "sample.n_users"},
            "paper": {"paper": "sample.n_users"},
        }
    }
    mapping = _mapping(tmp_path, rules)
    (tmp_path / "s.yaml").write_text(sample_text, encoding="utf-8")
    (tmp_path / "p.yaml").write_text(
        yaml.safe_dump({"sample": {"n_users": 10 * n_users}}), encoding="utf-8"
    )
    out = tmp_path / "out"
    rc = ps.main(
        [
            str(tmp_path / "benchmarks"),
            "--mapping", str(mapping),
            "--sample-config", str(tmp_path / "s.yaml"),
            "--paper-config", str(tmp_path / "p.yaml"),
            "--partitions", "",
            "--csv", str(out / "plan.csv"),
            "--md", str(out / "plan.md"),
            "--rules-csv", str(out / "rules.csv"),
        ]
    )  # fmt: skip
    assert rc == 0
    plan = pd.read_csv(out / "plan.csv").set_index("entry")
    assert plan.loc["parse", "est_cpu_hours"] == pytest.approx(800 / 3600)
    assert "| syntax | parse | sentences |" in (out / "plan.md").read_text(encoding="utf-8")
    again = ps.read_records(out / "rules.csv")
    assert int(again["jobs"].sum()) == 2


def test_paper_config_is_the_sample_config_with_the_paper_overrides(tmp_path):
    sample_text = (REPO / "config" / "config.yaml").read_text(encoding="utf-8")
    (tmp_path / "s.yaml").write_text(sample_text, encoding="utf-8")
    (tmp_path / "p.yaml").write_text("sample:\n  n_users: 4000\n", encoding="utf-8")
    sample, paper = ps.load_configs(tmp_path / "s.yaml", tmp_path / "p.yaml")
    assert paper["sample"]["n_users"] == 4000
    # What the paper file leaves out is the sample's, and the schema's defaults are filled.
    assert paper["seed"] == sample["seed"] and paper["ttp"] == sample["ttp"]
    assert sample["sample"]["n_users"] == yaml.safe_load(sample_text)["sample"]["n_users"]


def test_cli_refuses_an_invalid_paper_config_naming_its_line(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(
        (REPO / "config" / "config.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "p.yaml").write_text("seed: 1\nsample:\n  n_users: -5\n", encoding="utf-8")
    rc = ps.main(
        [
            "--from-rules-csv", str(REPO / "docs" / "data" / "cold_run_f64f772_rules.csv"),
            "--sample-config", str(tmp_path / "s.yaml"),
            "--paper-config", str(tmp_path / "p.yaml"),
            "--partitions", "",
        ]
    )  # fmt: skip
    assert rc == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'p.yaml'}:3" in err and "n_users" in err
