"""Helpers of the bring-your-own command (``pqb-evaluate``) that the workflow does not use.

:func:`corpus_from_meta` builds the corpus from an Amazon Reviews 2023 meta file with the
same two steps as the workflow's ``ingest`` and ``product_documents`` rules, into the
command's output folder. :func:`tied_targets` counts the queries whose target shares its
score with another retrieved document: their rank depends on the tie order.
:func:`write_query_export` writes the query ids and texts a run file is made from;
:func:`run_is_empty` tells a run with no lines, which would otherwise read as perfectly robust.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from personalir.common.io import (
    read_json,
    read_parquet_table,
    write_json,
    write_jsonl,
    write_parquet,
    write_text,
)
from personalir.data.ingest import ingest_meta
from personalir.data.products import DocumentTemplate, ProductRules, build_product_table
from personalir.queries.benchmark_format import read_benchmark
from personalir.retrieval.byo_args import DROP_HINT
from personalir.retrieval.corpus import FORMAT_NAMES, load_query_source
from personalir.retrieval.pipeline import prepare_queries
from personalir.retrieval.runio import read_run_text

log = logging.getLogger(__name__)


def corpus_from_meta(
    *,
    meta_path: str | Path,
    out_dir: str | Path,
    data_section: Mapping,
) -> dict:
    """Build ``<out_dir>/products.parquet`` (the corpus) from an Amazon 2023 meta JSONL(.gz).

    As the workflow does: ingest (``data.ingest``: bad records quarantined and counted) then
    product documents (``data.products``, its ``document`` template saying which fields make a
    document). A meta file with no usable product is an error."""
    out_dir = Path(out_dir)
    ingest = data_section["ingest"]
    quality = ingest_meta(
        meta_path,
        out_dir / "meta.parquet",
        policy=ingest["policy"],
        quarantine_path=out_dir / "meta.quarantine.jsonl",
        report_path=out_dir / "meta.quality.json",
        chunk_size=ingest["chunk_size"],
    )
    rules = ProductRules.from_config(data_section["products"])
    table, report = build_product_table(read_parquet_table(out_dir / "meta.parquet"), rules)
    if table.num_rows == 0:
        raise ValueError(
            f"{meta_path}: no product read from the meta file ({_quality_line(quality)}); "
            "give an Amazon Reviews 2023 meta JSONL (one product per line, with parent_asin)"
        )
    write_parquet(out_dir / "products.parquet", table)
    report = {"meta_path": str(meta_path), "ingest": quality, **report}
    write_json(out_dir / "products.report.json", report)
    log.info(
        "%s: %d products (%s); document = %s",
        meta_path,
        table.num_rows,
        _quality_line(quality),
        rules.document.describe(),
    )
    return report


def corpus_document(corpus_path: str | Path) -> dict | None:
    """The document template a given corpus was built with, from the ``products.report.json``
    beside it (the workflow and ``--meta`` write one); None when there is none."""
    report = Path(corpus_path).with_name("products.report.json")
    if not report.is_file():
        return None
    try:
        document = read_json(report).get("document")
    except (ValueError, OSError, AttributeError):
        return None
    return dict(document) if isinstance(document, Mapping) else None


def _quality_line(quality: Mapping) -> str:
    line = (
        f"{quality.get('records_read', 0)} records read, "
        f"{quality.get('records_quarantined', 0)} quarantined"
    )
    reasons = quality.get("quarantined_by_reason") or {}
    if reasons:
        line += " (" + ", ".join(f"{n} {r}" for r, n in reasons.items()) + ")"
    return line


def tied_targets(run_path: str | Path, records: Iterable[Mapping]) -> tuple[int, int]:
    """(queries whose retrieved target ties another document's score, queries whose target
    was retrieved), scores compared as written in the run file (6 decimals)."""
    target = {r["query_id"]: r["product"] for r in records}
    scores: dict[str, dict[str, str]] = {}
    for line in read_run_text(run_path).splitlines():
        fields = line.split()
        if len(fields) == 6 and fields[0] in target:
            scores.setdefault(fields[0], {})[fields[2]] = fields[4]
    tied = found = 0
    for qid, docs in scores.items():
        score = docs.get(target[qid])
        if score is None:
            continue
        found += 1
        tied += sum(s == score for s in docs.values()) > 1
    return tied, found


class InputError(ValueError):
    """A bring-your-own input cannot be used; the message names the file (and line)."""


def run_is_empty(run_path: str | Path) -> bool:
    """Whether a run file has no lines (its retriever found nothing for any query)."""
    return not read_run_text(run_path).strip()


#: What a TSV line cannot hold in a field: the tab and every character Python's
#: ``str.splitlines`` ends a line at.
TSV_BREAKS = re.compile("[\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def write_query_export(
    path: str | Path, records: Iterable[Mapping], fmt: str
) -> tuple[int, list[str]]:
    """Write the queries' ids and texts atomically; returns (queries written, ids of the
    queries whose text was changed to fit the format).

    ``tsv``: ``query_id<TAB>text`` lines; a tab or line break inside a text is written as a
    space (those queries are returned, for the console: ``jsonl`` keeps every text as it is).
    ``jsonl``: ``{query_id, domain, user_id, text}``. A query id with white space cannot
    appear in a run file: an error."""
    records = list(records)
    for rec in records:
        if any(c.isspace() for c in rec["query_id"]):
            raise InputError(
                f"query id {rec['query_id']!r} contains white space: a run file cannot name it"
            )
    if fmt == "jsonl":
        keys = ("query_id", "domain", "user_id", "text")
        return write_jsonl(path, ({k: rec[k] for k in keys} for rec in records)), []
    if fmt != "tsv":
        raise ValueError(f"export format {fmt!r} is not tsv or jsonl")
    changed = [rec["query_id"] for rec in records if TSV_BREAKS.search(rec["text"])]
    lines = (f"{rec['query_id']}\t{TSV_BREAKS.sub(' ', rec['text'])}\n" for rec in records)
    write_text(path, "".join(lines))
    return len(records), changed


def query_summary(report: dict) -> str:
    """The console line of a domain's queries: what is evaluated, what was dropped and why."""
    kinds = report["queries_by_kind"]
    line = (
        f"{report['domain']}: {FORMAT_NAMES[report.get('query_format', 'benchmark')]} file, "
        f"{report['queries']} of {report['queries_read']} queries evaluated "
        f"({kinds.get('syntactic', 0)} syntactic, "
        f"{kinds.get('writing_error', 0)} writing-error, {kinds.get('unpaired', 0)} unpaired "
        "[effectiveness only]) on "
        f"{report['products']} products"
    )
    for reason, n in (report.get("queries_dropped_by_reason") or {}).items():
        by_kind = ", ".join(f"{c} {k}" for k, c in n["by_kind"].items())
        line += (
            f"; dropped {n['queries']} ({by_kind}): {reason.replace('_', ' ')} "
            f"({n['products']} products)"
        )
    return line


def prepare_inputs(
    args: argparse.Namespace, config: dict, out: Path
) -> tuple[list[str], list[str], list[dict]]:
    """Each domain's corpus (given, or built from ``--meta``), checked queries and their
    report; the console gets one line per domain with the counts (what is evaluated, dropped
    and why). A domain left with no query is an input error."""
    domains = args.domains
    if args.meta:
        corpus = [str(out / d / "products.parquet") for d in domains]
        for d in domains:
            meta_path = args.meta.format(domain=d)
            report = corpus_from_meta(
                meta_path=meta_path, out_dir=out / d, data_section=config["data"]
            )
            template = DocumentTemplate.from_config(report["document"])
            print(
                f"{d}: corpus of {report['products']} products built from {meta_path} "
                f"({report['ingest'].get('records_quarantined', 0)} records quarantined); "
                f"document = {template.describe()}",
                file=sys.stderr,
            )
    else:
        corpus = [args.corpus.format(domain=d) for d in domains]
        for d, path in zip(domains, corpus, strict=True):
            found = corpus_document(path)
            try:
                told = DocumentTemplate.from_config(found).describe() if found else None
            except (ValueError, TypeError):
                told = f"as recorded beside it: {found}"
            told = told or (
                "as written in the file (no products.report.json beside it names its fields)"
            )
            print(f"{d}: corpus {path}; document = {told}", file=sys.stderr)
    queries = [str(out / d / "queries.jsonl") for d in domains]
    reports = []
    for i, d in enumerate(domains):
        source = args.queries.format(domain=d)
        report = prepare_queries(
            domain=d,
            source=args.query_format,
            source_path=source,
            corpus_path=corpus[i],
            unknown_products=args.unknown_products,
            out_path=queries[i],
            report_path=out / d / "queries.report.json",
            drop_hint=DROP_HINT,
        )
        check_queries(source, report["queries_read"], report["queries"])
        print(query_summary(report), file=sys.stderr)
        reports.append(report)
    return corpus, queries, reports


def check_queries(source: str, read: int, kept: int) -> None:
    """An empty query set is an input error: nothing would be evaluated."""
    if not read:
        raise InputError(f"{source}: no queries in the file (an empty query set)")
    if not kept:
        raise InputError(f"{source}: none of its {read} queries is left to evaluate")


def dropped_ids(args: argparse.Namespace, domain: str, kept_path: str | Path) -> set[str]:
    """The ids of the domain's queries that ``--unknown-products drop`` removed."""
    found, _ = load_query_source(args.query_format, args.queries.format(domain=domain), domain)
    kept = {r["query_id"] for r in read_benchmark(kept_path)}
    return {r["query_id"] for r in found} - kept


def check_dropped_lines(run_path: str | Path, dropped: set[str]) -> None:
    """A run line for a query that was dropped (its product is not in the corpus) is an input
    error naming the line: such a run was made from queries the evaluation does not have."""
    for lineno, line in enumerate(read_run_text(run_path).splitlines(), 1):
        fields = line.split()
        if fields and fields[0] in dropped:
            raise InputError(
                f"{run_path}:{lineno}: query {fields[0]!r} was dropped (its product is not in "
                "the corpus: --unknown-products drop); leave its lines out, or export the "
                "queries with the same --corpus/--meta and --unknown-products to get the ids "
                "evaluated"
            )
