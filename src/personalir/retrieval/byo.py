"""Helpers of the bring-your-own command (``pqb-evaluate``) that the workflow does not use.

:func:`corpus_from_meta` builds the corpus from an Amazon Reviews 2023 meta file with the
same two steps as the workflow's ``ingest`` and ``product_documents`` rules, into the
command's output folder. :func:`tied_targets` counts the queries whose target shares its
score with another retrieved document: their rank depends on the tie order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

from personalir.common.io import read_json, read_parquet_table, write_json, write_parquet
from personalir.data.ingest import ingest_meta
from personalir.data.products import ProductRules, build_product_table
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
