"""Every stage's cost per unit of work at x1 and x10, and the reference ratios, in one command.

Runs the per-stage benchmark scripts of this folder as subprocesses, each writing its figures
with ``--json`` into a temporary folder (``--keep DIR`` keeps them and their logs), and prints
two markdown tables:

1. per stage, the cost per unit of work at x1 and x10 (CPU seconds of the benchmark's process
   where the benchmark measures them, else wall seconds: the ``clock`` column says which), the
   ratio x10/x1 of the per-unit costs and its verdict: PASS when the cost per unit at x10 is
   within ``LINEAR_LIMIT`` (1.5x) of x1 (linear, or better, in the units of work);
2. the reference ratios: our BM25 against plain bm25s (time ratio <= 1.1), the syntax stage's
   parse against plain spaCy ``nlp.pipe`` (throughput ratio >= 0.9), our dense encoder against
   plain sentence-transformers (throughput ratio >= 0.95), at x1 and x10.

Units (a stage may have two rows):

==========  ===========================================  =======  ============================
stage       unit                                         clock    benchmark
==========  ===========================================  =======  ============================
data        records ingested                             CPU      bench_ingest.py
syntax      users fitted (encoder, EM profiles, models)  CPU      bench_syntax.py --skip-parse
syntax      sentences parsed (the stage's parse)         CPU      bench_syntax.py --skip-fit
errors      sentences corrected (cold cache)             CPU      bench_errors.py
queries     LM candidates generated (sampling time)      wall     bench_queries.py
validation  judge items (cold answer cache)              wall     bench_validation.py
retrieval   documents indexed (re-index, model loaded)   wall     bench_retrieval.py
retrieval   query-document pairs ranked (first stage)    wall     bench_retrieval.py
ttp         SFT steps                                    wall     bench_ttp.py
ttp         queries encoded (generate + embed)           wall     bench_ttp.py
==========  ===========================================  =======  ============================

Retrieval costs are summed over the retrievers measured. queries, validation and ttp read a
finished workflow run (``--results``, default ``results``); without its inputs the stage is
printed as skipped. ``--quick`` runs smaller sizes (a smoke test, not figures to quote).

    python benchmarks/all_stages.py [--stages data syntax ...] [--quick] [--results results]
        [--json out.json] [--keep DIR] [--check]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

STAGES = ("data", "syntax", "errors", "queries", "validation", "retrieval", "ttp")
LINEAR_LIMIT = 1.5  # x10/x1 cost per unit at most this: linear in the units of work
MIN_SCALE = 5.0  # x10 must have run at least this many times x1's units to be judged
QUERIES_DOMAIN = "Musical_Instruments"

# (row label, unit of work, clock) per stage, in table order.
ROWS: dict[str, list[tuple[str, str, str]]] = {
    "data": [("data (ingest)", "records ingested", "cpu")],
    "syntax": [
        ("syntax (fit)", "users fitted", "cpu"),
        ("syntax (parse)", "sentences parsed", "cpu"),
    ],
    "errors": [("errors", "sentences corrected", "cpu")],
    "queries": [("queries", "LM candidates generated", "wall")],
    "validation": [("validation", "judge items", "wall")],
    "retrieval": [
        ("retrieval (index)", "documents indexed", "wall"),
        ("retrieval (rank)", "query-document pairs ranked", "wall"),
    ],
    "ttp": [
        ("ttp (SFT)", "SFT steps", "wall"),
        ("ttp (queries)", "queries encoded", "wall"),
    ],
}

# x1 sizes per stage (x10 is ten times each), full and --quick.
SIZES: dict[str, tuple[dict, dict]] = {
    "data": ({"repeats": 3, "source": "auto"}, {"repeats": 3, "source": "replicate"}),
    "syntax": (
        {"users": 150, "sentences": 3000, "repeats": 3},
        {"users": 15, "sentences": 300, "repeats": 1},
    ),
    "errors": ({"users": 60, "products": 120}, {"users": 15, "products": 30}),
    "queries": ({"products": 3}, {"products": 1}),
    "validation": ({"items": 4}, {"items": 2}),
    "retrieval": (
        {"products": 300, "queries": 200, "repeats": 9, "dense_repeats": 5, "retrievers": []},
        {
            "products": 100,
            "queries": 50,
            "repeats": 3,
            "dense_repeats": 3,
            "retrievers": ["bm25", "minilm"],
        },
    ),
    "ttp": ({"steps": 2, "queries": 8}, {"steps": 1, "queries": 2}),
}

# (name, measure, stage, comparison, target) of the reference ratios.
REFERENCES = [
    (
        "BM25: ours / plain bm25s",
        "time ratio, index + rank (wall, median)",
        "retrieval",
        "<=",
        1.1,
    ),
    (
        "parse: stage / plain spaCy nlp.pipe",
        "throughput ratio (CPU, best of repeats)",
        "syntax",
        ">=",
        0.9,
    ),
    (
        "dense encoding: ours / plain sentence-transformers",
        "throughput ratio (CPU, median)",
        "retrieval",
        ">=",
        0.95,
    ),
]


# --- pure functions: verdicts, rows, references, tables ------------------------------------


def per_unit(seconds: float | None, units: float | None) -> float | None:
    """Seconds per unit of work; None without a positive count or a time."""
    if seconds is None or not units or units <= 0:
        return None
    return seconds / units


def verdict(ratio: float | None, limit: float = LINEAR_LIMIT) -> str:
    """PASS when the x10/x1 per-unit cost ratio is at most ``limit``; n/a without a ratio."""
    if ratio is None:
        return "n/a"
    return "PASS" if ratio <= limit else "FAIL"


def scale_row(
    stage: str,
    label: str,
    unit: str,
    clock: str,
    x1: tuple[float, float],
    x10: tuple[float, float],
) -> dict:
    """One summary row from (units, seconds) at x1 and at x10."""
    (u1, s1), (u10, s10) = x1, x10
    c1, c10 = per_unit(s1, u1), per_unit(s10, u10)
    ratio = c10 / c1 if c1 and c10 is not None else None
    row = {
        "stage": stage,
        "row": label,
        "unit": unit,
        "clock": clock,
        "x1_units": u1,
        "x10_units": u10,
        "x1_seconds": s1,
        "x10_seconds": s10,
        "x1_s_per_unit": c1,
        "x10_s_per_unit": c10,
        "ratio": ratio,
        "verdict": verdict(ratio),
    }
    if u1 and u10 is not None and u10 < MIN_SCALE * u1:
        row["verdict"] = f"n/a: x10 ran only {u10 / u1:.1f}x the units of x1"
    return row


def status_rows(stage: str, status: str) -> list[dict]:
    """The rows of a stage that was not measured (``skipped: ...`` or ``error: ...``)."""
    return [
        {"stage": stage, "row": label, "unit": unit, "clock": clock, "verdict": status}
        for label, unit, clock in ROWS[stage]
    ]


def _sum_fit_cpu(fit: Mapping) -> float:
    # The totals, not the per-model entries ("attribution:<model>") they already include.
    return sum(v for k, v in fit["cpu_s"].items() if ":" not in k)


def measures_data(benches: Mapping[str, dict]) -> list[tuple]:
    rows = {r["scale"]: r for r in benches["x1x10"]["rows"]}
    return [tuple((rows[s]["records"], rows[s]["cpu_s"]) for s in (1, 10))]


def measures_syntax(benches: Mapping[str, dict]) -> list[tuple]:
    fit = benches["fit"]["fit"]
    parse = [benches[k]["parse"] for k in ("parse_x1", "parse_x10")]
    return [
        tuple((f["users"], _sum_fit_cpu(f)) for f in fit[:2]),
        tuple((p["sentences"], p["sentences"] / p["stage_sent_per_cpu_s"]) for p in parse),
    ]


def measures_errors(benches: Mapping[str, dict]) -> list[tuple]:
    return [
        tuple(
            (benches[k]["cold"]["sentences"], benches[k]["cold"]["cpu_seconds"])
            for k in ("x1", "x10")
        )
    ]


def measures_queries(benches: Mapping[str, dict]) -> list[tuple]:
    lm = [benches[k]["lm"] for k in ("x1", "x10")]
    return [tuple((x["candidates"], x["sampling_seconds"]) for x in lm)]


def measures_validation(benches: Mapping[str, dict]) -> list[tuple]:
    return [tuple((benches[k]["items"], benches[k]["cold_wall_s"]) for k in ("x1", "x10"))]


def measures_retrieval(benches: Mapping[str, dict]) -> list[tuple]:
    rows = benches["x1x10"]["retrievers"]
    index, rank = [], []
    for scale in (1, 10):
        at = [r for r in rows if r["scale"] == scale]
        if not at:
            raise KeyError(f"no retriever measured at x{scale}")
        index.append((at[0]["documents"], sum(r.get("index_warm_s", r["index_s"]) for r in at)))
        first = [r for r in at if r.get("first_stage", True)]
        pairs = first[0]["queries"] * first[0]["documents"] if first else 0
        rank.append((pairs, sum(r["rank_s"] for r in first)))
    return [tuple(index), tuple(rank)]


def measures_ttp(benches: Mapping[str, dict]) -> list[tuple]:
    sft = [benches[k]["sft"] for k in ("x1", "x10")]
    enc = [benches[k]["query_encoding"] for k in ("x1", "x10")]
    return [
        tuple((s["steps"], s["steps"] / s["steps_per_s"]) for s in sft),
        tuple((q["queries"], q["queries"] / q["generate_and_embed_queries_per_s"]) for q in enc),
    ]


MEASURES = {
    "data": measures_data,
    "syntax": measures_syntax,
    "errors": measures_errors,
    "queries": measures_queries,
    "validation": measures_validation,
    "retrieval": measures_retrieval,
    "ttp": measures_ttp,
}


def stage_rows(stage: str, benches: Mapping[str, dict]) -> list[dict]:
    """The summary rows of one measured stage from its benchmarks' JSON (run key -> dict); an
    ``error: ...`` row when a figure is missing from them."""
    try:
        measured = MEASURES[stage](benches)
    except (KeyError, IndexError, TypeError, ZeroDivisionError) as exc:
        return status_rows(stage, f"error: figures missing from the benchmark's JSON ({exc!r})")
    return [
        scale_row(stage, label, unit, clock, x1, x10)
        for (label, unit, clock), (x1, x10) in zip(ROWS[stage], measured, strict=True)
    ]


def bm25_ratios(retrieval: Mapping) -> dict[int, float]:
    """Per scale: our BM25's (index + rank) seconds over plain bm25s'."""
    total = {(r["variant"], r["scale"]): r["total_s"] for r in retrieval.get("bm25", [])}
    return {
        scale: total[("ours (bm25 wrapper)", scale)] / plain
        for (variant, scale), plain in total.items()
        if variant == "plain bm25s" and ("ours (bm25 wrapper)", scale) in total and plain > 0
    }


def parse_ratios(syntax: Mapping[str, dict]) -> dict[int, float]:
    """Per scale: the stage's parse throughput over plain ``nlp.pipe`` (CPU, else wall)."""
    out = {}
    for scale, key in ((1, "parse_x1"), (10, "parse_x10")):
        parse = (syntax.get(key) or {}).get("parse") or {}
        value = parse.get("ratio_cpu", parse.get("ratio_wall"))
        if value is not None:
            out[scale] = value
    return out


def dense_ratios(retrieval: Mapping) -> dict[int, float]:
    """Per scale: our dense encoder's throughput over plain sentence-transformers'."""
    return {r["scale"]: r["throughput_ratio"] for r in retrieval.get("dense", [])}


def meets(value: float, comparison: str, target: float) -> bool:
    return value <= target if comparison == "<=" else value >= target


def reference_row(
    name: str, measure: str, values: Mapping[int, float], comparison: str, target: float
) -> dict:
    """A reference ratio at x1 and x10: PASS when every measured scale meets the target."""
    row = {
        "reference": name,
        "measure": measure,
        "x1": values.get(1),
        "x10": values.get(10),
        "target": f"{comparison} {target}",
    }
    if not values:
        row["verdict"] = "not measured"
    elif all(meets(v, comparison, target) for v in values.values()):
        row["verdict"] = "PASS"
    else:
        row["verdict"] = "FAIL"
    return row


def reference_rows(benches: Mapping[str, Mapping[str, dict]], statuses: Mapping[str, str]) -> list:
    """The three reference rows from the stages' benchmark JSON (stage -> run key -> dict);
    ``statuses`` names why a stage has no figures (skipped, error, not selected)."""
    extract = {
        "BM25: ours / plain bm25s": lambda: bm25_ratios(benches["retrieval"]["x1x10"]),
        "parse: stage / plain spaCy nlp.pipe": lambda: parse_ratios(benches["syntax"]),
        "dense encoding: ours / plain sentence-transformers": lambda: dense_ratios(
            benches["retrieval"]["x1x10"]
        ),
    }
    out = []
    for name, measure, stage, comparison, target in REFERENCES:
        try:
            values = extract[name]()
        except (KeyError, TypeError):
            values = {}
        row = reference_row(name, measure, values, comparison, target)
        if not values:
            row["verdict"] = f"not measured ({statuses.get(stage, 'no figures')})"
        out.append(row)
    return out


def any_failed(rows: list[dict], references: list[dict]) -> bool:
    """True when a stage row or a reference FAILs, or a stage could not be measured (error)."""
    return any(r["verdict"] == "FAIL" or r["verdict"].startswith("error") for r in rows) or any(
        r["verdict"] == "FAIL" for r in references
    )


def _num(value, fmt: str = ".3g") -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return format(value, fmt)


def format_scale_table(rows: list[dict]) -> str:
    lines = [
        "| stage | unit | clock | x1 units | x10 units | x1 s/unit | x10 s/unit | "
        "x10/x1 per unit | verdict |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['row']} | {r['unit']} | {r['clock']} | {_num(r.get('x1_units'))} | "
            f"{_num(r.get('x10_units'))} | {_num(r.get('x1_s_per_unit'))} | "
            f"{_num(r.get('x10_s_per_unit'))} | {_num(r.get('ratio'), '.2f')} | "
            f"{r['verdict']} |"
        )
    return "\n".join(lines)


def format_reference_table(refs: list[dict]) -> str:
    lines = [
        "| reference | measure | x1 | x10 | target | verdict |",
        "|---|---|---:|---:|---|---|",
    ]
    for r in refs:
        lines.append(
            f"| {r['reference']} | {r['measure']} | {_num(r['x1'], '.3f')} | "
            f"{_num(r['x10'], '.3f')} | {r['target']} | {r['verdict']} |"
        )
    return "\n".join(lines)


# --- plans: which benchmark runs measure a stage -------------------------------------------


def missing_inputs(stage: str, results: Path) -> str | None:
    """Why ``stage`` cannot be measured from the run in ``results`` (None: it can)."""
    need = {
        "queries": [
            results / "data" / QUERIES_DOMAIN / "products.parquet",
            results / "data" / QUERIES_DOMAIN / "product_reviewers.parquet",
        ],
        "validation": [results / "validation" / "items.jsonl"],
    }.get(stage, [])
    hint = "(run the workflow first, or pass --results)"
    for path in need:
        if not path.is_file():
            return f"skipped: no {path} {hint}"
    if stage == "ttp" and not any((results / "ttp").glob("*/sft.jsonl")):
        return f"skipped: no {results / 'ttp'}/*/sft.jsonl {hint}"
    return None


def plan(stage: str, quick: bool, results: Path) -> dict[str, list[str]]:
    """Run key -> [script, arguments...] (``--json`` is added when run)."""
    s = SIZES[stage][1 if quick else 0]
    res = str(results)
    if stage == "data":
        return {
            "x1x10": [
                "bench_ingest.py",
                "--scales", "1", "10",
                "--repeats", str(s["repeats"]),
                "--source", s["source"],
            ]
        }  # fmt: skip
    if stage == "syntax":
        parse = ["bench_syntax.py", "--skip-fit", "--repeats", str(s["repeats"]), "--sentences"]
        return {
            "fit": ["bench_syntax.py", "--skip-parse", "--users", str(s["users"])],
            "parse_x1": [*parse, str(s["sentences"])],
            "parse_x10": [*parse, str(10 * s["sentences"])],
        }
    if stage == "errors":
        return {
            key: [
                "bench_errors.py",
                "--n-users", str(k * s["users"]),
                "--n-products", str(k * s["products"]),
            ]
            for key, k in (("x1", 1), ("x10", 10))
        }  # fmt: skip
    if stage == "queries":
        # The run's adapter when there is one; else each benchmark run trains its own.
        adapter = results / "queries" / "lm"
        trained = (adapter / "adapter_model.safetensors").is_file()
        extra = ["--adapter", str(adapter)] if trained else []
        return {
            key: [
                "bench_queries.py",
                "--domain", QUERIES_DOMAIN,
                "--results", res,
                "--products", str(k * s["products"]),
                *extra,
            ]
            for key, k in (("x1", 1), ("x10", 10))
        }  # fmt: skip
    if stage == "validation":
        return {
            key: [
                "bench_validation.py",
                "--items-file", str(results / "validation" / "items.jsonl"),
                "--model-cache", str(results / "model_cache"),
                "--items", str(k * s["items"]),
            ]
            for key, k in (("x1", 1), ("x10", 10))
        }  # fmt: skip
    if stage == "retrieval":
        retrievers = ["--retrievers", *s["retrievers"]] if s["retrievers"] else []
        return {
            "x1x10": [
                "bench_retrieval.py",
                "--scales", "1", "10",
                "--base-products", str(s["products"]),
                "--queries", str(s["queries"]),
                "--repeats", str(s["repeats"]),
                "--dense-repeats", str(s["dense_repeats"]),
                "--warm-index",
                "--no-pyserini",
                *retrievers,
            ]
        }  # fmt: skip
    if stage == "ttp":
        return {
            key: [
                "bench_ttp.py",
                "--results", res,
                "--steps", str(k * s["steps"]),
                "--queries", str(k * s["queries"]),
            ]
            for key, k in (("x1", 1), ("x10", 10))
        }  # fmt: skip
    raise ValueError(f"unknown stage {stage!r}")


# --- running ---------------------------------------------------------------------------------


def run_bench(argv: list[str], out: Path, key: str) -> tuple[dict | None, str | None]:
    """Run one benchmark script with ``--json``; (its figures, None) or (None, why not)."""
    json_path, log_path = out / f"{key}.json", out / f"{key}.log"
    cmd = [sys.executable, str(HERE / argv[0]), *argv[1:], "--json", str(json_path)]
    print(f"  {' '.join(argv)}  (log: {log_path})", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.run(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, check=False)
    print(f"    {time.perf_counter() - t0:.0f} s, exit {proc.returncode}", file=sys.stderr)
    if proc.returncode != 0 or not json_path.is_file():
        tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        # The log may be in a temporary folder (no --keep): its end goes to stderr.
        print("\n".join(f"    | {line}" for line in tail[-20:]), file=sys.stderr)
        last = tail[-1][:160] if tail else "no output"
        return None, f"error: {argv[0]} exited {proc.returncode} ({last})"
    return json.loads(json_path.read_text(encoding="utf-8")), None


def measure(stages: list[str], quick: bool, results: Path, out: Path) -> dict:
    rows, benches, statuses, commands = [], {}, {}, {}
    for stage in STAGES:
        if stage not in stages:
            statuses[stage] = "stage not selected"
            continue
        print(f"[{stage}]", file=sys.stderr, flush=True)
        reason = missing_inputs(stage, results)
        if reason is not None:
            print(f"  {reason}", file=sys.stderr)
            rows += status_rows(stage, reason)
            statuses[stage] = reason
            continue
        (out / stage).mkdir(parents=True, exist_ok=True)
        commands[stage] = plan(stage, quick, results)
        benches[stage] = {}
        for key, argv in commands[stage].items():
            data, error = run_bench(argv, out / stage, key)
            if error is not None:
                statuses[stage] = error
                break
            benches[stage][key] = data
        if stage in statuses:
            rows += status_rows(stage, statuses[stage])
        else:
            rows += stage_rows(stage, benches[stage])
    return {
        "rows": rows,
        "references": reference_rows(benches, statuses),
        "benches": benches,
        "commands": commands,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    ap.add_argument("--quick", action="store_true", help="smaller x1 sizes (a smoke test)")
    ap.add_argument(
        "--results",
        type=Path,
        default=Path("results"),
        help="a finished workflow run (queries, validation, ttp read it; default: results)",
    )
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--keep", type=Path, help="keep the benchmarks' JSON and logs in this folder")
    ap.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if a verdict FAILs (or a stage could not be measured)",
    )
    args = ap.parse_args(argv)
    results = args.results.resolve()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_all_") as tmp:
        out = args.keep.resolve() if args.keep else Path(tmp)
        figures = measure(list(args.stages), args.quick, results, out)
    elapsed = time.perf_counter() - t0
    mode = "--quick sizes, a smoke test" if args.quick else "full sizes"
    print(f"\n## Cost per unit of work at x1 and x10 ({mode}; {elapsed:.0f} s)\n")
    print(format_scale_table(figures["rows"]))
    print(
        f"\nclock: cpu = CPU seconds of the benchmark's process, wall = wall seconds. "
        f"PASS: x10/x1 <= {LINEAR_LIMIT}."
    )
    print("\n## Reference ratios\n")
    print(format_reference_table(figures["references"]))
    failed = any_failed(figures["rows"], figures["references"])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "quick": args.quick,
            "results": str(results),
            "stages": list(args.stages),
            "linear_limit": LINEAR_LIMIT,
            "min_scale": MIN_SCALE,
            "seconds": elapsed,
            "failed": failed,
            **figures,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 1 if failed and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
