"""What each retrieval rule runs: prepare queries, run a retriever, import a run file,
compute per-query metrics. (Summaries, tables and figures live in ``summary``, ``tables``
and ``figures``.) Each function reads only the paths it is given and writes atomically.
"""

from __future__ import annotations

import contextlib
import logging
import platform
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from personalir.common.io import read_json, write_json, write_parquet
from personalir.queries.benchmark_format import read_benchmark, write_benchmark
from personalir.retrieval.base import QueryText, RetrieverSpec, RunSettings
from personalir.retrieval.corpus import (
    UNKNOWN_PRODUCTS_HINT,
    UNPAIRED_REASON,
    check_queries_against_corpus,
    load_corpus,
    load_query_source,
)
from personalir.retrieval.encodings import PROCESS_TOTALS
from personalir.retrieval.metrics import MetricSettings, per_query_frame
from personalir.retrieval.runio import read_run, read_run_text, write_run, write_run_text

log = logging.getLogger(__name__)


def prepare_queries(
    *,
    domain: str,
    source: str,
    source_path: str | Path,
    corpus_path: str | Path,
    unknown_products: str,
    out_path: str | Path,
    report_path: str | Path,
    drop_hint: str = UNKNOWN_PRODUCTS_HINT,
) -> dict:
    """Benchmark records of one domain (ours or a released file), checked against the corpus.

    ``drop_hint``: how an unknown-product error names the drop policy (config key or flag)."""
    records, found = load_query_source(source, source_path, domain)
    corpus = load_corpus(corpus_path)
    records, report = check_queries_against_corpus(
        records,
        frozenset(corpus.doc_ids),
        unknown_products=unknown_products,
        source=str(source_path),
        drop_hint=drop_hint,
    )
    for rec in records:
        if rec["domain"] != domain:
            raise ValueError(
                f"{source_path}: query {rec['query_id']!r} is of domain {rec['domain']!r}, "
                f"expected {domain!r}"
            )
    write_benchmark(out_path, records)
    report.update({"domain": domain, "source": source, "source_path": str(source_path)})
    if source != "benchmark":  # (the workflow's default report stays as it was)
        report["query_format"] = found
    if report["queries_by_kind"].get("unpaired"):
        report["unpaired_reason"] = UNPAIRED_REASON
    write_json(report_path, report)
    return report


def _versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in (
        "bm25s",
        "torch",
        "transformers",
        "sentence-transformers",
        "FlagEmbedding",
        "pyserini",
        "ir_measures",
    ):
        with contextlib.suppress(md.PackageNotFoundError):
            out[pkg] = md.version(pkg)
    return out


def run_retriever(
    *,
    name: str,
    entry: Mapping,
    settings: RunSettings,
    depth: int,
    domains: Sequence[str],
    corpus_paths: Sequence[str | Path],
    query_paths: Sequence[str | Path],
    run_paths: Sequence[str | Path],
    meta_path: str | Path,
    first_stage_paths: Sequence[str | Path] | None = None,
    document: Mapping | None = None,
) -> dict:
    """Index each domain's corpus, rank its queries, write one TREC run per domain + metadata.

    The model is loaded once for all domains (``index`` is called per domain). ``document``
    (how the corpus documents were made, when known) is recorded in the metadata."""
    spec = RetrieverSpec.from_config(name, entry)
    retriever = spec.build(settings)
    meta = {
        "name": name,
        "label": spec.label or name,
        "type": spec.type,
        **retriever.describe(),
        "depth": depth,
        "versions": _versions(),
        **({"document": dict(document)} if document is not None else {}),
        "domains": {},
    }
    if retriever.needs_first_stage and not first_stage_paths:
        raise ValueError(f"retriever {name!r} needs the run of its first stage")
    for i, domain in enumerate(domains):
        corpus = load_corpus(corpus_paths[i])
        records = read_benchmark(query_paths[i])
        queries = [QueryText.from_record(r) for r in records]
        selected = retriever.select_queries(queries)
        if retriever.needs_first_stage:
            retriever.set_first_stage(
                read_run(
                    first_stage_paths[i],
                    query_ids=[q.query_id for q in queries],
                    doc_ids=corpus.doc_ids,
                )
            )
        t0 = time.perf_counter()
        retriever.index(corpus)
        t1 = time.perf_counter()
        ranking = retriever.rank(selected, depth)
        t2 = time.perf_counter()
        missing = [q.query_id for q in selected if q.query_id not in ranking]
        if missing:
            raise RuntimeError(f"{name}: no ranking returned for query {missing[0]!r}")
        lines = write_run(
            run_paths[i], {q.query_id: ranking[q.query_id] for q in selected}, tag=name
        )
        subset = len(selected) < len(queries)
        meta["domains"][domain] = {
            "documents": len(corpus),
            "queries": len(queries),
            "queries_evaluated": len(selected),
            "evaluated_query_ids": [q.query_id for q in selected] if subset else None,
            "run_lines": lines,
            "index_seconds": round(t1 - t0, 3),
            "rank_seconds": round(t2 - t1, 3),
        }
        log.info(
            "%s %s: %d queries ranked in %.1fs (index %.1fs)",
            name,
            domain,
            len(selected),
            t2 - t1,
            t1 - t0,
        )
    if hasattr(retriever, "close"):
        retriever.close()
    if settings.encoding_cache:
        # Damaged entries recomputed (checksum, shape or read errors). Hits and misses depend
        # on what earlier jobs left in the cache, not on the run: the rule's log keeps them.
        meta["encoding_cache"] = {
            "hits_this_run": PROCESS_TOTALS["hits"],
            "misses_this_run": PROCESS_TOTALS["misses"],
            "recomputed": PROCESS_TOTALS["recomputed"],
        }
    write_json(meta_path, meta)
    return meta


def import_run(
    *,
    name: str,
    entry: Mapping,
    domains: Sequence[str],
    source_paths: Sequence[str | Path],
    corpus_paths: Sequence[str | Path],
    query_paths: Sequence[str | Path],
    run_paths: Sequence[str | Path],
    meta_path: str | Path,
    document: Mapping | None = None,
) -> dict:
    """Validate a user's run files (one per domain) and copy them into the results
    (``document``, how the corpus documents were made when known, into the metadata)."""
    meta = {
        "name": name,
        "label": entry.get("label") or name,
        "family": entry.get("family") or "external",
        "type": None,
        "class": None,
        "model": None,
        "params": {},
        "source": "run file",
        **({"document": dict(document)} if document is not None else {}),
        "domains": {},
    }
    for i, domain in enumerate(domains):
        corpus = load_corpus(corpus_paths[i])
        records = read_benchmark(query_paths[i])
        run = read_run(
            source_paths[i], query_ids=[r["query_id"] for r in records], doc_ids=corpus.doc_ids
        )
        write_run_text(run_paths[i], read_run_text(source_paths[i]))
        meta["domains"][domain] = {
            "documents": len(corpus),
            "queries": len(records),
            "queries_in_run": len(run),
            "queries_evaluated": len(records),
            "evaluated_query_ids": None,
            "source_path": str(source_paths[i]),
        }
        if len(run) < len(records):
            log.warning(
                "%s %s: the run lists %d of %d queries; the others count as misses",
                name,
                domain,
                len(run),
                len(records),
            )
    write_json(meta_path, meta)
    return meta


def evaluate_runs(
    *,
    name: str,
    domains: Sequence[str],
    corpus_paths: Sequence[str | Path],
    query_paths: Sequence[str | Path],
    run_paths: Sequence[str | Path],
    meta_path: str | Path,
    settings: MetricSettings,
    out_paths: Sequence[str | Path],
) -> list[pd.DataFrame]:
    """Per-query metrics of one retriever in each domain (Parquet)."""
    meta = read_json(meta_path)
    frames = []
    for i, domain in enumerate(domains):
        corpus = load_corpus(corpus_paths[i])
        records = read_benchmark(query_paths[i])
        run = read_run(
            run_paths[i], query_ids=[r["query_id"] for r in records], doc_ids=corpus.doc_ids
        )
        evaluated = meta["domains"][domain].get("evaluated_query_ids")
        frame = per_query_frame(records, run, settings, evaluated=evaluated)
        frame.insert(0, "retriever", name)
        frame.insert(1, "label", meta.get("label") or name)
        frame.insert(2, "family", meta.get("family") or "external")
        write_parquet(out_paths[i], frame)
        frames.append(frame)
    return frames
