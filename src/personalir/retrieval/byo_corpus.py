"""The corpus of a bring-your-own evaluation built from an Amazon Reviews 2023 meta file.

Used by ``pqb-evaluate --meta`` only (not by the workflow, whose ``ingest`` and
``product_documents`` rules build ``products.parquet``): the same two steps, into the
command's output folder.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import pyarrow.parquet as pq

from personalir.common.io import write_json, write_parquet
from personalir.data.ingest import ingest_meta
from personalir.data.products import ProductRules, build_product_table

log = logging.getLogger(__name__)


def corpus_from_meta(
    *,
    meta_path: str | Path,
    out_dir: str | Path,
    data_section: Mapping,
) -> dict:
    """Build ``<out_dir>/products.parquet`` (the corpus) from an Amazon 2023 meta JSONL(.gz).

    As the workflow does: ingest (``data.ingest``: bad records quarantined and counted) then
    product documents (``data.products``). A meta file with no usable product is an error."""
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
    table, report = build_product_table(
        pq.read_table(out_dir / "meta.parquet"), ProductRules.from_config(data_section["products"])
    )
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
        DOCUMENT_FIELDS,
    )
    return report


#: What a product document holds (personalir.data.products.build_document).
DOCUMENT_FIELDS = "title + description + features (details are not part of the document)"


def _quality_line(quality: Mapping) -> str:
    line = (
        f"{quality.get('records_read', 0)} records read, "
        f"{quality.get('records_quarantined', 0)} quarantined"
    )
    reasons = quality.get("quarantined_by_reason") or {}
    if reasons:
        line += " (" + ", ".join(f"{n} {r}" for r, n in reasons.items()) + ")"
    return line
