"""What the paper-scale plan writes: its Markdown tables, a SLURM profile's resources block and
the table of docs/paper_scale.md.

:mod:`personalir.report.paper_scale` computes the plan (one row per rule or job group, plus
per-stage totals); this module only renders a computed plan, so the arithmetic and its
presentation can be read, and tested, apart. The profile's block and the document's table sit
between markers; everything outside them is kept byte for byte.
"""

from __future__ import annotations

import math

import pandas as pd
import yaml

from personalir.report.paper_scale_spec import Assumptions, PlanSpecError

BLOCK_START = "# >>> paper-scale plan: generated, do not edit by hand >>>"
BLOCK_END = "# <<< paper-scale plan <<<"
DOC_START, DOC_END = "<!-- paper-scale:start -->", "<!-- paper-scale:end -->"


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
        missing = part[part["runtime_min"].isna()]
        if not missing.empty:
            why = [
                f"{r.entry}: {'not run at paper scale' if r.paper_jobs == 0 else 'no estimate'}"
                for r in missing.itertuples(index=False)
            ]
            notes.append(f"{rule}: declared resources kept ({'; '.join(why)})")
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
