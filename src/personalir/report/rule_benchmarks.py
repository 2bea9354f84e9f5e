"""Every rule's cost from Snakemake's own measurements: a per-rule and per-stage table and a
figure.

Each rule of the workflow has a ``benchmark:`` directive; Snakemake writes one TSV per job,
``<results>/logs/benchmarks/<stage>/<rule>[.<wildcards>].tsv`` (columns ``s`` wall seconds,
``max_rss`` peak resident MB, ``cpu_time`` CPU seconds, ...). A job that did not run in the
last workflow run keeps the file of the run that made it; a job that never ran has none, so
the table describes the jobs that have run in this results tree, and says how many files it
read. Timings are host facts: they live here and in the docs, never in a DVC-tracked output.

With the job plan that ``snakemake --forceall --dry-run`` prints (each job's rule, inputs,
outputs and benchmark file), the report adds the critical path: the chain of dependent jobs
whose wall seconds add up to the most. No schedule on any number of cores finishes the
workflow sooner, so it is the floor under a cold run's elapsed time. It also adds the floor the
cores set (every job's wall seconds times the cores it holds, over the cores a run has) and the
length of a list schedule of the measured jobs on those cores (``--cores``): when the elapsed
time of a run is close to both, no job order would finish it sooner, only less work would.

    snakemake --profile profiles/local --forceall --dry-run > results/logs/plan.txt
    python -m personalir.report.rule_benchmarks results/logs/benchmarks \\
        --plan results/logs/plan.txt --csv results/logs/rule_benchmarks.csv \\
        --critical-csv results/logs/critical_path.csv \\
        --md results/logs/rule_benchmarks.md --figure results/logs/rule_benchmarks.pdf

``make rule-benchmarks`` runs it on the embedded default's results.
"""

from __future__ import annotations

import argparse
import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from personalir.common.io import write_text
from personalir.common.plotting import palette, pyplot, save

#: Snakemake's benchmark columns read here: wall seconds, peak RSS (MB), CPU seconds.
COLUMNS = {"s": "wall_s", "max_rss": "max_rss_mb", "cpu_time": "cpu_s"}


class BenchmarkFileError(ValueError):
    """A benchmark file is not Snakemake's TSV (the message names the file)."""


def read_jobs(root: str | Path) -> pd.DataFrame:
    """One row per job: stage, rule, job (the wildcard part of the name), wall_s, max_rss_mb,
    cpu_s. A file without the expected columns stops with its path."""
    root = Path(root)
    rows = []
    for path in sorted(root.rglob("*.tsv")):
        rel = path.relative_to(root)
        stage = rel.parts[0] if len(rel.parts) > 1 else ""
        name = rel.relative_to(stage).as_posix()[: -len(".tsv")] if stage else rel.stem
        rule, _, job = name.partition(".")
        try:
            frame = pd.read_csv(path, sep="\t", na_values=["-", "NA"])
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise BenchmarkFileError(f"{path}: not a Snakemake benchmark TSV ({exc})") from exc
        missing = [c for c in COLUMNS if c not in frame.columns]
        if missing or frame.empty:
            raise BenchmarkFileError(
                f"{path}: not a Snakemake benchmark TSV (missing columns {missing} or no row)"
            )
        # A benchmark with repeats has one row per repeat: the job's cost is their median.
        values = frame[list(COLUMNS)].median(numeric_only=True)
        rows.append(
            {"stage": stage, "rule": rule, "job": job, "file": rel.as_posix()}
            | {COLUMNS[c]: float(values[c]) for c in COLUMNS}
        )
    return pd.DataFrame(rows, columns=["stage", "rule", "job", "file", *COLUMNS.values()])


class PlanError(ValueError):
    """A job plan is not the listing Snakemake's dry run prints (the message names the file)."""


@dataclass(frozen=True)
class PlannedJob:
    """One job of a Snakemake dry run: its rule, files and benchmark file (None: none)."""

    rule: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    benchmark: str | None
    threads: int = 1


_JOB_HEAD = re.compile(r"^(?:localrule|rule|localcheckpoint|checkpoint) ([A-Za-z_][\w]*):$")
_JOB_FIELD = re.compile(r"^\s+(input|output|benchmark): (.*)$")
_JOB_THREADS = re.compile(r"^\s+threads: (\d+)$")


def _files(value: str) -> tuple[str, ...]:
    # Snakemake prints a job's files joined by ", "; flags follow a file in parentheses.
    return tuple(re.sub(r" \([^)]*\)$", "", f.strip()) for f in value.split(", ") if f.strip())


def parse_plan(text: str, source: str = "<plan>") -> list[PlannedJob]:
    """The jobs of a ``snakemake --dry-run`` listing. A listing without a job stops with
    ``source``; a job without outputs is kept (the ``all`` target)."""
    jobs: list[PlannedJob] = []
    current: dict | None = None

    def close() -> None:
        if current is not None:
            jobs.append(
                PlannedJob(
                    current["rule"],
                    current.get("input", ()),
                    current.get("output", ()),
                    (current.get("benchmark") or (None,))[0],
                    current.get("threads", 1),
                )
            )

    for line in text.splitlines():
        head = _JOB_HEAD.match(line)
        if head:
            close()
            current = {"rule": head.group(1)}
            continue
        field = _JOB_FIELD.match(line) if current is not None else None
        threads = _JOB_THREADS.match(line) if current is not None else None
        if field:
            current[field.group(1)] = _files(field.group(2))
        elif threads:
            current["threads"] = int(threads.group(1))
        elif current is not None and line and not line.startswith((" ", "\t")):
            close()
            current = None
    close()
    if not jobs:
        raise PlanError(f"{source}: no job listed (expected `snakemake --dry-run` output)")
    return jobs


def _job_costs(
    plan: Sequence[PlannedJob], jobs: pd.DataFrame, root: str | Path
) -> tuple[list[float | None], list[str], list[list[int]]]:
    """Each planned job's measured wall seconds (None: no benchmark file under ``root``), its
    wildcard label, and the planned jobs that write its inputs."""
    root_prefix = Path(root).as_posix().rstrip("/") + "/"
    wall = dict(zip(jobs["file"], jobs["wall_s"], strict=True)) if len(jobs) else {}
    writer: dict[str, int] = {}
    for i, job in enumerate(plan):
        for out in job.outputs:
            writer[out] = i
    cost, label = [], []
    for job in plan:
        key = job.benchmark[len(root_prefix) :] if job.benchmark else None
        if job.benchmark and not job.benchmark.startswith(root_prefix):
            key = None
        cost.append(wall.get(key) if key else None)
        name = Path(key).name[: -len(".tsv")] if key else job.rule
        label.append(name.partition(".")[2] if "." in name else "")
    deps = [
        sorted({writer[f] for f in job.inputs if f in writer} - {i}) for i, job in enumerate(plan)
    ]
    return cost, label, deps


def critical_path(
    plan: Sequence[PlannedJob], jobs: pd.DataFrame, root: str | Path
) -> tuple[pd.DataFrame, dict]:
    """The chain of dependent planned jobs with the largest sum of measured wall seconds.

    A job depends on the jobs that write its inputs. A job's cost is its benchmark file's wall
    seconds (``jobs`` as :func:`read_jobs` reads ``root``); a planned job without a file there
    costs 0 and is counted in ``unmeasured``. Returns the chain, first job first (rule, job,
    wall_s, cumulative_s), and totals.
    """
    cost, label, deps = _job_costs(plan, jobs, root)
    finish: list[float | None] = [None] * len(plan)
    via: list[int | None] = [None] * len(plan)
    depth = [0] * len(plan)
    for start in range(len(plan)):  # iterative depth-first: no recursion limit on long chains
        stack = [(start, False)]
        while stack:
            node, expanded = stack.pop()
            if finish[node] is not None:
                continue
            if not expanded:
                stack.append((node, True))
                stack.extend((d, False) for d in deps[node] if finish[d] is None)
                continue
            # ties: the longer chain, then the first listed (deterministic)
            best = max(deps[node], key=lambda d: (finish[d], depth[d], -d), default=None)
            via[node] = best
            finish[node] = (cost[node] or 0.0) + (finish[best] if best is not None else 0.0)
            depth[node] = 1 + (depth[best] if best is not None else 0)
    end = max(range(len(plan)), key=lambda i: (finish[i], depth[i], -i))
    chain = []
    node: int | None = end
    while node is not None:
        chain.append(node)
        node = via[node]
    chain.reverse()
    rows, total = [], 0.0
    for i in chain:
        total += cost[i] or 0.0
        rows.append(
            {
                "rule": plan[i].rule,
                "job": label[i],
                "wall_s": cost[i] if cost[i] is not None else float("nan"),
                "cumulative_s": total,
            }
        )
    measured = [c for c in cost if c is not None]
    summary = {
        "planned_jobs": len(plan),
        "measured_jobs": len(measured),
        "unmeasured": len(plan) - len(measured),
        "critical_path_s": float(finish[end]),
        "critical_path_jobs": len(chain),
        "job_wall_s": float(sum(measured)),
    }
    return pd.DataFrame(rows, columns=["rule", "job", "wall_s", "cumulative_s"]), summary


def schedule(plan: Sequence[PlannedJob], jobs: pd.DataFrame, root: str | Path, cores: int) -> dict:
    """How short a run of the measured jobs could be on ``cores`` cores.

    A job holds ``min(threads, cores)`` cores for its wall seconds (0 s without a benchmark
    file). ``core_floor_s`` is the core-seconds over the cores, ``floor_s`` the larger of that
    and the critical path: no schedule finishes sooner. ``list_schedule_s`` is the length of a
    greedy list schedule (whenever cores are free, start the ready jobs with the longest chain
    of work still after them, any that fit): a schedule a scheduler could actually follow.
    """
    if cores < 1:
        raise ValueError(f"cores must be at least 1, not {cores}")
    cost, _, deps = _job_costs(plan, jobs, root)
    wall = [c or 0.0 for c in cost]
    need = [min(max(job.threads, 1), cores) for job in plan]
    after: list[list[int]] = [[] for _ in plan]
    for i, ds in enumerate(deps):
        for d in ds:
            after[d].append(i)
    # longest chain of work from each job to the end (reverse topological order)
    order, waiting = [], [len(ds) for ds in deps]
    frontier = [i for i, w in enumerate(waiting) if w == 0]
    while frontier:
        i = frontier.pop()
        order.append(i)
        for k in after[i]:
            waiting[k] -= 1
            if waiting[k] == 0:
                frontier.append(k)
    if len(order) != len(plan):
        raise PlanError("the plan's jobs depend on each other in a cycle")
    tail = [0.0] * len(plan)
    for i in reversed(order):
        tail[i] = wall[i] + max((tail[k] for k in after[i]), default=0.0)
    waiting = [len(ds) for ds in deps]
    ready = [i for i, w in enumerate(waiting) if w == 0]
    running: list[tuple[float, int]] = []
    free, now = cores, 0.0
    while ready or running:
        ready.sort(key=lambda i: (-tail[i], i))
        for i in list(ready):
            if need[i] <= free:
                free -= need[i]
                ready.remove(i)
                heapq.heappush(running, (now + wall[i], i))
        now, i = heapq.heappop(running)
        free += need[i]
        for k in after[i]:
            waiting[k] -= 1
            if waiting[k] == 0:
                ready.append(k)
    core_s = sum(w * n for w, n in zip(wall, need, strict=True))
    critical = max(tail, default=0.0)
    return {
        "cores": cores,
        "core_seconds": core_s,
        "core_floor_s": core_s / cores,
        "critical_path_s": critical,
        "floor_s": max(core_s / cores, critical),
        "list_schedule_s": now,
    }


def per_rule(jobs: pd.DataFrame) -> pd.DataFrame:
    """Per rule: jobs, total/median/max wall seconds, total CPU seconds, peak RSS; most
    expensive first."""
    if jobs.empty:
        return pd.DataFrame(
            columns=["stage", "rule", "jobs", "wall_s", "median_wall_s", "max_wall_s", "cpu_s"]
            + ["max_rss_mb", "share_of_wall"]
        )
    g = jobs.groupby(["stage", "rule"], sort=True)
    out = pd.DataFrame(
        {
            "jobs": g.size(),
            "wall_s": g["wall_s"].sum(),
            "median_wall_s": g["wall_s"].median(),
            "max_wall_s": g["wall_s"].max(),
            "cpu_s": g["cpu_s"].sum(),
            "max_rss_mb": g["max_rss_mb"].max(),
        }
    ).reset_index()
    total = float(out["wall_s"].sum())
    out["share_of_wall"] = out["wall_s"] / total if total > 0 else 0.0
    return out.sort_values(["wall_s", "rule"], ascending=[False, True], kind="stable").reset_index(
        drop=True
    )


def per_stage(rules: pd.DataFrame) -> pd.DataFrame:
    """Per stage: rules, jobs, job wall seconds, CPU seconds, peak RSS; most expensive first."""
    if rules.empty:
        return pd.DataFrame(columns=["stage", "rules", "jobs", "wall_s", "cpu_s", "max_rss_mb"])
    g = rules.groupby("stage", sort=True)
    out = pd.DataFrame(
        {
            "rules": g.size(),
            "jobs": g["jobs"].sum(),
            "wall_s": g["wall_s"].sum(),
            "cpu_s": g["cpu_s"].sum(),
            "max_rss_mb": g["max_rss_mb"].max(),
        }
    ).reset_index()
    return out.sort_values(["wall_s", "stage"], ascending=[False, True], kind="stable").reset_index(
        drop=True
    )


def markdown(
    rules: pd.DataFrame,
    stages: pd.DataFrame,
    files: int,
    top: int = 25,
    critical: tuple[pd.DataFrame, dict] | None = None,
    cores: dict | None = None,
) -> str:
    lines = [
        "# Rule benchmarks",
        "",
        f"From {files} Snakemake benchmark files (one per job that has run in this results "
        "tree). Job wall seconds add up over jobs that ran side by side, so their sum is "
        "core-occupancy, not the run's elapsed time.",
        "",
        "## Per stage",
        "",
        "| Stage | Rules | Jobs | Job wall s | CPU s | Peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in stages.itertuples(index=False):
        lines.append(
            f"| {r.stage} | {r.rules} | {r.jobs} | {r.wall_s:.1f} | {r.cpu_s:.1f} | "
            f"{r.max_rss_mb:.0f} |"
        )
    lines += [
        "",
        f"## The {min(top, len(rules))} most expensive rules",
        "",
        "| Stage | Rule | Jobs | Wall s | Median s | Max s | CPU s | Peak RSS MB | Share |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rules.head(top).itertuples(index=False):
        lines.append(
            f"| {r.stage} | {r.rule} | {r.jobs} | {r.wall_s:.1f} | {r.median_wall_s:.1f} | "
            f"{r.max_wall_s:.1f} | {r.cpu_s:.1f} | {r.max_rss_mb:.0f} | {r.share_of_wall:.1%} |"
        )
    if critical is not None:
        lines += critical_markdown(*critical)
    if cores is not None:
        lines += schedule_markdown(cores)
    return "\n".join(lines) + "\n"


def schedule_markdown(s: dict) -> list[str]:
    return [
        "",
        f"## On {s['cores']} cores",
        "",
        f"The measured jobs hold {s['core_seconds']:.1f} core-seconds (each job's wall "
        f"seconds times the cores it holds): on {s['cores']} cores no schedule finishes "
        f"sooner than {s['core_floor_s']:.1f} s, nor sooner than the critical path "
        f"({s['critical_path_s']:.1f} s). A list schedule of the same jobs (longest chain of "
        f"work after a job first) takes {s['list_schedule_s']:.1f} s, "
        f"{s['list_schedule_s'] / s['floor_s'] - 1 if s['floor_s'] else 0.0:.1%} above that "
        "floor. A run whose elapsed time is near both is bound by its work, not by the order "
        "of its jobs.",
    ]


def critical_markdown(chain: pd.DataFrame, summary: dict) -> list[str]:
    s = summary
    lines = [
        "",
        "## Critical path",
        "",
        f"{s['critical_path_s']:.1f} s over {s['critical_path_jobs']} dependent jobs, of "
        f"{s['job_wall_s']:.1f} job wall seconds in all; {s['measured_jobs']} of "
        f"{s['planned_jobs']} planned jobs measured"
        + (
            f" ({s['unmeasured']} without a benchmark file, counted as 0 s)"
            if s["unmeasured"]
            else ""
        )
        + ". No schedule finishes the workflow sooner than its critical path, on any number "
        "of cores.",
        "",
        "| # | Rule | Job | Wall s | Cumulative s |",
        "|---:|---|---|---:|---:|",
    ]
    for i, r in enumerate(chain.itertuples(index=False), start=1):
        wall = "-" if pd.isna(r.wall_s) else f"{r.wall_s:.1f}"
        lines.append(f"| {i} | {r.rule} | {r.job} | {wall} | {r.cumulative_s:.1f} |")
    return lines


def figure(
    rules: pd.DataFrame, out: str | Path, top: int = 25, critical: set[str] | None = None
) -> None:
    """Wall seconds and peak RSS of the most expensive rules, coloured by stage; a rule with a
    job on the critical path is marked ``*``."""

    plt = pyplot()
    shown = rules.head(top).iloc[::-1]
    stages = sorted(rules["stage"].unique()) if len(rules) else []
    colours = dict(zip(stages, palette(len(stages)), strict=True))
    height = 1.2 + 0.16 * max(1, len(shown))
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(7.0, height), sharey=True)
    y = range(len(shown))
    c = [colours[s] for s in shown["stage"]]
    ax_t.barh(y, shown["wall_s"], color=c)
    critical = critical or set()
    ax_t.set_yticks(list(y), [f"{r} *" if r in critical else r for r in shown["rule"]])
    ax_t.set_xlabel("job wall seconds (sum over the rule's jobs)")
    if critical:
        ax_t.set_title("* on the critical path", fontsize="small", loc="left")
    ax_m.barh(y, shown["max_rss_mb"], color=c)
    ax_m.set_xlabel("peak RSS (MB, largest job)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[s]) for s in stages]
    top_space = 0.35 / height
    if handles:
        fig.legend(handles, stages, loc="upper center", ncol=min(len(stages), 6), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - top_space))
    save(fig, out)


def main(argv: Sequence[str] | None = None) -> int:

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="<results>/logs/benchmarks")
    ap.add_argument("--csv", help="per-rule table (CSV)")
    ap.add_argument("--md", help="per-stage and per-rule tables (Markdown)")
    ap.add_argument("--figure", help="wall time and peak memory per rule (PDF or PNG)")
    ap.add_argument("--top", type=int, default=25, help="rules in the Markdown and the figure")
    ap.add_argument(
        "--plan", help="`snakemake --forceall --dry-run` output: adds the critical path"
    )
    ap.add_argument("--critical-csv", help="the critical path's jobs (CSV; needs --plan)")
    ap.add_argument(
        "--cores", type=int, default=2, help="cores of the schedule bounds (with --plan)"
    )
    args = ap.parse_args(argv)
    if not Path(args.root).is_dir():
        ap.error(f"{args.root}: no such folder (run the workflow first)")
    if args.critical_csv and not args.plan:
        ap.error("--critical-csv needs --plan")
    if args.cores < 1:
        ap.error(f"--cores must be at least 1, not {args.cores}")
    jobs = read_jobs(args.root)
    rules = per_rule(jobs)
    stages = per_stage(rules)
    critical = None
    if args.plan:
        plan = parse_plan(Path(args.plan).read_text(encoding="utf-8"), args.plan)
        critical = critical_path(plan, jobs, args.root)
        bounds = schedule(plan, jobs, args.root, args.cores)
    text = markdown(rules, stages, len(jobs), args.top, critical, bounds if args.plan else None)
    if args.csv:
        write_text(args.csv, rules.to_csv(index=False, float_format="%.3f", lineterminator="\n"))
    if args.critical_csv:
        write_text(
            args.critical_csv,
            critical[0].to_csv(index=False, float_format="%.3f", lineterminator="\n"),
        )
    if args.md:
        write_text(args.md, text)
    if args.figure:
        figure(rules, args.figure, args.top, set(critical[0]["rule"]) if critical else None)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
