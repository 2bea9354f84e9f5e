"""Per-query latency of TTP's serving paths (TTP paper, Figure 8), at batch size 1 by default.

Four ways to turn a request (a user's history + query) into a query embedding, each timed
from the raw request (item ids and query) to the vector:

* ``full_ttp``: the TTP model (causal LM + LoRA) writes ``<think>rewrite</think><embed>``
  greedily under the target grammar and is embedded at ``<embed>`` in the same KV-cached
  pass (the TTP retriever's code: ``build_prompt`` + ``TTPEncoder.generate_and_embed``);
* ``decoupled``: Decoupled-Stage: the frozen rewriter (same backbone and recipe, its own
  adapter) generates the same way, then the separate bi-encoder embeds the rewrite
  (``parse_generated`` + the retrieval stage's ``DenseEncoder``);
* ``student``: the distilled student, a bi-encoder that embeds the instruction + history +
  query view (``distill.student_views``) without generating;
* ``cache_hit``: ``CachedServer`` answering from an ``EmbeddingStore`` that holds the full
  TTP embeddings of the same (user, query) pairs, precomputed offline (``write_store`` at
  the inference batch size, then ``open_store``); every request hits.

Per repeat (the paths' order rotating between repeats, so drifting load on shared cores
hits them alike): ``--warmup`` untimed requests, then ``--queries`` timed ones, served in
batches of ``--batch-size`` (a batch's wall time divided among its requests); p50 and p95
of a repeat; the table shows the median over ``--repeats`` repeats of each, and p50 as a
multiple of the full TTP's p50. The defaults (16 + 2 requests, 3 repeats) keep a run short on
two cores: the two generating paths take nearly all of it. Timings are host facts: the load
averages at start and end are printed, since other jobs on the same cores slow the
generating paths most (with as many torch threads as cores, they wait on each other).

Models: the stage's own outputs under ``--results`` when their weights are on disk (the
prepared backbone, the SFT and rewriter adapters, the Decoupled-Stage bi-encoder; the
workflow declares their weights temporary), else the configured backbone prepared the way
the workflow prepares it with a freshly initialised LoRA of the configured rank, and the
configured base bi-encoder. Latency does not depend on the weights' values, but an
untrained model's rewrites run to the ``max_new_tokens`` cap (the generated-token counts
are printed). The student is the trained one (``ttp/student/full``) when its weights are on
disk, else the configured base bi-encoder (``ttp.student.model``) it is trained from.

Queries: a synthetic set by default (``--seed``): histories of 5-10 products of the
sample world's catalogue generator (Musical_Instruments titles) and a broad query each; or
a TTP example set (``--examples results/ttp/<set>/examples.jsonl``, its items beside it).

    python benchmarks/bench_ttp_serving.py [--queries 16 --warmup 2 --repeats 3]
        [--batch-size 1] [--threads 2] [--json benchmarks/out/ttp_serving.json]
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from personalir.common.config import REPO_ROOT, load_config  # noqa: E402
from personalir.common.io import sha256_file, write_json  # noqa: E402
from personalir.ttp.inputs.data import Example, HistoryEntry, Item, ItemCorpus  # noqa: E402

PATHS = ("full_ttp", "decoupled", "student", "cache_hit")
LABELS = {
    "full_ttp": "full TTP (generate, embed <embed>)",
    "decoupled": "Decoupled-Stage (rewriter, then bi-encoder)",
    "student": "student (bi-encoder, no generation)",
    "cache_hit": "cache hit (EmbeddingStore)",
}
# The benchmark keeps the TTP models on the CPU (it does not apply ttp.device, which moves
# them and every tensor TTPEncoder builds to a GPU); only the bi-encoders follow --device.
DEVICES = {
    "full_ttp": lambda device: "cpu",
    "decoupled": lambda device: "cpu" if device == "cpu" else f"cpu, then {device}",
    "student": lambda device: device,
    "cache_hit": lambda device: "cpu",
}
SYNTHETIC_DOMAIN = "Musical_Instruments"


# -- the query set --------------------------------------------------------------------------
def synthetic_examples(
    n: int, seed: int, history: tuple[int, int] = (5, 10), catalogue: int = 300
) -> tuple[list[Example], ItemCorpus]:
    """``n`` searches of distinct users: a history of ``history`` (inclusive range) products
    of the sample world's catalogue generator, in time order, and a broad query for a product
    type (its title noun, half the time with a colour or a brand), deterministic in ``seed``."""
    from personalir.data.sample_world.catalogue import build_products
    from personalir.data.sample_world.domains import load_domain
    from personalir.data.sample_world.model import PARAMS, Draw

    spec = load_domain(SYNTHETIC_DOMAIN)
    products, _, _ = build_products(spec, catalogue, Draw(np.random.default_rng(seed)), PARAMS)
    nouns = {t.key: t.title_noun.lower() for t in spec.types}
    corpus = ItemCorpus(
        {
            p.parent_asin: Item(p.parent_asin, p.title, p.main_category, tuple(p.features))
            for p in products
        }
    )
    rng = np.random.default_rng([seed, 8])
    examples = []
    for k in range(n):
        size = int(rng.integers(history[0], history[1] + 1))
        picked = [products[int(i)] for i in rng.choice(len(products), size, replace=False)]
        target = products[int(rng.integers(len(products)))]
        query = nouns[target.product_type]
        u = rng.random()
        if u < 0.25 and target.color:
            query = f"{target.color.lower()} {query}"
        elif u < 0.5:
            query = f"{target.brand.lower()} {query}"
        ids = [p.parent_asin for p in picked]
        examples.append(
            Example(
                example_id=f"bench-{k:04d}",
                source="synthetic",
                domain=SYNTHETIC_DOMAIN,
                user_id=f"user-{k:04d}",
                query=query,
                target=target.parent_asin,
                label="Broad",
                split="test",
                history=[
                    HistoryEntry(i, 1_600_000_000_000 + 86_400_000 * j) for j, i in enumerate(ids)
                ],
                selected_history=ids,
            )
        )
    return examples, corpus


def file_examples(path: Path, items: Path | None, n: int) -> tuple[list[Example], ItemCorpus]:
    """The first ``n`` test examples (with a selected history) of a TTP example set, cycled
    when the set has fewer (a repeated request is the same request again)."""
    from personalir.ttp.inputs.data import read_examples

    corpus = ItemCorpus.read(items or path.parent / "items.parquet")
    pool = [e for e in read_examples(path) if e.split == "test" and e.selected_history is not None]
    if not pool:
        raise SystemExit(f"{path}: no test examples with a selected history")
    return [pool[i % len(pool)] for i in range(n)], corpus


# -- models ---------------------------------------------------------------------------------
@dataclass
class Models:
    ttp: object  # TTPEncoder, the serving batch size
    ttp_offline: object  # TTPEncoder on the same model, the inference batch size (the store)
    rewriter: object  # TTPEncoder of the Decoupled-Stage rewriter
    decoupled_encoder: object  # DenseEncoder on rewrites
    student: object  # DenseEncoder on the instruction + history + query view
    described: dict
    model_version: str


def _weights(folder: Path, name: str) -> Path | None:
    return folder if (folder / name).exists() else None


def load_models(args, cfg: dict) -> Models:
    from personalir.retrieval.base import RunSettings
    from personalir.retrieval.dense import DenseEncoder
    from personalir.ttp.model.backbone import (
        BackboneConfig,
        LoraSettings,
        attach_lora,
        load_adapter,
        load_backbone,
        prepare_backbone,
    )
    from personalir.ttp.training.sft_data import sft_settings, ttp_encoder

    ttp, seed = cfg["ttp"], int(cfg["seed"])
    res = Path(args.results) / "ttp"
    backbone_cfg = dict(ttp["backbone"])
    if args.backbone_model:
        backbone_cfg["model"] = args.backbone_model
    prepared = None if args.backbone_model else _weights(res / "backbone", "model.safetensors")
    if prepared:
        model, tok, info = load_backbone(prepared, backbone_cfg["dtype"])
        backbone = f"{info.description} (prepared backbone {prepared})"
    else:
        model, tok, info = prepare_backbone(
            BackboneConfig.from_config(backbone_cfg), seed, model_cache=args.model_cache
        )
        backbone = f"{info.description} (prepared here as the workflow prepares it)"
    rewriter_base = copy.deepcopy(model)
    lora = LoraSettings.from_config(ttp["lora"])
    fresh = f"fresh LoRA r={lora.r} alpha={lora.alpha} (untrained)"
    trained = {}

    def adapted(base, role: str, folder: Path | None):
        # The stage's adapter fits the stage's backbone only, not a --backbone-model.
        if folder is None and not args.backbone_model:
            folder = _weights(res / role / "adapter", "adapter_model.safetensors")
        if folder:
            trained[role] = str(folder)
            return load_adapter(base, folder), f"trained adapter {folder}"
        return attach_lora(base, tok, lora, seed=seed), fresh

    ttp_model, ttp_desc = adapted(model, "sft", args.adapter)
    rewriter_model, rewriter_desc = adapted(rewriter_base, "rewriter", args.rewriter_adapter)
    settings = sft_settings(ttp)
    serve = {**ttp, "inference": {**ttp["inference"], "batch_size": args.batch_size}}
    run = RunSettings(
        device=args.device, batch_size=args.batch_size, seed=seed, threads=args.threads
    )
    dense = {"normalize": True, "max_length": int(ttp["dense"]["max_length"])}
    decoupled_model = args.decoupled_model or str(
        _weights(res / "dense" / "decoupled", "model.safetensors") or ttp["dense"]["model"]
    )
    trained_student = _weights(res / "student" / "full", "model.safetensors")
    student_model = args.student_model or str(trained_student or ttp["student"]["model"])
    if "sft" in trained:
        version = "ttp-adapter:sha256:" + sha256_file(
            Path(trained["sft"]) / "adapter_model.safetensors"
        )
    else:
        version = f"ttp-fresh-lora:r{lora.r}:seed{seed}:{info.description}"
    return Models(
        ttp=ttp_encoder(ttp_model, tok, settings, serve),
        ttp_offline=ttp_encoder(ttp_model, tok, settings, ttp),
        rewriter=ttp_encoder(rewriter_model, tok, settings, serve),
        decoupled_encoder=DenseEncoder(decoupled_model, run, dense),
        student=DenseEncoder(student_model, run, dense),
        described={
            "backbone": backbone,
            "ttp_adapter": ttp_desc,
            "rewriter_adapter": rewriter_desc,
            "decoupled_bi_encoder": decoupled_model,
            "student": student_model
            + ("" if trained_student or args.student_model else " (base bi-encoder, untrained)"),
            "untrained": sorted({"sft", "rewriter"} - set(trained)),
        },
        model_version=version,
    )


# -- the four paths -------------------------------------------------------------------------
@dataclass
class Request:
    user_id: str
    query: str
    example: Example
    history_texts: list[str]


def build_paths(models: Models, corpus: ItemCorpus, cfg: dict, max_new_tokens: int, store):
    """``{path: serve(requests) -> [n, dim]}`` and the per-path generation counters."""
    from personalir.ttp.model.prompts import parse_generated
    from personalir.ttp.training.distill import student_views
    from personalir.ttp.training.sft_data import build_prompt, sft_settings

    settings = sft_settings(cfg["ttp"])
    counts = {"full_ttp": [], "decoupled": []}
    well = {"full_ttp": [], "decoupled": []}

    def generated(enc, name: str, batch: Sequence[Request]):
        prompts = [build_prompt(r.example, corpus, enc.tokenizer, settings) for r in batch]
        texts, vecs, flags = enc.generate_and_embed(prompts, max_new_tokens)
        counts[name] += [len(g) for g in enc.last_generated_ids]
        well[name] += flags
        return texts, vecs

    def full_ttp(batch):
        return generated(models.ttp, "full_ttp", batch)[1]

    def decoupled(batch):
        texts, _ = generated(models.rewriter, "decoupled", batch)
        rewrites = [parse_generated(t)[0] or r.query for t, r in zip(texts, batch, strict=True)]
        return models.decoupled_encoder.encode_queries(rewrites)

    def student(batch):
        # Serving has no rewrite: the original-query view (instruction + history + query).
        views = [student_views(r.history_texts, r.query, "")[0] for r in batch]
        return models.student.encode_queries(views)

    def cache_hit(batch):
        return store["server"].embed([r.user_id for r in batch], [r.query for r in batch])

    paths = {
        "full_ttp": full_ttp,
        "decoupled": decoupled,
        "student": student,
        "cache_hit": cache_hit,
    }
    return paths, counts, well


def build_store(models: Models, requests: Sequence[Request], corpus, cfg, max_new_tokens, folder):
    """The offline tier: full TTP embeddings of every (user, query) pair, written at the
    inference batch size, opened for the model version; the server's misses would go to the
    student (none happen here)."""
    from personalir.ttp.methods.serving import CachedServer, open_store, write_store
    from personalir.ttp.training.sft_data import build_prompt, sft_settings

    settings = sft_settings(cfg["ttp"])
    enc = models.ttp_offline
    first: dict[tuple[str, str], int] = {}
    for i, r in enumerate(requests):
        first.setdefault((r.user_id, r.query), i)
    unique = [requests[i] for i in first.values()]
    t0 = time.perf_counter()
    prompts = [build_prompt(r.example, corpus, enc.tokenizer, settings) for r in unique]
    _, vecs, _ = enc.generate_and_embed(prompts, max_new_tokens)
    write_store(
        folder,
        [r.user_id for r in unique],
        [r.query for r in unique],
        vecs,
        model_version=models.model_version,
    )
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    store = open_store(folder, model_version=models.model_version)
    opened = time.perf_counter() - t0
    users = {r.user_id: r.history_texts for r in requests}

    def student(user_ids, queries):
        from personalir.ttp.training.distill import student_views

        views = [student_views(users[u], q, "")[0] for u, q in zip(user_ids, queries, strict=True)]
        return models.student.encode_queries(views)

    expected = {(r.user_id, r.query): vecs[k] for k, r in enumerate(unique)}
    return {
        "server": CachedServer(store, student),
        "expected": expected,
        "build_s": built,
        "open_ms": opened * 1000,
        "pairs": len(store),
        "dim": store.dim,
    }


# -- timing ---------------------------------------------------------------------------------
def time_path(
    serve: Callable, warm: Sequence[Request], timed: Sequence[Request], batch_size: int
) -> list[float]:
    """Per-request milliseconds of ``timed`` (a batch's time shared among its requests)."""
    for start in range(0, len(warm), batch_size):
        serve(warm[start : start + batch_size])
    out = []
    for start in range(0, len(timed), batch_size):
        batch = timed[start : start + batch_size]
        t0 = time.perf_counter()
        serve(batch)
        ms = (time.perf_counter() - t0) * 1000 / len(batch)
        out += [ms] * len(batch)
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=str(REPO_ROOT / "config" / "config.yaml"))
    ap.add_argument("--results", default=None, help="results folder (default: the config's)")
    ap.add_argument("--queries", type=int, default=16, help="timed requests per repeat (N)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed requests per repeat (W)")
    ap.add_argument("--repeats", type=int, default=3, help="repeats (R); medians are shown")
    ap.add_argument("--batch-size", type=int, default=1, help="requests served together")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--seed", type=int, default=20251129, help="the synthetic query set's seed")
    ap.add_argument("--examples", type=Path, default=None, help="a TTP examples.jsonl instead")
    ap.add_argument("--items", type=Path, default=None, help="its items.parquet (default: beside)")
    ap.add_argument("--history", type=int, nargs=2, default=(5, 10), metavar=("MIN", "MAX"))
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: ttp.inference's")
    ap.add_argument("--backbone-model", default=None, help="prepare this causal LM instead")
    ap.add_argument("--adapter", type=Path, default=None, help="the TTP (SFT) adapter folder")
    ap.add_argument("--rewriter-adapter", type=Path, default=None)
    ap.add_argument("--decoupled-model", default=None, help="Decoupled-Stage's bi-encoder")
    ap.add_argument("--student-model", default=None, help="the student bi-encoder")
    ap.add_argument(
        "--model-cache", default=None, help="dequantised GGUF cache (default: config's)"
    )
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    for name in ("queries", "repeats", "batch_size", "threads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup < 0 or not 1 <= args.history[0] <= args.history[1]:
        ap.error("--warmup must be >= 0 and --history MIN MAX with 1 <= MIN <= MAX")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: torch sees no CUDA device here; nothing measured (skipped)")
        return 0
    torch.set_num_threads(args.threads)
    cfg = load_config(args.config)
    ttp = cfg["ttp"]
    args.results = args.results or str(REPO_ROOT / cfg["results_dir"])
    if args.model_cache is None and cfg.get("model_cache"):
        args.model_cache = str(Path(args.results) / "model_cache")
    max_new_tokens = args.max_new_tokens or int(ttp["inference"]["max_new_tokens"])
    load_start = load_average()

    needed = args.warmup + args.queries
    if args.examples:
        examples, corpus = file_examples(args.examples, args.items, needed)
        source = f"{args.examples} (first {needed} test examples)"
    else:
        examples, corpus = synthetic_examples(needed, args.seed, tuple(args.history))
        source = (
            f"synthetic, seed {args.seed}: {args.history[0]}-{args.history[1]} "
            f"{SYNTHETIC_DOMAIN} titles of history + a broad query"
        )
    fields, max_features = tuple(ttp["items"]["fields"]), int(ttp["items"]["max_features"])
    requests = [
        Request(
            ex.user_id,
            ex.query,
            ex,
            [corpus[i].text(fields, max_features) for i in ex.selected_history],
        )
        for ex in examples
    ]
    warm, timed = requests[: args.warmup], requests[args.warmup :]

    t0 = time.perf_counter()
    models = load_models(args, cfg)
    if args.device == "cuda":
        print("note: the TTP models stay on the CPU (this benchmark does not apply ttp.device)")
    load_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp:
        store = build_store(models, requests, corpus, cfg, max_new_tokens, Path(tmp) / "store")
        paths, counts, well = build_paths(models, corpus, cfg, max_new_tokens, store)
        per_repeat = {p: [] for p in PATHS}
        for r in range(args.repeats):
            for name in PATHS[r % len(PATHS) :] + PATHS[: r % len(PATHS)]:
                ms = time_path(paths[name], warm, timed, args.batch_size)
                p50, p95 = np.percentile(ms, [50, 95])
                per_repeat[name].append({"p50_ms": float(p50), "p95_ms": float(p95)})
                print(
                    f"repeat {r + 1}/{args.repeats} {name:9s} p50 {fmt_ms(p50)} ms, "
                    f"p95 {fmt_ms(p95)} ms",
                    flush=True,
                )
        server = store["server"]
        served = paths["cache_hit"](timed)
        from_store = all(
            np.array_equal(v, store["expected"][(r.user_id, r.query)])
            for v, r in zip(served, timed, strict=True)
        )
    if not from_store:
        raise RuntimeError("the cache served vectors that are not the stored TTP embeddings")

    figures = {}
    for name in PATHS:
        figures[name] = {
            "label": LABELS[name],
            "device": DEVICES[name](args.device),
            "p50_ms": statistics.median(x["p50_ms"] for x in per_repeat[name]),
            "p95_ms": statistics.median(x["p95_ms"] for x in per_repeat[name]),
            "repeats": per_repeat[name],
        }
    ref = figures["full_ttp"]["p50_ms"]
    for f in figures.values():
        f["p50_vs_full_ttp"] = f["p50_ms"] / ref if ref > 0 else None
    generation = {
        name: {
            "mean_generated_tokens": float(np.mean(counts[name])) if counts[name] else None,
            "max_new_tokens": max_new_tokens,
            "well_formed_share": float(np.mean(well[name])) if well[name] else None,
        }
        for name in counts
    }
    st = models.student.model
    dim_of = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    student_dim = int(dim_of())
    out = {
        "settings": {
            "queries": args.queries,
            "warmup": args.warmup,
            "repeats": args.repeats,
            "batch_size": args.batch_size,
            "threads": args.threads,
            "device": args.device,
            "query_set": source,
        },
        "machine": {
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "threads": torch.get_num_threads(),
            "load_average_start": load_start,
            "load_average_end": load_average(),
        },
        "models": models.described,
        "paths": figures,
        "generation": generation,
        "cache": {
            "pairs": store["pairs"],
            "dim": store["dim"],
            "student_dim": student_dim,
            "model_version": models.model_version,
            "hits": server.hits,
            "misses": server.misses,
            "routes": {k: server.routes.count(k) for k in ("cache", "student")},
            "served_from_store": from_store,
            "store_build_s": store["build_s"],
            "store_open_ms": store["open_ms"],
        },
        "load_s": load_s,
    }
    print_report(out)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_json(args.json, out, keep_timings=True, record=False)
    return 0


def print_report(out: dict) -> None:
    s, m, models = out["settings"], out["machine"], out["models"]
    print(
        f"\nmachine: {m['cpu']} ({m['cores']} cores), torch {m['torch']}, {m['threads']} "
        f"threads, device {s['device']}; load average {m['load_average_start']} at start, "
        f"{m['load_average_end']} at end"
    )
    print(
        f"requests: {s['query_set']}; {s['queries']} timed after {s['warmup']} warm-up, "
        f"{s['repeats']} repeats, batch size {s['batch_size']}"
    )
    for key in ("backbone", "ttp_adapter", "rewriter_adapter", "decoupled_bi_encoder", "student"):
        print(f"  {key}: {models[key]}")
    if models["untrained"]:
        print(
            f"  untrained ({', '.join(models['untrained'])}): latency does not depend on the "
            "weights' values; the rewrite length does (counts below)"
        )
    for name, g in out["generation"].items():
        print(
            f"  {name}: {g['mean_generated_tokens']:.1f} generated tokens per request on "
            f"average (cap {g['max_new_tokens']} + </think><embed>), well formed "
            f"{g['well_formed_share']:.0%}"
        )
    c = out["cache"]
    print(
        f"  store: {c['pairs']} pairs, dim {c['dim']}, built in {c['store_build_s']:.1f} s "
        f"offline, opened in {c['store_open_ms']:.1f} ms; {c['hits']} hits, {c['misses']} misses"
    )
    if c["dim"] != c["student_dim"]:
        print(
            f"  note: the student embeds in {c['student_dim']} dimensions, the store's TTP "
            f"embeddings have {c['dim']}: CachedServer would refuse a miss (every request "
            "here hits)"
        )
    print("\n| path | device | p50 ms | p95 ms | p50 / full TTP p50 |")
    print("|---|---|---|---|---|")
    for f in out["paths"].values():
        ratio = f["p50_vs_full_ttp"]
        ratio_text = "n/a" if ratio is None else f"{ratio:.3g}"
        print(
            f"| {f['label']} | {f['device']} | {fmt_ms(f['p50_ms'])} | {fmt_ms(f['p95_ms'])} | "
            f"{ratio_text} |"
        )


def fmt_ms(ms: float) -> str:
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 1 else f"{ms:.4f}"


if __name__ == "__main__":
    sys.exit(main())
