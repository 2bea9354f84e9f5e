"""The retrieval corpus (one document per product) and the PQB queries evaluated on it.

Every product of ``results/data/<Domain>/products.parquet`` is a document; its id is the
``parent_asin``. Documents are ordered by id so that every retriever sees the same order and
ties between equal scores are broken the same way everywhere (lower position first).

Queries come either from our benchmark file (``results/queries/<Domain>/benchmark.jsonl``) or
from a released PQB file (``{asin: [{asin, uid, syntax_query, typo_query}]}``, or the older
one-query-per-record ``{asin, uid, query}`` list); all end up as benchmark records (see
:mod:`personalir.queries.benchmark_format`). A query's relevant document is its ``product``;
a product that is not in the corpus can never be retrieved, so by default it is an error
(``unknown_products: drop`` removes those pairs, counts them per reason and logs the counts).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from personalir.common.io import read_parquet_table
from personalir.queries.benchmark_format import (
    RELEASED_FORMATS,
    BenchmarkFormatError,
    check_pairs,
    from_released,
    read_benchmark,
    read_released,
)

log = logging.getLogger(__name__)
#: How the workflow names the drop policy in errors (the CLI passes its flag instead).
UNKNOWN_PRODUCTS_HINT = "set retrieval.queries.unknown_products: drop"
#: The query file formats, as the console names them.
FORMAT_NAMES = {
    "benchmark": "benchmark JSONL",
    "released": "released {asin: [{asin, uid, syntax_query, typo_query}]}",
    "released-v0": "released-v0 (one {asin, uid, query} per record)",
}
#: Why a query is unpaired, in the console and the reports.
UNPAIRED_REASON = "the only user of its product and no typo_query"


class CorpusError(ValueError):
    """The product table cannot serve as a retrieval corpus."""


@dataclass(frozen=True)
class Corpus:
    doc_ids: tuple[str, ...]
    texts: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.doc_ids)

    def subset(self, n: int) -> Corpus:
        return Corpus(self.doc_ids[:n], self.texts[:n])


def load_corpus(path: str | Path) -> Corpus:
    """Documents of a product table, ordered by ``parent_asin``."""
    table = read_parquet_table(path, columns=["parent_asin", "document"])
    ids = table.column("parent_asin").to_pylist()
    texts = table.column("document").to_pylist()
    pairs = sorted(zip(ids, texts, strict=True), key=lambda p: p[0])
    seen: set[str] = set()
    for doc_id, text in pairs:
        if not isinstance(doc_id, str) or not doc_id or any(c.isspace() for c in doc_id):
            raise CorpusError(f"{path}: document id {doc_id!r} is empty or contains whitespace")
        if doc_id in seen:
            raise CorpusError(f"{path}: duplicate document id {doc_id!r}")
        if not isinstance(text, str) or not text.strip():
            raise CorpusError(f"{path}: document {doc_id!r} has no text")
        seen.add(doc_id)
    return Corpus(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))


def corpus_from_texts(doc_ids: list[str], texts: list[str]) -> Corpus:
    """A corpus from parallel lists (tests, benchmarks), ordered like :func:`load_corpus`."""
    pairs = sorted(zip(doc_ids, texts, strict=True))
    return Corpus(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))


def load_query_source(source: str, path: str | Path, domain: str) -> tuple[list[dict], str]:
    """Benchmark records from our JSONL (``benchmark``) or a released PQB file (``released``:
    either release format, recognised by shape; ``released-v0``: only the older one), and the
    format the file was in."""
    if source == "benchmark":
        return read_benchmark(path), "benchmark"
    if source in RELEASED_FORMATS:
        data, found = read_released(path, source)
        records = from_released(data, domain)
        for rec in records:
            rec["domain"] = domain
        kinds = Counter(rec["kind"] for rec in records)
        log.info(
            "%s: %s format, %d products, %d entries -> %d syntactic and %d writing-error "
            "queries in pairs, %d unpaired (%s: evaluated for effectiveness only)",
            path,
            found,
            len(data),
            sum(len(v) for v in data.values() if isinstance(v, list)),
            kinds["syntactic"],
            kinds["writing_error"],
            kinds["unpaired"],
            UNPAIRED_REASON,
        )
        return records, found
    raise ValueError(
        f"unknown query source {source!r} (expected 'benchmark' or one of {RELEASED_FORMATS})"
    )


def check_queries_against_corpus(
    records: list[dict],
    corpus_ids: set[str] | frozenset[str],
    *,
    unknown_products: str,
    source: str,
    drop_hint: str = UNKNOWN_PRODUCTS_HINT,
) -> tuple[list[dict], dict]:
    """Keep queries whose product is a document; drop whole pairs or fail, per the policy.

    ``drop_hint`` is how the error tells the user to drop them (the workflow's config key,
    the CLI's flag). Dropped queries are counted per reason and kind in the report (key
    ``queries_dropped_by_reason``, present when some were dropped) and logged."""
    for rec in records:
        if any(c.isspace() for c in rec["query_id"]):
            raise BenchmarkFormatError(
                f"{source}: query id {rec['query_id']!r} contains whitespace (TREC run files "
                "separate fields by whitespace)"
            )
    missing = Counter(rec["product"] for rec in records if rec["product"] not in corpus_ids)
    report = {
        "queries_read": len(records),
        "products_not_in_corpus": len(missing),
        "queries_dropped": 0,
    }
    if missing:
        if unknown_products == "error":
            shown = ", ".join(sorted(missing)[:5])
            raise BenchmarkFormatError(
                f"{source}: {len(missing)} product(s) of the queries are not in the corpus "
                f"(e.g. {shown}); use the matching corpus, or {drop_hint} to evaluate the rest"
            )
        bad_pairs = {rec["pair_id"] for rec in records if rec["product"] in missing}
        dropped = [rec for rec in records if rec["pair_id"] in bad_pairs]
        kept = [rec for rec in records if rec["pair_id"] not in bad_pairs]
        report["queries_dropped"] = len(dropped)
        by_kind = Counter(rec["kind"] for rec in dropped)
        report["queries_dropped_by_reason"] = {
            "product_not_in_corpus": {
                "queries": len(dropped),
                "products": len(missing),
                "by_kind": dict(sorted(by_kind.items())),
            }
        }
        log.warning(
            "%s: dropped %d of %d queries (%s) because their product is not in the corpus "
            "(%d products, e.g. %s); %d queries kept",
            source,
            len(dropped),
            len(records),
            ", ".join(f"{n} {k}" for k, n in sorted(by_kind.items())),
            len(missing),
            ", ".join(sorted(missing)[:3]),
            len(kept),
        )
        records = kept
    check_pairs(records, source)
    kinds = Counter(rec["kind"] for rec in records)
    report.update(
        {
            "queries": len(records),
            "pairs": len({rec["pair_id"] for rec in records}),
            "queries_by_kind": dict(sorted(kinds.items())),
            "products": len({rec["product"] for rec in records}),
        }
    )
    return records, report
