"""Cold wall time of the sample data stage (generator -> ingest -> products -> sentences).

Runs the real workflow in a fresh copy of the repository, so nothing is cached, and prints
the wall time of each repetition, the median, and the no-op rerun time.

    python benchmarks/bench_data_stage.py [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.workflow import copy_workflow, snakemake  # noqa: E402

DOMAINS = ["Baby_Products", "Musical_Instruments", "Video_Games"]
TARGETS = [
    f"results/data/{d}/{name}"
    for d in DOMAINS
    for name in ("products.parquet", "user_sentences.parquet", "product_reviewers.parquet")
] + ["results/report/dataset_statistics.csv"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    cold, noop = [], []
    for i in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            work = copy_workflow(Path(tmp) / "wf")
            t0 = time.perf_counter()
            snakemake(work, "--cores", str(args.cores), *TARGETS)
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            snakemake(work, "--cores", str(args.cores), *TARGETS)
            noop.append(time.perf_counter() - t0)
        print(f"run {i + 1}: cold {cold[-1]:.1f} s, no-op rerun {noop[-1]:.1f} s", flush=True)
    out = {
        "cores": args.cores,
        "cold_s": cold,
        "cold_median_s": statistics.median(cold),
        "noop_median_s": statistics.median(noop),
    }
    print(
        f"\nsample data stage, {args.cores} cores: cold median {out['cold_median_s']:.1f} s "
        f"over {len(cold)} runs; no-op rerun median {out['noop_median_s']:.1f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
