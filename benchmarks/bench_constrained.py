"""LM candidates with and without constrained decoding (``queries.lm.constrained``).

On one domain's data-stage tables, with the default configuration and a trained LoRA adapter
(``results/queries/lm``), runs the LM backend alone twice on the same products and seeds (free
sampling, then constrained) through :func:`personalir.queries.candidates.build_candidates`,
with every filter eager (lexical, contradiction, duplicate, semantic, fluency), and prints per
mode: candidates removed by each filter, valid candidates, sampling tokens/s and candidates/s.

    D=results/data/Musical_Instruments
    python benchmarks/bench_constrained.py --products-table $D/products.parquet \
        --reviewers $D/product_reviewers.parquet \
        --adapter results/queries/lm --lm-report results/queries/lm/lm.report.json \
        --lm-products 6 [--json out.json] [--examples 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--products-table", required=True, help="data stage's products.parquet")
    ap.add_argument("--reviewers", required=True, help="data stage's product_reviewers.parquet")
    ap.add_argument("--adapter", required=True, help="folder of the queries_lm LoRA adapter")
    ap.add_argument("--lm-report", required=True, help="queries_lm's lm.report.json")
    ap.add_argument("--domain", default="Musical_Instruments")
    ap.add_argument("--lm-products", type=int, default=6, help="products that get LM candidates")
    ap.add_argument("--config", default=str(ROOT / "config" / "config.yaml"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model-cache", default=None, help="dequantised GGUF cache folder")
    ap.add_argument("--examples", type=int, default=3, help="valid texts printed per mode")
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)

    from personalir.common.artifacts import read_reviewers
    from personalir.common.config import load_config
    from personalir.common.io import read_json
    from personalir.queries.candidates import build_candidates, read_products
    from personalir.queries.generator import (
        base_perplexity,
        fluency_settings,
        load_generator,
        set_threads,
    )

    set_threads(args.threads)
    cfg = load_config(args.config)
    products = read_products(args.products_table)
    reviewers = read_reviewers(args.reviewers)
    filters = {**cfg["queries"]["filters"], "eager": list(_ALL_FILTERS)}
    filters["fluency"] = {**filters["fluency"], "at_selection": False}
    base = {**cfg["queries"], "backends": ["lm"]}
    base["filters"] = fluency_settings(filters, read_json(args.lm_report))
    t0 = time.perf_counter()
    model = load_generator(base, args.adapter, args.model_cache)
    load_s = time.perf_counter() - t0
    scorer = base_perplexity(*model)
    out = {"domain": args.domain, "load_seconds": round(load_s, 1), "modes": {}}
    for mode in ("free", "constrained"):
        lm = {**base["lm"], "products": args.lm_products, "constrained": mode == "constrained"}
        params = {**base, "lm": lm}
        t1 = time.perf_counter()
        cands, report = build_candidates(
            args.domain,
            products,
            reviewers,
            params,
            cfg["seed"],
            n_core_terms=cfg["data"]["products"]["n_core_terms"],
            generator=model,
            perplexity=scorer,
        )
        stats = report["backends"]["lm"]
        counts = report["counts"].get("lm", {})
        valid = cands[cands["status"] == "valid"]["text"].tolist()
        out["modes"][mode] = {
            "counts": counts,
            "valid_rate": round(counts.get("valid", 0) / max(counts.get("generated", 1), 1), 3),
            "tokens_per_second": stats["tokens_per_second"],
            "candidates_per_second": stats["candidates_per_second"],
            "sampling_seconds": stats["sampling_seconds"],
            "generated_tokens": stats["generated_tokens"],
            "constraint": stats.get("constraint"),
            "wall_seconds": round(time.perf_counter() - t1, 1),
            "examples_valid": valid[: args.examples],
            "examples_removed": _removed_examples(cands, args.examples),
        }
        print(json.dumps({mode: out["modes"][mode]}, indent=1), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return out


_ALL_FILTERS = ("lexical", "contradiction", "duplicate", "semantic", "fluency")


def _removed_examples(cands, n: int) -> dict:
    out = {}
    for name in _ALL_FILTERS:
        rows = cands[cands["status"] == name]
        out[name] = [f"{t} [{r}]" for t, r in zip(rows["text"], rows["reason"], strict=True)][:n]
    return out


if __name__ == "__main__":
    main()
