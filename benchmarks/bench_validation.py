"""Validation-stage cost: the LLM judge against the local server.

Starts the local OpenAI-compatible server on the packaged SmolLM2 (as the `validation_judge`
rule does), judges the items of a run (``results/validation/items.jsonl``, the first
``--items``) with an empty answer cache, then again with the filled cache, and prints:
server start-up seconds, judge calls/s, completion and prompt tokens/s, per-question median
and p95 seconds, the answered share, and the cache hit rate of the rerun (expected 100%).

    python benchmarks/bench_validation.py [--items-file results/validation/items.jsonl]
        [--items 24] [--threads 2] [--concurrency 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--items-file", default=str(ROOT / "results" / "validation" / "items.jsonl"))
    ap.add_argument("--items", type=int, default=24, help="judge the first N items")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--model", default="packaged:SmolLM2-135M-Instruct")
    ap.add_argument("--model-cache", default=str(ROOT / "results" / "model_cache"))
    ap.add_argument("--json", help="also write the figures as JSON")
    args = ap.parse_args()

    from personalir.common.config import validate_config
    from personalir.validation.judge import ResponseCache, judge_items
    from personalir.validation.launch import local_server
    from personalir.validation.stage import judge_settings, read_jsonl

    items = read_jsonl(args.items_file)[: args.items]
    cfg = validate_config({"validation": {"judge": {"max_concurrency": args.concurrency}}})
    judge_cfg = cfg["validation"]["judge"]
    out: dict = {"items": len(items), "threads": args.threads, "concurrency": args.concurrency}
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "judge.sqlite")
        start = time.perf_counter()
        with local_server(
            args.model,
            threads=args.threads,
            model_cache=args.model_cache,
            log_path=Path(tmp) / "server.log",
        ) as srv:
            out["startup_s"] = round(time.perf_counter() - start, 2)
            settings = judge_settings(
                judge_cfg, seed=cfg["seed"], base_url=srv.base_url, model=srv.model
            )
            timings = []
            original = cache.put

            def timed_put(key, record):
                timings.append(record["seconds"])
                original(key, record)

            cache.put = timed_put
            cold_start = time.perf_counter()
            judgements, cold = judge_items(items, settings, cache, progress=False)
            cold_wall = time.perf_counter() - cold_start
            cache.put = original
            warm_start = time.perf_counter()
            _, warm = judge_items(items, settings, cache, progress=False)
            warm_wall = time.perf_counter() - warm_start
        cache.close()
    timings.sort()
    out.update(
        questions=cold["questions"],
        # the judge's report names this run's counts *_this_run (they depend on the cache)
        calls=cold["calls_this_run"],
        answered_share=round(cold["answered"] / max(cold["questions"], 1), 3),
        calls_per_s=round(cold["calls_this_run"] / cold_wall, 2),
        completion_tokens_per_s=round(cold["completion_tokens_this_run"] / cold_wall, 1),
        prompt_tokens_per_s=round(cold["prompt_tokens_this_run"] / cold_wall, 1),
        call_median_s=round(statistics.median(timings), 3) if timings else None,
        call_p95_s=round(timings[int(0.95 * (len(timings) - 1))], 3) if timings else None,
        cold_wall_s=round(cold_wall, 2),
        rerun_wall_s=round(warm_wall, 3),
        rerun_calls=warm["calls_this_run"],
        rerun_cache_hit_rate=round(
            warm["cache_hits_this_run"]
            / max(warm["cache_hits_this_run"] + warm["calls_this_run"], 1),
            3,
        ),
        failed=cold["failed"],
    )
    for key, value in out.items():
        print(f"{key:>24}: {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
