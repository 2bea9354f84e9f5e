"""Query stage cost: candidate-generation throughput at the default settings, and the stage's
share of an end-to-end sample run.

1. ``throughput`` (default): on one domain's products (``<--results>/data/<Domain>``), with the
   default configuration: the language-model backend (SmolLM2 + the LoRA adapter, trained
   here with the default settings unless ``--adapter`` names one), the grammar backend and
   the fluency scorer; prints candidates/s, generated tokens/s, texts scored/s and load times.
2. ``--log FILE``: the per-stage wall time of a finished Snakemake run from its log (job start
   and finish times; with several cores, a stage's time is the union of its jobs' intervals)
   and the query stage's share of the whole run.
3. ``--reports DIR`` (a run's ``results/queries``): per domain, from its reports and the run
   facts (timings) its rules logged under ``results/logs``, the LM's valid candidates per
   second of sampling, its tokens per second, the steps' times and the LM's share of the
   syntactic queries.
4. ``--run-workflow``: runs the whole sample workflow cold in a fresh copy of the repository
   (as ``bench_data_stage.py`` does), then analyses its log as in 2. Slow: minutes.

    python benchmarks/bench_queries.py [--domain Musical_Instruments] [--products 3] [--json out]
    python benchmarks/bench_queries.py --log .snakemake/log/<run>.snakemake.log
    python benchmarks/bench_queries.py --reports results/queries
    python benchmarks/bench_queries.py --run-workflow --cores 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")


def throughput(
    domain: str,
    n_products: int,
    adapter: Path | None,
    threads: int,
    model_cache: Path | None,
    results: Path = ROOT / "results",
) -> dict:
    import pyarrow.parquet as pq
    import torch
    import yaml

    from personalir.common.config import validate_config
    from personalir.queries.backends import BACKENDS
    from personalir.queries.candidates import product_infos, read_products, sample_products
    from personalir.queries.generator import base_perplexity, load_generator, run_lm
    from personalir.queries.seeds import SEED_PATH
    from personalir.queries.terms import AttributeVocabulary, count_terms

    torch.set_num_threads(threads)
    cfg = validate_config(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))
    q = cfg["queries"]
    data = results / "data" / domain
    products = read_products(data / "products.parquet")
    reviewers = pq.read_table(data / "product_reviewers.parquet").to_pandas()
    chosen, _ = sample_products(products, reviewers, q, cfg["seed"], domain, 5)
    infos = product_infos(products[products["parent_asin"].isin(chosen)])
    ordered = [infos[a] for a in chosen]
    out: dict = {"domain": domain, "threads": threads, "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        if adapter is None:
            t0 = time.perf_counter()
            rep = run_lm(
                SEED_PATH,
                q,
                cfg["seed"],
                {
                    "adapter": Path(tmp) / "adapter_model.safetensors",
                    "adapter_config": Path(tmp) / "adapter_config.json",
                    "report": Path(tmp) / "lm.report.json",
                },
                threads=threads,
                model_cache=model_cache,
            )
            out["lora"] = {"wall_s": time.perf_counter() - t0, **rep["seconds"]}
            adapter = Path(tmp)
        t0 = time.perf_counter()
        model, tok = load_generator(q, adapter, model_cache)
        out["load_s"] = time.perf_counter() - t0
    lm_settings = {**q["lm"], "products": None}
    vocab = AttributeVocabulary.from_products(
        products["attribute_keys"].map(list), products["attribute_values"].map(list)
    )
    backend = BACKENDS.get("lm")(
        lm_settings, seed=cfg["seed"], domain=domain, model=model, tokenizer=tok,
        frequency=q["filters"]["lexical"]["frequency"], vocabulary=vocab,
        contradiction_keys=q["filters"]["contradiction"]["keys"],
    )  # fmt: skip
    lm_cands = backend.generate(ordered[:n_products] if n_products else ordered)
    out["lm"] = backend.stats
    t0 = time.perf_counter()
    grammar = BACKENDS.get("grammar")(q["grammar"], seed=cfg["seed"], domain=domain)
    g_cands = grammar.generate(ordered)
    g_s = time.perf_counter() - t0
    out["grammar"] = {"candidates": len(g_cands), "candidates_per_second": len(g_cands) / g_s}
    score = base_perplexity(model, tok)
    texts = [c["text"] for c in g_cands[:64]] + [c["text"] for c in lm_cands]
    t0 = time.perf_counter()
    score(texts)
    f_s = time.perf_counter() - t0
    out["fluency"] = {"texts": len(texts), "texts_per_second": len(texts) / f_s}
    out["lm_lexically_valid"] = sum(
        all(n == 1 for n in count_terms(c["text"], infos[c["product"]].core_terms).values())
        for c in lm_cands
    )
    return out


def run_reports(queries_dir: Path) -> dict:
    """Per domain, from a finished run's reports: the LM's valid candidates per second of
    sampling, tokens per second, the candidates and select steps' library time, and the share
    of the benchmark's syntactic queries the LM wrote."""
    from personalir.common.runfacts import facts_of, run_facts

    # Reports keep no timings; the rules' logs (<results>/logs) hold them as run facts.
    facts = run_facts(queries_dir.parent / "logs")
    out = {}
    for rep_path in sorted(queries_dir.glob("*/candidates.report.json")):
        d = rep_path.parent
        rep = json.loads(rep_path.read_text())
        rep_facts = facts_of(facts, rep_path.relative_to(queries_dir.parent.parent))
        lm = {
            **rep["backends"].get("lm", {}),
            **{k.split(".")[-1]: v for k, v in rep_facts.items() if k.startswith("backends.lm.")},
        }
        rep["seconds"] = rep_facts.get("seconds", {})
        valid = rep["counts"].get("lm", {}).get("valid", 0)
        sel = json.loads((d / "select.report.json").read_text())
        sel_path = (d / "select.report.json").relative_to(queries_dir.parent.parent)
        sel["seconds"] = facts_of(facts, sel_path).get("seconds", {})
        syn = [
            json.loads(line)
            for line in (d / "benchmark.jsonl").read_text().splitlines()
            if line.strip()
        ]
        syn = [r for r in syn if r["kind"] == "syntactic"]
        secs = lm.get("sampling_seconds") or 0.0
        out[d.name] = {
            "lm_candidates": lm.get("candidates", 0),
            "lm_valid": valid,
            "sampling_s": secs,
            "valid_per_s": valid / secs if secs else float("nan"),
            "tokens_per_s": lm.get("tokens_per_second") or float("nan"),
            "candidates_s": rep["seconds"].get("total", float("nan")),
            "select_s": sel["seconds"].get("total", float("nan")),
            "lm_share": sum(r["provenance"].get("backend") == "lm" for r in syn) / max(len(syn), 1),
        }
    return out


_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]$")
_JOB = re.compile(r"^\s*jobid: (\d+)$")
_RULE = re.compile(r"^(?:local)?rule (\w+):$")
_DONE = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")


def stage_times(log_text: str) -> dict:
    """Per-stage busy wall time (union of job intervals) and the run's wall time."""
    stamp = None
    pending_rule = None
    starts: dict[str, tuple[str, datetime]] = {}
    intervals: dict[str, list[tuple[datetime, datetime]]] = {}
    first = last = None
    for line in log_text.splitlines():
        m = _STAMP.match(line.strip())
        if m:
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            first = first or stamp
            last = stamp
            continue
        m = _RULE.match(line.strip())
        if m:
            pending_rule = m.group(1)
            continue
        m = _JOB.match(line)
        if m and pending_rule and stamp:
            starts[m.group(1)] = (pending_rule, stamp)
            pending_rule = None
            continue
        m = _DONE.match(line.strip())
        if m and m.group(1) in starts and stamp:
            rule, t0 = starts.pop(m.group(1))
            stage_name = rule.split("_", 1)[0]
            intervals.setdefault(stage_name, []).append((t0, stamp))
    busy = {}
    for name, ivs in intervals.items():
        ivs.sort()
        total, cur_s, cur_e = 0.0, None, None
        for s, e in ivs:
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    total += (cur_e - cur_s).total_seconds()
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None:
            total += (cur_e - cur_s).total_seconds()
        busy[name] = total
    wall = (last - first).total_seconds() if first and last else 0.0
    return {
        "wall_s": wall,
        "stage_busy_s": dict(sorted(busy.items())),
        "queries_share": busy.get("queries", 0.0) / wall if wall else None,
    }


def run_workflow(cores: int) -> str:
    from tests.integration.workflow import copy_workflow, snakemake

    with tempfile.TemporaryDirectory() as tmp:
        work = copy_workflow(Path(tmp) / "wf")
        (work / "config" / "bench.yaml").write_text("paper:\n  build_pdf: false\n")
        proc = snakemake(
            work,
            "--cores",
            str(cores),
            "--configfile",
            "config/config.yaml",
            "config/bench.yaml",
            timeout=7200,
        )
        return proc.stdout + proc.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--domain", default="Musical_Instruments")
    ap.add_argument("--products", type=int, default=None, help="LM products (default: config)")
    ap.add_argument("--adapter", type=Path, help="folder with a trained adapter (else train)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--results",
        type=Path,
        default=ROOT / "results",
        help="a run's results folder: the throughput mode reads <results>/data/<domain>",
    )
    ap.add_argument(
        "--model-cache",
        type=Path,
        default=None,
        help="dequantised-model cache (default: the workflow's, <results>/model_cache); 'none' "
        "to dequantise the GGUF each load",
    )
    ap.add_argument("--log", type=Path, help="analyse a finished Snakemake log")
    ap.add_argument(
        "--reports",
        type=Path,
        help="a finished run's results/queries folder: per-domain LM figures from its reports",
    )
    ap.add_argument("--run-workflow", action="store_true")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.reports:
        out = run_reports(args.reports)
        for d, r in out.items():
            print(
                f"{d}: LM {r['lm_valid']} valid of {r['lm_candidates']} in {r['sampling_s']:.1f} s "
                f"sampling = {r['valid_per_s']:.2f} valid candidates/s, {r['tokens_per_s']:.1f} "
                f"tokens/s; rule time candidates {r['candidates_s']:.1f} s, select "
                f"{r['select_s']:.1f} s; syntactic queries from the LM {r['lm_share']:.1%}"
            )
    elif args.log or args.run_workflow:
        text = args.log.read_text() if args.log else run_workflow(args.cores)
        out = stage_times(text)
        for name, secs in out["stage_busy_s"].items():
            print(f"{name:>10}: {secs:7.1f} s busy ({secs / out['wall_s']:.0%} of the run)")
        share = out["queries_share"]
        share = "n/a (no query job in this run)" if share is None else f"{share:.0%}"
        print(f"{'wall':>10}: {out['wall_s']:7.1f} s; query stage share {share}")
    else:
        n = args.products  # None: every sampled product, as the default config
        cache = args.model_cache or args.results / "model_cache"
        cache = None if str(cache) == "none" else cache
        out = throughput(args.domain, n, args.adapter, args.threads, cache, args.results)
        lm = out["lm"]
        print(
            f"LM backend: {lm['candidates']} candidates for {lm['products']} products in "
            f"{lm['sampling_seconds']:.1f} s: {lm['candidates_per_second']:.2f} candidates/s, "
            f"{lm['tokens_per_second']:.1f} tokens/s ({out['lm_lexically_valid']} lexically "
            f"valid); model load {out['load_s']:.1f} s"
        )
        if "lora" in out:
            print(f"LoRA + seed perplexities: {out['lora']['wall_s']:.1f} s ({out['lora']})")
        print(f"grammar backend: {out['grammar']['candidates_per_second']:.0f} candidates/s")
        print(f"fluency scorer: {out['fluency']['texts_per_second']:.2f} texts/s")
        print(f"load average during the run: {out['load_average']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
