"""Throughput and scaling of review ingest on the synthetic sample world (x1, x10, x100).

Generates one domain at each scale into a temporary folder, times ``ingest_reviews`` (median of
``--repeats`` runs; the largest scale runs once only when that run takes more than
``LONE_RUN_S`` seconds: one sub-second run is too noisy to judge), and prints records, seconds,
records/s and the per-record cost relative to x1. The cost ratio uses CPU seconds of this
process, which the other jobs on a shared machine disturb less than wall time; both are
reported.

Records come from ``personalir.data.sample_world.generate_domain`` when that module is
importable. The generator's own cost grows faster than linearly (x100 takes minutes), so by
default scales above ``--max-generate-scale`` (10) are built by copying the largest generated
file with distinct user ids; ``--source generate`` generates every scale. Without the generator
(or with ``--source replicate``) a small set is copied. The output names the source per scale.

    python benchmarks/bench_ingest.py --json results/bench/ingest.json --check
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from personalir.common.io import write_json
from personalir.data.ingest import ingest_reviews

ACCEPT_RATIO = 1.5


def _fallback_records(n: int) -> list[dict]:
    """A small built-in review set (used when the sample world generator is unavailable)."""
    words = [
        "great",
        "sound",
        "cheap",
        "cable",
        "solid",
        "build",
        "would",
        "buy",
        "again",
        "the",
        "strap",
        "broke",
        "after",
        "a",
        "week",
        "works",
        "fine",
        "for",
        "the",
        "price",
        "my",
        "son",
        "loves",
        "it",
        "tuning",
        "holds",
        "well",
    ]
    out = []
    for i in range(n):
        text = " ".join(words[(i * 7 + k) % len(words)] for k in range(20 + i % 40))
        out.append(
            {
                "rating": float(1 + i % 5),
                "title": " ".join(words[i % 5 : i % 5 + 3]),
                "text": text.capitalize() + ".",
                "images": [],
                "asin": f"B0{i % 300:08d}",
                "parent_asin": f"B1{i % 300:08d}",
                "user_id": f"A{i // 25:027d}",
                "timestamp": 1_600_000_000_000 + i * 1000,
                "helpful_vote": i % 7,
                "verified_purchase": i % 3 != 0,
            }
        )
    return out


def _replicate(base: Path, dest: Path, copies: int) -> int:
    """Write ``copies`` copies of ``base`` with ``user_id`` made distinct per copy."""
    lines = base.read_bytes().splitlines()
    n = 0
    with open(dest, "wb") as out:
        for k in range(copies):
            for raw in lines:
                rec = json.loads(raw)
                rec["user_id"] = f"{rec['user_id']}R{k}"
                out.write(json.dumps(rec).encode() + b"\n")
                n += 1
    return n


def _generator():
    try:
        from personalir.data.sample_world import generate_domain
    except ImportError:
        return None
    return generate_domain


def _prepare(
    tmp: Path, domain: str, scales: list[int], seed: int, source: str, max_generate: int
) -> tuple[dict, dict]:
    """Write one review file per scale; return {scale: path} and {scale: how it was made}."""
    generate = _generator()
    if source == "generate" and generate is None:
        raise SystemExit("--source generate: personalir.data.sample_world is not importable")
    files: dict[int, Path] = {}
    origin: dict[int, str] = {}
    if source == "replicate" or generate is None:
        base = tmp / "base.jsonl"
        if generate is not None:
            generate(tmp / "base", domain, seed=seed, scale=1.0)
            (tmp / "base" / f"{domain}.jsonl").replace(base)
            what = f"sample_world x1 of {domain}"
        else:
            base.write_text("".join(json.dumps(r) + "\n" for r in _fallback_records(3_600)))
            what = "built-in records (sample_world not importable)"
        for scale in scales:
            files[scale] = tmp / f"x{scale}.jsonl"
            _replicate(base, files[scale], scale)
            origin[scale] = f"{what} replicated x{scale} with distinct user_id"
        return files, origin
    for scale in scales:
        if scale <= max_generate or source == "generate":
            t0 = time.perf_counter()
            generate(tmp / f"x{scale}", domain, seed=seed, scale=float(scale))
            print(f"generated x{scale} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
            files[scale] = tmp / f"x{scale}" / f"{domain}.jsonl"
            origin[scale] = f"sample_world.generate_domain({domain!r}, seed={seed}, scale={scale})"
            continue
        # The generator's cost grows faster than linearly; build big scales from a generated
        # one (the largest that divides this scale) copied with distinct user ids.
        g = max(k for k in files if scale % k == 0)
        files[scale] = tmp / f"x{scale}.jsonl"
        _replicate(files[g], files[scale], scale // g)
        origin[scale] = f"generated x{g} replicated {scale // g} times with distinct user_id"
    return files, origin


#: A largest scale whose first run takes longer than this is timed once (minutes at x100).
LONE_RUN_S = 5.0


def _time_ingest(src: Path, out_dir: Path, repeats: int, lone: bool = False) -> dict:
    """Median of ``repeats`` runs; with ``lone``, stop after the first if it took longer than
    :data:`LONE_RUN_S` seconds."""
    walls, cpus, report = [], [], None
    for r in range(repeats):
        if lone and walls and walls[0] > LONE_RUN_S:
            break
        w0, c0 = time.perf_counter(), time.process_time()
        report = ingest_reviews(src, out_dir / f"run{r}.parquet", policy="quarantine")
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return {
        "records": report["records_read"],
        "records_written": report["records_written"],
        "runs": len(walls),
        "wall_s": statistics.median(walls),
        "cpu_s": statistics.median(cpus),
        "input_bytes": src.stat().st_size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="Musical_Instruments")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs per scale (the largest: one if it is slow)"
    )
    parser.add_argument(
        "--source",
        choices=("auto", "generate", "replicate"),
        default="auto",
        help="auto: generate scales up to --max-generate-scale, replicate above; generate: "
        "generate every scale (x100 takes minutes); replicate: copy x1 s times",
    )
    parser.add_argument("--max-generate-scale", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--check",
        action="store_true",
        help=f"exit 1 unless per-record CPU cost at the largest scale is within {ACCEPT_RATIO}x "
        "of the smallest",
    )
    args = parser.parse_args(argv)
    scales = sorted(set(args.scales))

    with tempfile.TemporaryDirectory(prefix="bench_ingest_") as tmp_name:
        tmp = Path(tmp_name)
        files, origin = _prepare(
            tmp, args.domain, scales, args.seed, args.source, args.max_generate_scale
        )
        ingest_reviews(files[scales[0]], tmp / "warmup.parquet")  # imports, first-call costs
        rows = []
        for scale in scales:
            lone = scale == scales[-1] and len(scales) > 1
            out_dir = tmp / f"out_x{scale}"
            out_dir.mkdir()
            rows.append(
                {
                    "scale": scale,
                    "records_source": origin[scale],
                    **_time_ingest(files[scale], out_dir, args.repeats, lone),
                }
            )

    base = rows[0]
    for row in rows:
        row["records_per_s"] = row["records"] / row["wall_s"]
        row["records_per_cpu_s"] = row["records"] / row["cpu_s"]
        row["cost_ratio_cpu"] = (row["cpu_s"] / row["records"]) / (base["cpu_s"] / base["records"])
        row["cost_ratio_wall"] = (row["wall_s"] / row["records"]) / (
            base["wall_s"] / base["records"]
        )

    for r in rows:
        print(f"x{r['scale']} records: {r['records_source']}")
    header = (
        f"{'scale':>6} {'records':>9} {'runs':>4} {'wall_s':>8} {'cpu_s':>8} "
        f"{'rec/s':>9} {'rec/cpu_s':>10} {'cost/x1 cpu':>11} {'cost/x1 wall':>12}"
    )
    print(header)
    for r in rows:
        print(
            f"{'x' + str(r['scale']):>6} {r['records']:>9} {r['runs']:>4} {r['wall_s']:>8.3f} "
            f"{r['cpu_s']:>8.3f} {r['records_per_s']:>9.0f} {r['records_per_cpu_s']:>10.0f} "
            f"{r['cost_ratio_cpu']:>11.2f} {r['cost_ratio_wall']:>12.2f}"
        )
    worst = rows[-1]["cost_ratio_cpu"]
    ok = worst <= ACCEPT_RATIO
    verdict = "OK" if ok else "FAIL"
    print(
        f"{verdict}: per-record CPU cost at x{rows[-1]['scale']} is {worst:.2f}x that at "
        f"x{base['scale']} (limit {ACCEPT_RATIO}x)"
    )
    if args.json is not None:
        write_json(
            args.json,
            {
                "benchmark": "ingest_reviews",
                "python": platform.python_version(),
                "machine": platform.machine(),
                "accept_ratio": ACCEPT_RATIO,
                "passed": ok,
                "rows": rows,
            },
            keep_timings=True,
        )
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
