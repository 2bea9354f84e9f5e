"""The paper-scale plan's mapping file (``config/paper_scale.yaml``): its assumptions and
its entries, one per modelled rule or group of a rule's jobs, every count evaluated against
the sample and paper configs. A malformed file stops with :class:`PlanSpecError`, whose
message names the file and the entry. :mod:`personalir.report.paper_scale` computes the plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

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
