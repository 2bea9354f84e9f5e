"""Paper-scale plan: CPU-hours, GPU-hours and SLURM resources per rule, from the sample's
measured job records and a declared unit of work per rule.

The sample's Snakemake benchmark records (``<root>/<stage>/<rule>[.<wildcards>].tsv``) give
each rule's wall seconds, CPU seconds and peak RSS. A mapping file (``config/paper_scale.yaml``)
says, for each modelled rule (or group of its jobs), what one unit of work is, how many units
the sample did and how many the paper configuration does (numbers read from the sample and
paper configs, or constants that cite their source), how cost grows with units (linear, or an
exponent measured in docs/speed.md) and, for model-bound rules, the two models' parameter
counts. From these:

* CPU-hours at paper scale = the sample's CPU seconds x (paper units / sample units) ^ exponent
  x (paper parameters / sample parameters): measured throughput, extrapolated;
* GPU-hours = paper units x tokens per unit x FLOPs per token per parameter x paper parameters
  / (the GPU's peak FLOP/s x an assumed utilisation): a FLOP count, never a measurement;
* a SLURM ``runtime`` (minutes, x a safety factor), ``mem_mb`` (the measured peak RSS with the
  model's weights swapped for the paper model's, the rest scaled with the job's units where
  the mapping says it grows) and ``gpu`` per job.

Rules the mapping leaves out are listed as measured (one row each, not extrapolated); their
declared resources stay as they are.

    python -m personalir.report.paper_scale results/logs/benchmarks \\
        --csv results/logs/paper_scale.csv --md results/logs/paper_scale.md

``--rules-csv`` writes the compact per-rule, per-job-group record the table is computed from
(checked in as ``docs/data/``); ``--from-rules-csv`` reads such a file instead of the records;
``--slurm-profile`` rewrites the generated ``set-resources`` block of a SLURM profile.

The mapping file is read by :mod:`personalir.report.paper_scale_spec`; the Markdown tables,
the profile's block and the document's table are written by
:mod:`personalir.report.paper_scale_outputs`.
"""

from __future__ import annotations

import argparse
import fnmatch
import math
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import yaml

from personalir.common.config import ConfigError, deep_merge, load_config, validate_config
from personalir.report.paper_scale_outputs import (
    markdown,
    rewrite_profile,
    slurm_block,
    update_doc,
)
from personalir.report.paper_scale_spec import Assumptions, Entry, PlanSpecError, load_mapping
from personalir.report.rule_benchmarks import read_jobs

__all__ = ["PlanSpecError", "load_mapping", "group_jobs", "plan_rows", "markdown", "main"]

#: Columns of the compact record of the measured jobs (one row per rule and job group).
RECORD_COLUMNS = ["stage", "rule", "group", "jobs", "wall_s", "cpu_s", "max_wall_s", "max_rss_mb"]


# --- the records -----------------------------------------------------------------------------


def _matches(job: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(job, p) for p in patterns)


def group_jobs(jobs: pd.DataFrame, entries: Sequence[Entry]) -> pd.DataFrame:
    """The compact record: one row per entry (``group`` = its name) over the jobs it matches,
    and one per rule for the jobs no entry matches (``group`` = ``""``). A job matched by
    several entries (one sample job standing in for several paper systems) counts in each."""
    rows, claimed = [], set()
    for e in entries:
        mask = (jobs["rule"] == e.rule) & jobs["job"].map(lambda j, e=e: _matches(j, e.jobs))
        sel = jobs[mask]
        claimed |= set(sel.index)
        if sel.empty:
            continue
        rows.append(_record(sel, e.name))
    rest = jobs.drop(index=sorted(claimed))
    for _, sel in rest.groupby(["stage", "rule"], sort=True):
        rows.append(_record(sel, ""))
    return pd.DataFrame(rows, columns=RECORD_COLUMNS)


def _record(sel: pd.DataFrame, group: str) -> dict:
    return {
        "stage": sel["stage"].iloc[0],
        "rule": sel["rule"].iloc[0],
        "group": group,
        "jobs": len(sel),
        "wall_s": round(float(sel["wall_s"].sum()), 3),
        "cpu_s": round(float(sel["cpu_s"].fillna(0).sum()), 3),
        "max_wall_s": round(float(sel["wall_s"].max()), 3),
        "max_rss_mb": round(float(sel["max_rss_mb"].fillna(0).max()), 3),
    }


def read_records(path: str | Path) -> pd.DataFrame:
    """A compact record written by ``--rules-csv`` (the checked-in one, or another run's)."""
    frame = pd.read_csv(path, keep_default_na=False)
    missing = [c for c in RECORD_COLUMNS if c not in frame.columns]
    if missing:
        raise PlanSpecError(f"{path}: not a paper-scale record (missing columns {missing})")
    return frame[RECORD_COLUMNS]


# --- the plan --------------------------------------------------------------------------------


def _round_up(value: float, step: int) -> int:
    return int(math.ceil(value / step - 1e-9) * step)


def plan_rows(
    records: pd.DataFrame,
    entries: Sequence[Entry],
    assumptions: Assumptions,
    max_runtime_min: int | None = None,
) -> pd.DataFrame:
    """One row per entry (and per unmodelled rule), then one total row per stage."""
    by_group = {r.group: r for r in records.itertuples(index=False) if r.group}
    rows = []
    for e in entries:
        rec = by_group.get(e.name)
        if rec is None:
            raise PlanSpecError(
                f"entry `{e.name}`: no job of rule `{e.rule}` matching {list(e.jobs)} in the"
                " records"
            )
        rows.append(_plan_entry(e, rec, assumptions, max_runtime_min))
    for rec in records.itertuples(index=False):
        if not rec.group:
            rows.append(_unmodelled(rec))
    frame = pd.DataFrame(rows, columns=PLAN_COLUMNS)
    stage_order = list(dict.fromkeys(frame["stage"]))
    out = []
    for stage in stage_order:
        part = frame[frame["stage"] == stage]
        out.append(part)
        out.append(pd.DataFrame([_total(stage, part)], columns=PLAN_COLUMNS))
    return pd.concat(out, ignore_index=True)


PLAN_COLUMNS = [
    "stage", "entry", "rule", "jobs_pattern", "unit", "sample_jobs", "sample_units",
    "sample_wall_s", "sample_cpu_s", "sample_max_rss_mb", "throughput_units_per_cpu_s",
    "paper_jobs", "paper_units", "scaling", "work_per_unit_ratio", "paper_device", "est_cpu_hours",
    "est_gpu_hours", "gpu_hours_if_moved", "sample_implied_gflops", "runtime_min", "mem_mb",
    "gpu", "exceeds_partition", "note",
]  # fmt: skip


def _plan_entry(e: Entry, rec, a: Assumptions, max_runtime_min: int | None) -> dict:
    cpu_s = float(rec.cpu_s) if float(rec.cpu_s) > 0 else float(rec.wall_s)
    row = {
        "stage": rec.stage,
        "entry": e.name,
        "rule": e.rule,
        "jobs_pattern": ",".join(e.jobs),
        "unit": e.unit,
        "sample_jobs": int(rec.jobs),
        "sample_units": e.sample_units,
        "sample_wall_s": float(rec.wall_s),
        "sample_cpu_s": float(rec.cpu_s),
        "sample_max_rss_mb": float(rec.max_rss_mb),
        "throughput_units_per_cpu_s": e.sample_units / cpu_s,
        "paper_device": e.device,
        "note": e.note,
    }
    if e.paper_units is None:
        return row | {"scaling": "not estimated", "note": e.reason}
    if e.paper_jobs == 0:
        return row | {"paper_jobs": 0, "paper_units": 0.0, "scaling": "not run at paper scale"}
    unit_ratio = e.paper_units / e.sample_units
    model_ratio = e.paper_params / e.sample_params if e.paper_params and e.sample_params else None
    token_ratio = e.tokens_per_unit_paper / e.tokens_per_unit_sample
    growth = token_ratio * (model_ratio or 1.0)  # work per unit: tokens x parameters
    scale = unit_ratio**e.exponent * growth
    scaling = "linear" if e.exponent == 1.0 else f"^{e.exponent:.3f}: {e.exponent_source}"
    row |= {
        "paper_jobs": int(e.paper_jobs),
        "paper_units": e.paper_units,
        "scaling": scaling,
        "work_per_unit_ratio": growth,
    }
    cpu_hours = cpu_s * scale / 3600 if (not e.paper_params or model_ratio) else None
    gpu_hours = None
    if e.paper_params and e.flops_per_token > 0:
        flops = e.paper_units * e.tokens_per_unit_paper * e.flops_per_token * e.paper_params
        gpu_hours = flops / (a.gpu_peak_flops * a.gpu_utilisation[e.work]) / 3600
        if e.sample_params:
            sample_flops = (
                e.sample_units * e.tokens_per_unit_sample * e.flops_per_token * e.sample_params
            )
            row["sample_implied_gflops"] = sample_flops / cpu_s / 1e9
    # Per job: the sample's longest job, grown by the job's unit ratio (and the model's).
    per_job_ratio = (e.paper_units / e.paper_jobs) / (e.sample_units / int(rec.jobs))
    if e.device == "gpu":
        row["est_gpu_hours"] = gpu_hours
        minutes = gpu_hours * 60 / e.paper_jobs
        row["gpu"] = 1
    else:
        row["est_cpu_hours"] = cpu_hours
        row["gpu_hours_if_moved"] = gpu_hours
        minutes = float(rec.max_wall_s) * per_job_ratio**e.exponent * growth / 60
        row["gpu"] = 0
    runtime = max(a.min_runtime_min, _round_up(minutes * a.runtime_safety, a.runtime_step_min))
    if max_runtime_min is not None and runtime > max_runtime_min:
        row["exceeds_partition"] = f"needs {runtime} min > partition limit {max_runtime_min}"
        runtime = max_runtime_min
    row["runtime_min"] = runtime
    row["mem_mb"] = _memory(e, float(rec.max_rss_mb), per_job_ratio, a)
    return row


def _memory(e: Entry, rss_mb: float, per_job_ratio: float, a: Assumptions) -> int:
    """Peak RSS with the sample model's weights replaced by the paper model's, the rest
    scaled by the job's unit ratio where the mapping says so (``data: scale``), plus what the
    mapping says the paper's job holds besides (``add_mb``: an index, an embedding matrix)."""
    sample_model = (e.sample_params or 0) * e.sample_bytes_per_param / 1e6
    paper_model = (e.paper_params or 0) * e.paper_bytes_per_param / 1e6
    rest = max(rss_mb - sample_model, 0.0)
    if e.memory_data == "scale":
        rest *= per_job_ratio
    need = (rest + paper_model + e.add_mb) * a.memory_safety
    return max(a.min_mem_mb, _round_up(need, a.mem_step_mb))


def _unmodelled(rec) -> dict:
    cpu_s = float(rec.cpu_s) if float(rec.cpu_s) > 0 else float(rec.wall_s)
    return {
        "stage": rec.stage,
        "entry": rec.rule,
        "rule": rec.rule,
        "jobs_pattern": "(other jobs)",
        "unit": "job",
        "sample_jobs": int(rec.jobs),
        "sample_wall_s": float(rec.wall_s),
        "sample_cpu_s": float(rec.cpu_s),
        "sample_max_rss_mb": float(rec.max_rss_mb),
        "scaling": "as measured (not modelled)",
        "paper_device": "cpu",
        "est_cpu_hours": cpu_s / 3600,
    }


def _total(stage: str, part: pd.DataFrame) -> dict:
    def total(col):
        values = pd.to_numeric(part[col], errors="coerce")
        return float(values.sum()) if values.notna().any() else None

    return {
        "stage": stage,
        "entry": "TOTAL",
        "rule": "",
        "sample_jobs": int(part["sample_jobs"].sum()),
        "sample_wall_s": total("sample_wall_s"),
        "sample_cpu_s": total("sample_cpu_s"),
        "est_cpu_hours": total("est_cpu_hours"),
        "est_gpu_hours": total("est_gpu_hours"),
        "gpu_hours_if_moved": total("gpu_hours_if_moved"),
    }


def _csv(plan: pd.DataFrame, path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    plan.to_csv(path, index=False, float_format="%.6g")


def _max_runtime(partitions: str | Path | None) -> int | None:
    if not partitions:
        return None
    raw = yaml.safe_load(Path(partitions).read_text(encoding="utf-8")) or {}
    limits = [
        int(p["max_runtime"])
        for p in (raw.get("partitions") or {}).values()
        if isinstance(p, Mapping) and "max_runtime" in p
    ]
    return max(limits) if limits else None


def load_configs(sample_path: str | Path, paper_path: str | Path) -> tuple[dict, dict]:
    """(sample config, paper config), both validated with the schema's defaults filled.

    The paper config is what ``snakemake --configfile <paper_path>`` runs: the sample config
    with the paper file's keys laid over it, so a count the paper file leaves out is the
    sample's (or the schema's default), never missing."""
    sample_path, paper_path = Path(sample_path), Path(paper_path)
    sample = load_config(sample_path)
    base_text = sample_path.read_text(encoding="utf-8")
    paper_text = paper_path.read_text(encoding="utf-8")
    try:
        base = yaml.safe_load(base_text) or {}
        over = yaml.safe_load(paper_text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{paper_path}: not valid YAML: {exc}") from None
    if not isinstance(over, dict):
        raise ConfigError(f"{paper_path}: the top level must be a mapping")
    paper = validate_config(
        deep_merge(base, over),
        sources=[(str(paper_path), paper_text), (str(sample_path), base_text)],
    )
    return sample, paper


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="?", help="folder of Snakemake benchmark TSVs")
    ap.add_argument("--from-rules-csv", help="a compact record (--rules-csv) instead of TSVs")
    ap.add_argument("--mapping", default="config/paper_scale.yaml")
    ap.add_argument("--sample-config", default="config/config.yaml", help="the sample's config")
    ap.add_argument(
        "--paper-config",
        default="config/paper.yaml",
        help="the paper's overrides, laid over --sample-config as snakemake --configfile does",
    )
    ap.add_argument("--partitions", default="profiles/slurm/partitions.yaml")
    ap.add_argument("--rules-csv", help="write the compact record of the jobs read")
    ap.add_argument("--csv", help="write the plan, one row per rule or job group")
    ap.add_argument("--md", help="write the Markdown tables")
    ap.add_argument("--doc", help="rewrite the table between this document's markers")
    ap.add_argument("--slurm-profile", help="rewrite this profile's generated block")
    ap.add_argument("--records-label", help="how the block names the records (default: path)")
    args = ap.parse_args(argv)
    if bool(args.records) == bool(args.from_rules_csv):
        ap.error("give either a records folder or --from-rules-csv")
    try:
        sample, paper = load_configs(args.sample_config, args.paper_config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        assumptions, entries = load_mapping(args.mapping, sample, paper)
        if args.records:
            jobs = read_jobs(args.records)
            if jobs.empty:
                raise PlanSpecError(f"{args.records}: no benchmark file")
            records = group_jobs(jobs, entries)
        else:
            records = read_records(args.from_rules_csv)
        plan = plan_rows(records, entries, assumptions, _max_runtime(args.partitions))
    except PlanSpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.rules_csv:
        Path(args.rules_csv).parent.mkdir(parents=True, exist_ok=True)
        records.to_csv(args.rules_csv, index=False)
    if args.csv:
        _csv(plan, args.csv)
    text = markdown(plan, assumptions)
    if args.md:
        Path(args.md).parent.mkdir(parents=True, exist_ok=True)
        Path(args.md).write_text(text, encoding="utf-8")
    if args.doc:
        doc = Path(args.doc)
        try:
            doc.write_text(update_doc(doc.read_text(encoding="utf-8"), text), encoding="utf-8")
        except PlanSpecError as exc:
            print(f"error: {args.doc}: {exc}", file=sys.stderr)
            return 2
    if args.slurm_profile:
        command = "python -m personalir.report.paper_scale " + " ".join(
            shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
        )
        label = args.records_label or args.records or args.from_rules_csv
        profile = Path(args.slurm_profile)
        profile.write_text(
            rewrite_profile(profile.read_text(encoding="utf-8"), slurm_block(plan, command, label)),
            encoding="utf-8",
        )
    if not (args.csv or args.md or args.doc):
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
