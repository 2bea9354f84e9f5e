"""Indexing and ranking throughput of the default retrievers at sample scale x1 and x10, our
BM25 wrapper against plain bm25s and against Lucene (pyserini), and our dense encoder against
plain sentence-transformers, on the same corpus and queries.

The retrievers are the default configuration's (``retrieval.use`` of config/config.yaml, with
their parameters). The corpus is the synthetic sample world's product documents of one domain
(x1: ``--base-products``, default 300 products; x10: ten times as many); queries are
stand-in PQB queries (``tests.fixtures.queries``), the same set at both scales. Index time
includes loading the model (it happens in ``index``); ``--warm-index`` indexes a second time
with the model loaded (``index_warm_s``: the cost per document without the fixed load).
Rerankers rank ``--rerank-queries`` queries (``first_stage: false`` in the JSON).

Dense encoding (``--dense-repeats``, 0 to skip): the documents of each scale encoded by our
``personalir.retrieval.dense`` encoder (packaged MiniLM, encoding cache off, model loaded
before timing) and by plain ``SentenceTransformer(path).encode(texts, batch_size=same,
normalize_embeddings=True)``, repeats interleaved (order rotating), medians; the throughput
ratio ours/plain is on CPU seconds of this process (``throughput_ratio``; target >= 0.95) and
on wall seconds (``throughput_ratio_wall``).

Prints tables; ``--json`` writes the numbers.

    python benchmarks/bench_retrieval.py [--scales 1 10] [--queries 200] [--repeats 3]
        [--retrievers bm25 minilm ...] [--threads 1] [--warm-index] [--dense-repeats 5]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))  # the tests package: stand-in queries

from personalir.common.config import validate_config  # noqa: E402
from personalir.retrieval.base import QueryText, RetrieverSpec, RunSettings  # noqa: E402
from personalir.retrieval.corpus import Corpus, load_corpus  # noqa: E402
from personalir.retrieval.rerank import select_pairs  # noqa: E402
from personalir.retrieval.runio import run_from_ranking  # noqa: E402
from tests.fixtures.queries import toy_benchmark_from_products  # noqa: E402

CONFIG = validate_config({})["retrieval"]
DENSE_MODEL = "packaged:all-MiniLM-L6-v2"


def make_corpus(root: Path, domain: str, n_products: int, seed: int) -> Path:
    import pyarrow.parquet as pq

    from personalir.common.config import validate_config
    from personalir.common.io import write_parquet
    from personalir.data.ingest import ingest_meta
    from personalir.data.products import ProductRules, build_product_table
    from personalir.data.sample_world import generate_domain

    raw = root / f"raw{n_products}"
    generate_domain(
        raw, domain, seed=seed, n_products=n_products, n_users=20, min_sentences_per_user=5
    )
    ingest_meta(raw / f"meta_{domain}.jsonl", raw / "meta.parquet", policy="strict")
    table, _ = build_product_table(
        pq.read_table(raw / "meta.parquet"),
        ProductRules.from_config(validate_config({})["data"]["products"]),
    )
    out = root / f"products{n_products}.parquet"
    write_parquet(out, table)
    return out


def plain_bm25s(corpus: Corpus, queries: list[QueryText], depth: int) -> tuple[float, float]:
    import bm25s

    t0 = time.perf_counter()
    tokens = bm25s.tokenize(list(corpus.texts), stopwords="en", show_progress=False)
    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    model.index(tokens, show_progress=False)
    t1 = time.perf_counter()
    q = bm25s.tokenize([x.text for x in queries], stopwords="en", show_progress=False)
    model.retrieve(q, k=min(depth, len(corpus)), show_progress=False, n_threads=1)
    return t1 - t0, time.perf_counter() - t1


def build(name: str, settings: RunSettings, entry: dict | None = None):
    return RetrieverSpec.from_config(name, entry or CONFIG["retrievers"][name]).build(settings)


def timed(name: str, corpus: Corpus, queries, settings, first=None, entry=None, warm=False):
    """(index s, rank s, queries[, warm index s]): ``warm`` indexes a second time, the model
    loaded by the first."""
    retriever = build(name, settings, entry)
    if first is not None:
        retriever.set_first_stage(first)
    t0 = time.perf_counter()
    retriever.index(corpus)
    t1 = time.perf_counter()
    retriever.rank(queries, 200)
    t2 = time.perf_counter()
    out = (t1 - t0, t2 - t1, len(queries))
    if warm:
        t3 = time.perf_counter()
        retriever.index(corpus)
        out += (time.perf_counter() - t3,)
    if hasattr(retriever, "close"):
        retriever.close()
    return out


def _clocked(fn) -> tuple[float, float, object]:
    w0, c0 = time.perf_counter(), time.process_time()
    value = fn()
    return time.perf_counter() - w0, time.process_time() - c0, value


def dense_comparison(texts: list[str], settings: RunSettings, repeats: int) -> dict:
    """Our dense encoder (encoding cache off) against plain sentence-transformers ``encode`` on
    the same texts and batch size: interleaved repeats, median seconds, throughput ours/plain."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from personalir.common.models import resolve_model
    from personalir.retrieval.dense import DenseEncoder, DenseRetriever

    ours = DenseEncoder(
        DENSE_MODEL,
        dataclasses.replace(settings, encoding_cache=None),
        dict(DenseRetriever.default_params),
    )
    plain = SentenceTransformer(resolve_model(DENSE_MODEL).path, device="cpu")
    variants = {
        "ours": lambda t: ours.encode_documents(t),
        "plain": lambda t: plain.encode(
            t,
            batch_size=settings.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        ),
    }
    for fn in variants.values():  # load (ours loads on its first encoding) and warm up
        fn(texts[:64])
    wall = {name: [] for name in variants}
    cpu = {name: [] for name in variants}
    names = list(variants)
    emb = {}
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            w, c, emb[name] = _clocked(lambda name=name: variants[name](texts))
            wall[name].append(w)
            cpu[name].append(c)
    med = {
        f"{name}_{clock}_s": statistics.median(times[name])
        for clock, times in (("wall", wall), ("cpu", cpu))
        for name in names
    }
    return {
        "model": DENSE_MODEL,
        "documents": len(texts),
        "batch_size": settings.batch_size,
        "threads": settings.threads,
        "repeats": repeats,
        **med,
        "ours_docs_per_cpu_s": len(texts) / med["ours_cpu_s"],
        "plain_docs_per_cpu_s": len(texts) / med["plain_cpu_s"],
        "throughput_ratio": med["plain_cpu_s"] / med["ours_cpu_s"],
        "throughput_ratio_wall": med["plain_wall_s"] / med["ours_wall_s"],
        "max_abs_diff": float(
            np.max(np.abs(np.asarray(emb["ours"]) - np.asarray(emb["plain"]))) if texts else 0.0
        ),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--domain", default="Video_Games")
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    ap.add_argument("--base-products", type=int, default=300, help="products at x1")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rerank-queries", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=9, help="repeats of the BM25 comparison")
    ap.add_argument("--retrievers", nargs="+", default=CONFIG["use"])
    ap.add_argument("--threads", type=int, default=CONFIG["threads"])
    ap.add_argument("--no-pyserini", action="store_true")
    ap.add_argument(
        "--warm-index",
        action="store_true",
        help="index a second time with the model loaded (index_warm_s)",
    )
    ap.add_argument(
        "--dense-repeats",
        type=int,
        default=5,
        help="repeats of the dense encoding comparison (0: skip it)",
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    settings = RunSettings(threads=args.threads, seed=1)
    rows, bm25_rows, dense_rows = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        base = make_corpus(Path(tmp), args.domain, args.base_products, seed=20251129)
        records = toy_benchmark_from_products(str(base), args.domain, seed=1)
        queries = [QueryText.from_record(r) for r in records][: args.queries]
        rerank_queries = select_pairs(queries, 1, seed=1)[: args.rerank_queries]
        paths = {
            scale: base
            if scale == 1
            else make_corpus(Path(tmp), args.domain, args.base_products * scale, seed=20251129)
            for scale in args.scales
        }
        for scale in args.scales:
            corpus = load_corpus(paths[scale])
            bm25 = build("bm25", settings)
            bm25.index(corpus)
            first = run_from_ranking(bm25.rank(rerank_queries, 200))
            for kind in args.retrievers:
                reranker = build(kind, settings).needs_first_stage
                qs = rerank_queries if reranker else queries
                index_s, rank_s, n, *warm = timed(
                    kind, corpus, qs, settings, first if reranker else None, warm=args.warm_index
                )
                rows.append(
                    {
                        "retriever": kind,
                        "first_stage": not reranker,
                        "scale": scale,
                        "documents": len(corpus),
                        "queries": n,
                        "index_s": index_s,
                        "rank_s": rank_s,
                        "docs_per_s": len(corpus) / index_s,
                        "queries_per_s": n / rank_s,
                        **({"index_warm_s": warm[0]} if warm else {}),
                    }
                )
                warm_s = f"  warm index {warm[0]:7.2f} s" if warm else ""
                print(
                    f"x{scale} {kind:20s} index {index_s:7.2f} s  rank {rank_s:7.2f} s "
                    f"({n} queries){warm_s}",
                    flush=True,
                )
        if args.dense_repeats > 0:
            for scale in args.scales:
                texts = list(load_corpus(paths[scale]).texts)
                dense_rows.append(
                    {"scale": scale, **dense_comparison(texts, settings, args.dense_repeats)}
                )
                d = dense_rows[-1]
                print(
                    f"x{scale} dense encoding of {d['documents']} documents: ours "
                    f"{d['ours_cpu_s']:.2f} CPU s, plain sentence-transformers "
                    f"{d['plain_cpu_s']:.2f} CPU s: throughput ratio {d['throughput_ratio']:.3f}",
                    flush=True,
                )
        # The BM25 comparison comes last: once pyserini has started a JVM in this process,
        # native libraries loaded afterwards (torch) can crash on the JVM's signal handlers.
        for scale in args.scales:
            corpus = load_corpus(paths[scale])
            variants = {
                "ours (bm25 wrapper)": lambda c=corpus: timed("bm25", c, queries, settings)[:2],
                "plain bm25s": lambda c=corpus: plain_bm25s(c, queries, 200),
            }
            if not args.no_pyserini:
                variants["pyserini Lucene"] = lambda c=corpus: timed(
                    "lucene", c, queries, settings, entry={"type": "lucene_bm25"}
                )[:2]
            # Repeats interleave the variants (order rotating), so drifting load on shared
            # cores hits them alike; medians are reported.
            times = {name: [] for name in variants}
            names = list(variants)
            for r in range(args.repeats):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    times[name].append(variants[name]())
            for name in names:
                index_s = statistics.median(t[0] for t in times[name])
                rank_s = statistics.median(t[1] for t in times[name])
                bm25_rows.append(
                    {
                        "variant": name,
                        "scale": scale,
                        "documents": len(corpus),
                        "queries": len(queries),
                        "index_s": index_s,
                        "rank_s": rank_s,
                        "total_s": index_s + rank_s,
                    }
                )
    print("\n| retriever | scale | documents | index s | docs/s | queries | rank s | queries/s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['retriever']} | x{r['scale']} | {r['documents']} | {r['index_s']:.2f} | "
            f"{r['docs_per_s']:.0f} | {r['queries']} | {r['rank_s']:.2f} | "
            f"{r['queries_per_s']:.1f} |"
        )
    if dense_rows:
        print(
            "\n| dense encoding | scale | documents | ours CPU s | plain CPU s | ours wall s | "
            "plain wall s | ours/plain throughput (CPU) | (wall) |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for d in dense_rows:
            print(
                f"| MiniLM, batch {d['batch_size']} | x{d['scale']} | {d['documents']} | "
                f"{d['ours_cpu_s']:.2f} | {d['plain_cpu_s']:.2f} | {d['ours_wall_s']:.2f} | "
                f"{d['plain_wall_s']:.2f} | {d['throughput_ratio']:.3f} | "
                f"{d['throughput_ratio_wall']:.3f} |"
            )
    print("\n| BM25 variant | scale | index s | rank s | total s | vs plain bm25s |")
    print("|---|---|---|---|---|---|")
    for r in bm25_rows:
        plain = next(
            x for x in bm25_rows if x["variant"] == "plain bm25s" and x["scale"] == r["scale"]
        )
        print(
            f"| {r['variant']} | x{r['scale']} | {r['index_s']:.3f} | {r['rank_s']:.3f} | "
            f"{r['total_s']:.3f} | {r['total_s'] / plain['total_s']:.2f}x |"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"retrievers": rows, "bm25": bm25_rows, "dense": dense_rows}, indent=2)
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
