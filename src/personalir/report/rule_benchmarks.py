"""Every rule's cost from Snakemake's own measurements: a per-rule and per-stage table and a
figure.

Each rule of the workflow has a ``benchmark:`` directive; Snakemake writes one TSV per job,
``<results>/logs/benchmarks/<stage>/<rule>[.<wildcards>].tsv`` (columns ``s`` wall seconds,
``max_rss`` peak resident MB, ``cpu_time`` CPU seconds, ...). A job that did not run in the
last workflow run keeps the file of the run that made it; a job that never ran has none, so
the table describes the jobs that have run in this results tree, and says how many files it
read. Timings are host facts: they live here and in the docs, never in a DVC-tracked output.

    python -m personalir.report.rule_benchmarks results/logs/benchmarks \\
        --csv results/logs/rule_benchmarks.csv --md results/logs/rule_benchmarks.md \\
        --figure results/logs/rule_benchmarks.pdf

``make rule-benchmarks`` runs it on the embedded default's results.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

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
            {"stage": stage, "rule": rule, "job": job}
            | {COLUMNS[c]: float(values[c]) for c in COLUMNS}
        )
    return pd.DataFrame(rows, columns=["stage", "rule", "job", *COLUMNS.values()])


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


def markdown(rules: pd.DataFrame, stages: pd.DataFrame, files: int, top: int = 25) -> str:
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
    return "\n".join(lines) + "\n"


def figure(rules: pd.DataFrame, out: str | Path, top: int = 25) -> None:
    """Wall seconds and peak RSS of the most expensive rules, coloured by stage."""
    from personalir.common.plotting import palette, pyplot, save

    plt = pyplot()
    shown = rules.head(top).iloc[::-1]
    stages = sorted(rules["stage"].unique()) if len(rules) else []
    colours = dict(zip(stages, palette(len(stages)), strict=True))
    height = 1.2 + 0.16 * max(1, len(shown))
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(7.0, height), sharey=True)
    y = range(len(shown))
    c = [colours[s] for s in shown["stage"]]
    ax_t.barh(y, shown["wall_s"], color=c)
    ax_t.set_yticks(list(y), shown["rule"])
    ax_t.set_xlabel("job wall seconds (sum over the rule's jobs)")
    ax_m.barh(y, shown["max_rss_mb"], color=c)
    ax_m.set_xlabel("peak RSS (MB, largest job)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[s]) for s in stages]
    top_space = 0.35 / height
    if handles:
        fig.legend(handles, stages, loc="upper center", ncol=min(len(stages), 6), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - top_space))
    save(fig, out)


def main(argv: Sequence[str] | None = None) -> int:
    from personalir.common.io import write_text

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="<results>/logs/benchmarks")
    ap.add_argument("--csv", help="per-rule table (CSV)")
    ap.add_argument("--md", help="per-stage and per-rule tables (Markdown)")
    ap.add_argument("--figure", help="wall time and peak memory per rule (PDF or PNG)")
    ap.add_argument("--top", type=int, default=25, help="rules in the Markdown and the figure")
    args = ap.parse_args(argv)
    if not Path(args.root).is_dir():
        ap.error(f"{args.root}: no such folder (run the workflow first)")
    jobs = read_jobs(args.root)
    rules = per_rule(jobs)
    stages = per_stage(rules)
    text = markdown(rules, stages, len(jobs), args.top)
    if args.csv:
        write_text(args.csv, rules.to_csv(index=False, float_format="%.3f", lineterminator="\n"))
    if args.md:
        write_text(args.md, text)
    if args.figure:
        figure(rules, args.figure, args.top)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
