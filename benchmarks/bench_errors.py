"""Correction throughput (sentences/s) cold and from cache, and what each backend detects.

On one domain of the generated sample world (or any ``user_sentences.parquet`` given with
``--sentences``), runs the configured backend chain (default ``symspell`` + ``quire``) twice
against a fresh cache folder: *cold* (everything computed) and *cached* (new backend objects,
same cache: the expensive backends read their outputs back). Prints and optionally writes:
sentences, seconds, CPU seconds (all threads of this process: on a shared machine the wall
time mostly measures the neighbours) and sentences/s per run and per backend; the tagger's own
rate on the sentences it computed; the share of sentences its pre-filter lets through.

``--detection`` (generated world only) also runs the chains ``quire``, ``symspell`` and
``symspell quire`` and reports, per planted mechanism, the share of planted errors each chain
changed (detected) and changed back to the planted word (fixed): the measurement behind the
spelling backend (the packaged tagger has no spelling tags).

``--prefilter-recall N`` tags N sentences (seeded sample) with and without the pre-filter and
reports the share of the tagger's edits the pre-filter keeps.

    python benchmarks/bench_errors.py --json results/bench/errors.json --detection
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from personalir.common.config import validate_config
from personalir.common.io import write_json
from personalir.errors.gec import QuireBackend, build_backends, correct_corpus, quire_prefilter


def _world(tmp: Path, domain: str, seed: int, n_users: int, n_products: int) -> dict:
    from personalir.common.io import write_parquet
    from personalir.data.ingest import ingest_reviews
    from personalir.data.sample_world import generate_domain
    from personalir.data.sentences import SentenceRules, build_user_sentences

    raw = tmp / "raw"
    generate_domain(raw, domain, seed=seed, n_users=n_users, n_products=n_products)
    ingest_reviews(raw / f"{domain}.jsonl", tmp / "reviews.parquet", policy="strict")
    out = build_user_sentences(pq.read_table(tmp / "reviews.parquet"), SentenceRules())
    write_parquet(tmp / "user_sentences.parquet", out["sentences"])
    return {
        "sentences": tmp / "user_sentences.parquet",
        "reviews": tmp / "reviews.parquet",
        "truth": raw / "planted_truth.json",
    }


def _run(gec: dict, corpus, cache: Path, threads: int) -> dict:
    t0 = time.perf_counter()
    backends = build_backends(gec, threads=threads)
    load = time.perf_counter() - t0
    t1, c1 = time.perf_counter(), time.process_time()
    out, changed, runs = correct_corpus(
        backends, corpus, cache_root=cache, chunk_size=gec["chunk_size"]
    )
    secs = time.perf_counter() - t1
    cpu = time.process_time() - c1
    return {
        "sentences": len(corpus),
        "load_seconds": round(load, 3),
        "seconds": round(secs, 3),
        "sentences_per_second": round(len(corpus) / secs, 2),
        "cpu_seconds": round(cpu, 3),
        "sentences_per_cpu_second": round(len(corpus) / cpu, 2) if cpu > 0 else None,
        "changed": sum(1 for c in changed if c),
        "backends": [r.as_dict() for r in runs],
        "corrected": out,
    }


def _detection(gec: dict, sentences: pd.DataFrame, paths: dict, cache: Path, threads: int) -> dict:
    from personalir.errors.recovery import detection_recall, planted_errors_in_scope

    truth = json.loads(Path(paths["truth"]).read_text())
    reviews = pq.read_table(paths["reviews"]).to_pandas()
    planted, counts = planted_errors_in_scope(truth, reviews, sentences)
    corpus = list(zip(sentences["user_id"], sentences["text"], strict=True))
    out = {"planted": counts}
    for chain in (["quire"], ["symspell"], ["symspell", "quire"]):
        run = _run({**gec, "backends": chain}, corpus, cache, threads)
        corr = sentences.assign(corrected=run["corrected"])
        out["+".join(chain)] = detection_recall(planted, corr)
    return out


def _prefilter_recall(sentences: list[str], n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    pick = sorted(rng.choice(len(sentences), size=min(n, len(sentences)), replace=False))
    sample = [sentences[i] for i in pick]
    tagger = QuireBackend({"batch_size": 64, "prefilter": "none", "gates": "relaxed_confusables"})
    t0 = time.perf_counter()
    spans = tagger.predict_batch(sample)
    secs = time.perf_counter() - t0
    passed = [quire_prefilter(s) for s in sample]
    edits = sum(len(s) for s in spans)
    kept = sum(len(s) for s, p in zip(spans, passed, strict=True) if p)
    return {
        "sentences": len(sample),
        "passed_share": round(sum(passed) / len(sample), 4),
        "tagger_edits": edits,
        "edits_kept": kept,
        "edit_recall": round(kept / edits, 4) if edits else None,
        "tagger_sentences_per_second": round(len(sample) / secs, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", help="a user_sentences.parquet (default: generate a world)")
    ap.add_argument("--domain", default="Musical_Instruments")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--n-users", type=int, default=60)
    ap.add_argument("--n-products", type=int, default=120)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--backends", nargs="+", default=None)
    ap.add_argument("--detection", action="store_true")
    ap.add_argument("--prefilter-recall", type=int, default=0, metavar="N")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    gec = validate_config({})["errors"]["gec"]
    if args.backends:
        gec["backends"] = args.backends
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        paths = (
            {"sentences": Path(args.sentences)}
            if args.sentences
            else _world(tmp, args.domain, args.seed, args.n_users, args.n_products)
        )
        sentences = pq.read_table(paths["sentences"]).to_pandas()
        corpus = list(zip(sentences["user_id"], sentences["text"], strict=True))
        cache = tmp / "cache"
        cold = _run(gec, corpus, cache, args.threads)
        cached = _run(gec, corpus, cache, args.threads)
        if cached["corrected"] != cold["corrected"]:
            print("FAIL: cached corrections differ from cold ones", file=sys.stderr)
            return 1
        result = {
            "machine": {
                "python": platform.python_version(),
                "cpu": platform.machine(),
                "threads": args.threads,
            },
            "source": str(args.sentences or f"generated {args.domain} ({args.n_users} users)"),
            "backends": gec["backends"],
            "cold": {k: v for k, v in cold.items() if k != "corrected"},
            "cached": {k: v for k, v in cached.items() if k != "corrected"},
        }
        if args.detection:
            if args.sentences:
                print("--detection needs the generated world (planted truth)", file=sys.stderr)
                return 2
            result["detection"] = _detection(gec, sentences, paths, tmp / "cache-det", args.threads)
        if args.prefilter_recall:
            result["prefilter"] = _prefilter_recall(
                sentences["text"].tolist(), args.prefilter_recall, args.seed
            )
    for name in ("cold", "cached"):
        r = result[name]
        print(
            f"{name:6s}: {r['sentences']} sentences in {r['seconds']:.1f} s = "
            f"{r['sentences_per_second']:.1f} sentences/s; {r['cpu_seconds']:.1f} CPU s = "
            f"{r['sentences_per_cpu_second']} per CPU s (load {r['load_seconds']:.1f} s)"
        )
        for b in r["backends"]:
            # BackendRun.as_dict names the cache-use counts *_this_run (they are volatile).
            print(
                f"   {b['name']:9s} computed {b['computed_this_run']:5d}  cache hits "
                f"{b['cache_hits_this_run']:5d}  skipped {b['skipped']:5d}  {b['seconds']:7.2f} s"
                f"  {b['cpu_seconds']:6.2f} CPU s  ({b['computed_per_second']} computed/s)"
            )
    if "detection" in result:
        print("detected / fixed share of planted errors, per chain:")
        for chain, rec in result["detection"].items():
            if chain == "planted":
                continue
            print(
                f"   {chain:15s} "
                + "  ".join(
                    f"{m} {v['detected_share']:.2f}/{v['fixed_share']:.2f}" for m, v in rec.items()
                )
            )
    if "prefilter" in result:
        print("prefilter:", result["prefilter"])
    if args.json:
        write_json(args.json, result, keep_timings=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
