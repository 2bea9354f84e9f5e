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
"""

from __future__ import annotations

import argparse
import fnmatch
import math
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from personalir.report.rule_benchmarks import read_jobs

BLOCK_START = "# >>> paper-scale plan: generated, do not edit by hand >>>"
BLOCK_END = "# <<< paper-scale plan <<<"
DOC_START, DOC_END = "<!-- paper-scale:start -->", "<!-- paper-scale:end -->"

#: Columns of the compact record of the measured jobs (one row per rule and job group).
RECORD_COLUMNS = ["stage", "rule", "group", "jobs", "wall_s", "cpu_s", "max_wall_s", "max_rss_mb"]
DEVICES = ("cpu", "gpu")
MEMORY_DATA = ("fixed", "scale")
ENTRY_KEYS = {
    "rule", "jobs", "unit", "source", "sample", "paper", "paper_jobs", "reason", "exponent",
    "device", "model", "memory", "note",
}  # fmt: skip
MODEL_KEYS = {"sample_params", "paper_params", "tokens_per_unit", "flops_per_token", "work"}
MEMORY_KEYS = {"data", "add_mb", "sample_bytes_per_param", "paper_bytes_per_param"}


class PlanSpecError(ValueError):
    """The mapping file is malformed (the message names the file and the entry)."""


# --- the mapping -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Assumptions:
    runtime_safety: float
    memory_safety: float
    min_runtime_min: int
    runtime_step_min: int
    min_mem_mb: int
    mem_step_mb: int
    gpu_name: str
    gpu_peak_flops: float
    gpu_utilisation: Mapping[str, float]


@dataclass(frozen=True)
class Entry:
    """One modelled rule, or one group of its jobs (``jobs``: glob patterns on the wildcards)."""

    name: str
    rule: str
    jobs: tuple[str, ...]
    unit: str
    source: str
    sample_units: float
    paper_units: float | None
    paper_jobs: float
    reason: str
    exponent: float
    exponent_source: str
    device: str
    sample_params: float | None
    paper_params: float | None
    tokens_per_unit_sample: float
    tokens_per_unit_paper: float
    flops_per_token: float
    work: str | None
    memory_data: str
    add_mb: float
    sample_bytes_per_param: float
    paper_bytes_per_param: float
    note: str


def _get(config: Mapping, dotted: str, where: str):
    node = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise PlanSpecError(f"{where}: key `{dotted}` is not in that configuration")
        node = node[part]
    return node


class _Counts:
    """Evaluates count specifications against the two configs and the file's named counts.

    A count is a number, ``{sample: key}`` / ``{paper: key}`` (a dotted key of that config; a
    list counts its items), ``{count: name}``, ``{product: [...]}``, ``{sum: [...]}``, or
    ``{value: N, source: text}``; each named count must cite its source or be a config key.
    """

    def __init__(self, path: str, configs: Mapping[str, Mapping], named: Mapping):
        self.path, self.configs, self.named = path, configs, named
        self._done: dict[str, float] = {}

    def __call__(self, spec, where: str, _stack: tuple[str, ...] = ()) -> float:
        if isinstance(spec, bool) or spec is None:
            raise PlanSpecError(f"{self.path}: {where}: a count must be a number or a mapping")
        if isinstance(spec, int | float):
            return float(spec)
        if not isinstance(spec, Mapping) or not spec:
            raise PlanSpecError(f"{self.path}: {where}: a count must be a number or a mapping")
        keys = set(spec) - {"source"}
        if len(keys) != 1:
            raise PlanSpecError(
                f"{self.path}: {where}: one of value, sample, paper, count, product, sum, quotient "
                f"expected, got {sorted(spec)}"
            )
        (kind,) = keys
        arg = spec[kind]
        if kind == "value":
            if "source" not in spec:
                raise PlanSpecError(f"{self.path}: {where}: a value needs its `source`")
            return self(arg, where, _stack)
        if kind in ("sample", "paper"):
            value = _get(self.configs[kind], str(arg), f"{self.path}: {where}: {kind} config")
            if isinstance(value, list):
                return float(len(value))
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise PlanSpecError(
                    f"{self.path}: {where}: {kind} config key `{arg}` is {value!r}, not a number"
                    " or a list"
                )
            return float(value)
        if kind == "count":
            if arg not in self.named:
                raise PlanSpecError(f"{self.path}: {where}: no count named `{arg}` in `counts`")
            if arg in _stack:
                raise PlanSpecError(f"{self.path}: {where}: count `{arg}` refers to itself")
            if arg not in self._done:
                self._done[arg] = self(self.named[arg], f"counts.{arg}", (*_stack, arg))
            return self._done[arg]
        if kind in ("product", "sum", "quotient"):
            if not isinstance(arg, list) or not arg or (kind == "quotient" and len(arg) != 2):
                raise PlanSpecError(
                    f"{self.path}: {where}: `{kind}` needs a non-empty list"
                    + (" of two counts" if kind == "quotient" else "")
                )
            parts = [self(a, f"{where}.{kind}[{i}]", _stack) for i, a in enumerate(arg)]
            if kind == "quotient":
                if parts[1] == 0:
                    raise PlanSpecError(f"{self.path}: {where}: `quotient` divides by zero")
                return parts[0] / parts[1]
            return math.prod(parts) if kind == "product" else sum(parts)
        raise PlanSpecError(
            f"{self.path}: {where}: unknown count kind `{kind}` (value, sample, paper, count,"
            " product, sum, quotient)"
        )


def _number(raw, path: str, where: str, *, positive: bool = True) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise PlanSpecError(f"{path}: {where}: expected a number, got {raw!r}")
    if positive and raw <= 0:
        raise PlanSpecError(f"{path}: {where}: expected a positive number, got {raw!r}")
    return float(raw)


def _assumptions(raw, path: str) -> Assumptions:
    if not isinstance(raw, Mapping):
        raise PlanSpecError(f"{path}: `assumptions` must be a mapping")
    where = "assumptions"
    try:
        gpu = raw["gpu"]
        util = gpu["utilisation"]
        if not isinstance(util, Mapping) or not util:
            raise PlanSpecError(f"{path}: {where}.gpu.utilisation: a mapping work -> fraction")
        for key in ("peak_flops_source", "utilisation_source"):
            if not str(gpu.get(key, "")).strip():
                raise PlanSpecError(f"{path}: {where}.gpu.{key}: state where the figure is from")
        utilisation = {}
        for k, v in util.items():
            utilisation[str(k)] = _number(v, path, f"{where}.gpu.utilisation.{k}")
            if utilisation[str(k)] > 1:
                raise PlanSpecError(f"{path}: {where}.gpu.utilisation.{k}: a fraction <= 1")
        return Assumptions(
            runtime_safety=_number(raw["runtime_safety"], path, f"{where}.runtime_safety"),
            memory_safety=_number(raw["memory_safety"], path, f"{where}.memory_safety"),
            min_runtime_min=int(_number(raw["min_runtime_min"], path, f"{where}.min_runtime_min")),
            runtime_step_min=int(
                _number(raw["runtime_step_min"], path, f"{where}.runtime_step_min")
            ),
            min_mem_mb=int(_number(raw["min_mem_mb"], path, f"{where}.min_mem_mb")),
            mem_step_mb=int(_number(raw["mem_step_mb"], path, f"{where}.mem_step_mb")),
            gpu_name=str(gpu["name"]),
            gpu_peak_flops=_number(gpu["peak_flops"], path, f"{where}.gpu.peak_flops"),
            gpu_utilisation=utilisation,
        )
    except KeyError as exc:
        raise PlanSpecError(f"{path}: {where}: missing key {exc}") from None


def _entry(name: str, raw, path: str, counts: _Counts, assumptions: Assumptions) -> Entry:
    where = f"entry `{name}`"
    if not isinstance(raw, Mapping):
        raise PlanSpecError(f"{path}: {where}: must be a mapping")
    unknown = sorted(set(raw) - ENTRY_KEYS)
    if unknown:
        raise PlanSpecError(f"{path}: {where}: unknown key(s) {unknown}")
    for key in ("rule", "unit", "source", "sample"):
        if key not in raw or raw[key] in (None, ""):
            raise PlanSpecError(f"{path}: {where}: `{key}` is required")
    if "paper" not in raw:
        raise PlanSpecError(f"{path}: {where}: `paper` is required (null with a `reason`)")
    jobs = raw.get("jobs", "*")
    jobs = (jobs,) if isinstance(jobs, str) else tuple(jobs)
    sample_units = counts(raw["sample"], f"{where}.sample")
    if sample_units <= 0:
        raise PlanSpecError(f"{path}: {where}.sample: {sample_units:g} units; must be > 0")
    paper_units, paper_jobs, reason = None, 0.0, str(raw.get("reason") or "")
    if raw["paper"] is None:
        if not reason:
            raise PlanSpecError(f"{path}: {where}: `paper: null` needs a `reason`")
    else:
        paper_units = counts(raw["paper"], f"{where}.paper")
        if "paper_jobs" not in raw:
            raise PlanSpecError(f"{path}: {where}: `paper_jobs` is required")
        paper_jobs = counts(raw["paper_jobs"], f"{where}.paper_jobs")
        if paper_units < 0 or paper_jobs < 0 or (paper_jobs == 0) != (paper_units == 0):
            raise PlanSpecError(
                f"{path}: {where}: paper units {paper_units:g} and jobs {paper_jobs:g} must be"
                " both zero (not run at paper scale) or both positive"
            )
    exponent, exponent_source = raw.get("exponent", 1.0), "linear"
    if isinstance(exponent, Mapping):
        if set(exponent) != {"x10_over_x1", "source"}:
            raise PlanSpecError(f"{path}: {where}.exponent: give x10_over_x1 and source")
        ratio = _number(exponent["x10_over_x1"], path, f"{where}.exponent.x10_over_x1")
        exponent_source = f"x10/x1 = {ratio:g} ({exponent['source']})"
        exponent = math.log10(ratio)
    else:
        exponent = _number(exponent, path, f"{where}.exponent")
        if exponent != 1.0:
            exponent_source = "stated"
    device = raw.get("device", "cpu")
    if device not in DEVICES:
        raise PlanSpecError(f"{path}: {where}.device: one of {DEVICES}, got {device!r}")
    model = raw.get("model") or {}
    if not isinstance(model, Mapping):
        raise PlanSpecError(f"{path}: {where}.model: must be a mapping")
    unknown = sorted(set(model) - MODEL_KEYS)
    if unknown:
        raise PlanSpecError(f"{path}: {where}.model: unknown key(s) {unknown}")
    sample_params = paper_params = None
    tokens_s = tokens_p = 1.0
    flops, work = 2.0, None
    if model:
        if "paper_params" not in model or "work" not in model:
            raise PlanSpecError(f"{path}: {where}.model: `paper_params` and `work` are required")
        paper_params = counts(model["paper_params"], f"{where}.model.paper_params")
        if model.get("sample_params") is not None:
            sample_params = counts(model["sample_params"], f"{where}.model.sample_params")
        tokens = model.get("tokens_per_unit", 1)
        if isinstance(tokens, Mapping) and set(tokens) == {"sample", "paper"}:
            tokens_s = counts(tokens["sample"], f"{where}.model.tokens_per_unit.sample")
            tokens_p = counts(tokens["paper"], f"{where}.model.tokens_per_unit.paper")
        else:
            tokens_s = tokens_p = counts(tokens, f"{where}.model.tokens_per_unit")
        flops = _number(
            model.get("flops_per_token", 2), path, f"{where}.model.flops_per_token", positive=False
        )
        work = str(model["work"])
        if work not in assumptions.gpu_utilisation:
            raise PlanSpecError(
                f"{path}: {where}.model.work: `{work}` has no utilisation in"
                f" assumptions.gpu.utilisation ({sorted(assumptions.gpu_utilisation)})"
            )
    if device == "gpu" and not (model and flops > 0):
        raise PlanSpecError(f"{path}: {where}: device gpu needs a `model` with its FLOP count")
    if device == "cpu" and model and sample_params is None:
        raise PlanSpecError(
            f"{path}: {where}.model: a CPU rule's model needs `sample_params` (the CPU time"
            " grows with the parameter ratio)"
        )
    memory = raw.get("memory") or {}
    if not isinstance(memory, Mapping) or set(memory) - MEMORY_KEYS:
        raise PlanSpecError(f"{path}: {where}.memory: keys {sorted(MEMORY_KEYS)} only")
    data = memory.get("data", "fixed")
    if data not in MEMORY_DATA:
        raise PlanSpecError(f"{path}: {where}.memory.data: one of {MEMORY_DATA}, got {data!r}")
    bytes_s = _number(memory.get("sample_bytes_per_param", 4), path, f"{where}.memory")
    bytes_p = _number(memory.get("paper_bytes_per_param", 4), path, f"{where}.memory")
    add_mb = counts(memory["add_mb"], f"{where}.memory.add_mb") if "add_mb" in memory else 0.0
    return Entry(
        name=name,
        rule=str(raw["rule"]),
        jobs=jobs,
        unit=str(raw["unit"]),
        source=str(raw["source"]).strip(),
        sample_units=sample_units,
        paper_units=paper_units,
        paper_jobs=paper_jobs,
        reason=reason,
        exponent=float(exponent),
        exponent_source=exponent_source,
        device=device,
        sample_params=sample_params,
        paper_params=paper_params,
        tokens_per_unit_sample=tokens_s,
        tokens_per_unit_paper=tokens_p,
        flops_per_token=flops,
        work=work,
        memory_data=data,
        add_mb=add_mb,
        sample_bytes_per_param=bytes_s,
        paper_bytes_per_param=bytes_p,
        note=str(raw.get("note") or "").strip(),
    )


def load_mapping(
    path: str | Path, sample_config: Mapping, paper_config: Mapping
) -> tuple[Assumptions, list[Entry]]:
    """The mapping file's assumptions and entries, every count evaluated; a malformed file
    stops with :class:`PlanSpecError` naming the file and the entry."""
    path = str(path)
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PlanSpecError(f"{path}: cannot read ({exc})") from exc
    if not isinstance(raw, Mapping) or not isinstance(raw.get("rules"), Mapping):
        raise PlanSpecError(f"{path}: expected a mapping with `assumptions`, `counts`, `rules`")
    assumptions = _assumptions(raw.get("assumptions"), path)
    named = raw.get("counts") or {}
    if not isinstance(named, Mapping):
        raise PlanSpecError(f"{path}: `counts` must be a mapping")
    counts = _Counts(path, {"sample": sample_config, "paper": paper_config}, named)
    for name in named:
        counts({"count": name}, f"counts.{name}")
    entries = [_entry(str(n), e, path, counts, assumptions) for n, e in raw["rules"].items()]
    return assumptions, entries


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


# --- outputs ---------------------------------------------------------------------------------


def _fmt(value, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return ""
    if isinstance(value, str):
        return value
    value = float(value)
    if digits == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def _hours(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    value = float(value)
    if value >= 10:
        return f"{value:,.0f}"
    return f"{value:.2g}" if value >= 0.01 else ("<0.01" if value > 0 else "0")


def markdown(plan: pd.DataFrame, assumptions: Assumptions) -> str:
    """The per-stage totals, then the modelled rows; unmodelled rules are counted, not listed."""
    totals = plan[plan["entry"] == "TOTAL"]
    lines = [
        "| stage | sample CPU s | est. CPU-hours | est. GPU-hours | GPU-hours if moved |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in totals.itertuples(index=False):
        lines.append(
            f"| {r.stage} | {_fmt(r.sample_cpu_s)} | {_hours(r.est_cpu_hours)}"
            f" | {_hours(r.est_gpu_hours)} | {_hours(r.gpu_hours_if_moved)} |"
        )
    cpu_all = pd.to_numeric(totals["est_cpu_hours"], errors="coerce").sum()
    gpu_all = pd.to_numeric(totals["est_gpu_hours"], errors="coerce").sum()
    moved = pd.to_numeric(totals["gpu_hours_if_moved"], errors="coerce").sum()
    lines.append(
        f"| **all** | {_fmt(totals['sample_cpu_s'].sum())} | **{_hours(cpu_all)}**"
        f" | **{_hours(gpu_all)}** | {_hours(moved)} |"
    )
    lines += [
        "",
        f"GPU-hours on one {assumptions.gpu_name}; CPU-hours are core-hours. GPU-hours in"
        " parentheses: the rule runs on CPU as the code stands, the figure is its FLOP count"
        " on the GPU. (cap): the estimate exceeds the partitions' longest runtime.",
        "",
        "| stage | entry | unit | sample units | paper units | scaling | sample CPU s"
        " | device | CPU-h | GPU-h | runtime min | mem_mb | gpu |",
        "|---|---|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    modelled = plan[(plan["entry"] != "TOTAL") & (plan["jobs_pattern"] != "(other jobs)")]
    for r in modelled.itertuples(index=False):
        flag = " (cap)" if isinstance(r.exceeds_partition, str) and r.exceeds_partition else ""
        scaling = r.scaling if not str(r.scaling).startswith("^") else str(r.scaling)[:6]
        gpu_h = _hours(r.est_gpu_hours)
        if not gpu_h and _hours(r.gpu_hours_if_moved):
            gpu_h = f"({_hours(r.gpu_hours_if_moved)})"
        lines.append(
            f"| {r.stage} | {r.entry} | {r.unit} | {_fmt(r.sample_units)}"
            f" | {_fmt(r.paper_units)} | {scaling} | {_fmt(r.sample_cpu_s, 1)}"
            f" | {r.paper_device} | {_hours(r.est_cpu_hours)} | {gpu_h}"
            f" | {_fmt(r.runtime_min)}{flag} | {_fmt(r.mem_mb)} | {_fmt(r.gpu)} |"
        )
    other = plan[plan["jobs_pattern"] == "(other jobs)"]
    lines += [
        "",
        f"Not modelled (as measured, {len(other)} rules or job groups,"
        f" {_fmt(other['sample_cpu_s'].sum(), 1)} CPU s in the sample):"
        f" {', '.join(sorted(set(other['rule'])))}.",
    ]
    return "\n".join(lines) + "\n"


def slurm_resources(plan: pd.DataFrame) -> tuple[dict[str, dict], list[str]]:
    """Per rule: the largest runtime and mem_mb of its modelled job groups, and gpu where all
    agree. A rule with a job group not estimated keeps its declared resources."""
    rows = plan[(plan["entry"] != "TOTAL") & (plan["jobs_pattern"] != "(other jobs)")]
    rules, notes = {}, []
    for rule, part in rows.groupby("rule", sort=True):
        if part["runtime_min"].isna().any():
            skipped = ", ".join(part.loc[part["runtime_min"].isna(), "entry"])
            notes.append(f"{rule}: not set (no estimate for {skipped})")
            continue
        res = {
            "runtime": int(part["runtime_min"].max()),
            "mem_mb": int(part["mem_mb"].max()),
        }
        gpus = set(part["gpu"].astype(int))
        if len(gpus) == 1:
            if gpus != {0}:
                res["gpu"] = gpus.pop()
        else:
            notes.append(f"{rule}: gpu left to the rule (its job groups differ: {sorted(gpus)})")
        if part["exceeds_partition"].astype(str).str.startswith("needs").any():
            notes.append(f"{rule}: runtime capped at the partition limit (see the plan)")
        rules[rule] = res
    return rules, notes


def slurm_block(plan: pd.DataFrame, command: str, records: str) -> str:
    rules, notes = slurm_resources(plan)
    lines = [
        BLOCK_START,
        f"# Written by: {command}",
        f"# From the records: {records}; estimates, not measurements (docs/paper_scale.md).",
    ]
    lines += [f"# {n}" for n in notes]
    body = yaml.safe_dump({"set-resources": rules}, sort_keys=True, default_flow_style=False)
    lines += body.rstrip("\n").splitlines()
    lines.append(BLOCK_END)
    return "\n".join(lines) + "\n"


def rewrite_profile(text: str, block: str) -> str:
    """``text`` with its generated block replaced by ``block`` (appended where none yet);
    everything outside the markers is kept byte for byte."""
    start, end = text.find(BLOCK_START), text.find(BLOCK_END)
    if (start < 0) != (end < 0) or (start >= 0 and end < start):
        raise PlanSpecError("the profile's generated block has a marker missing or out of order")
    if start < 0:
        sep = "" if text.endswith("\n") or not text else "\n"
        return text + sep + block
    tail = text[end + len(BLOCK_END) :]
    tail = tail[1:] if tail.startswith("\n") else tail
    return text[:start] + block + tail


def update_doc(text: str, table: str) -> str:
    """``text`` with the table between its paper-scale markers replaced by ``table``."""
    start, end = text.find(DOC_START), text.find(DOC_END)
    if start < 0 or end < start:
        raise PlanSpecError(f"the document has no {DOC_START} ... {DOC_END} section")
    return text[: start + len(DOC_START)] + "\n" + table + text[end:]


def doc_table(text: str) -> str:
    """The table between a document's paper-scale markers."""
    start, end = text.find(DOC_START), text.find(DOC_END)
    if start < 0 or end < start:
        raise PlanSpecError(f"the document has no {DOC_START} ... {DOC_END} section")
    return text[start + len(DOC_START) + 1 : end]


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


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="?", help="folder of Snakemake benchmark TSVs")
    ap.add_argument("--from-rules-csv", help="a compact record (--rules-csv) instead of TSVs")
    ap.add_argument("--mapping", default="config/paper_scale.yaml")
    ap.add_argument("--sample-config", default="config/config.yaml")
    ap.add_argument("--paper-config", default="config/paper.yaml")
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
    load = lambda p: yaml.safe_load(Path(p).read_text(encoding="utf-8"))  # noqa: E731
    try:
        assumptions, entries = load_mapping(
            args.mapping, load(args.sample_config), load(args.paper_config)
        )
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
