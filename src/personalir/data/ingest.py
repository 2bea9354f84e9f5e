"""Stream Amazon Reviews 2023 JSONL (plain or gzip) into typed Parquet, counting every bad line.

Input is read line by line in bounded memory (rows are buffered ``chunk_size`` at a time and
written as one Parquet row group each). Gzip is detected by its magic bytes; a ``.gz`` name
without them is an error (usually an HTML error page saved under the archive's name). Lines are
parsed by orjson (strict RFC 8259: ``NaN``/``Infinity`` are invalid JSON; integers beyond 64 bits
become floats); the error path re-reads a rejected line to name the reason.

Policies: ``strict`` raises :class:`IngestError` at the first bad line (nothing is written);
``quarantine`` writes bad lines to a JSONL file (``{file, line, reason, field, detail, raw,
raw_lossy[, raw_base64]}``; ``raw`` is the line without its ``\\n``, invalid bytes shown as
``\\xNN`` and ``raw_lossy`` true, with the exact bytes in ``raw_base64``) and counts them in the
quality report. ``records_read == records_written + sum(quarantined_by_reason)`` is checked
before anything is published.

Command line: ``python -m personalir.data.ingest {reviews,meta} SRC OUT [--policy P]
[--quarantine Q] [--report R] [--chunk-size N] [--min-date D] [--max-date D]
[--max-line-bytes N] [--max-quarantine-fraction F]`` (exit 1 with the IngestError message).

Guards on the whole file: a line over ``max_line_bytes`` is quarantined unparsed (memory stays
bounded); more than ``max_quarantine_fraction`` of the lines quarantined stops the ingest
(``quarantine_rate``: a changed input format should not pass as a few bad records); an empty
file is ``empty_input`` (an error under ``strict``, a warning in the report otherwise).


Determinism: for the same input bytes and ``chunk_size`` the Parquet bytes are identical
(input order kept, no metadata that varies between runs; pyarrow's version string is in the
footer). Memory: one chunk of rows plus the duplicate-detection set, which grows with the
input (one 16-character review_id per accepted review, about 80 bytes each in CPython, so
~0.8 GB per 10M reviews; one parent_asin per product for meta).

Schemas and reason codes: :mod:`personalir.data.ingest_schema`; field checks and the
record converters: :mod:`personalir.data.ingest_records`; opening the source, naming a bad
line and the quarantine records: :mod:`personalir.data.ingest_lines`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import json
import logging
import os
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from personalir.common.io import atomic_open, atomic_path, write_json
from personalir.data.ingest_lines import (
    BOM,
    check_duplicate_keys,
    open_lines,
    quarantine_line,
    quarantine_record,
    too_long,
    unparseable,
)
from personalir.data.ingest_records import BadRecord, MetaConverter, ReviewConverter, type_name
from personalir.data.ingest_schema import (
    DEFAULT_LIMITS,
    POLICIES,
    REPORT_SCHEMA_VERSION,
    IngestError,
)

__all__ = ["ingest_meta", "ingest_reviews", "main"]

_orjson_loads = orjson.loads
_OrjsonError = orjson.JSONDecodeError
log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Engine


def _default_quarantine_path(out_parquet: Path) -> Path:
    return out_parquet.with_name(out_parquet.stem + ".quarantine.jsonl")


def _ingest(
    src: str | os.PathLike,
    out_parquet: str | os.PathLike,
    convert: Callable[[dict, int], tuple],
    *,
    policy: str,
    quarantine_path: str | os.PathLike | None,
    report_path: str | os.PathLike | None,
    chunk_size: int,
    max_line_bytes: int,
    max_quarantine_fraction: float,
) -> dict:
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if max_line_bytes < 1:
        raise ValueError(f"max_line_bytes must be >= 1, got {max_line_bytes}")
    if not 0 <= max_quarantine_fraction <= 1:
        raise ValueError(
            f"max_quarantine_fraction must be in [0, 1], got {max_quarantine_fraction}"
        )
    src, out_parquet = Path(src), Path(out_parquet)
    strict = policy == "strict"
    if quarantine_path is None and not strict:
        quarantine_path = _default_quarantine_path(out_parquet)
    qpath = Path(quarantine_path) if quarantine_path is not None else None
    name = src.name
    schema = convert.schema
    by_reason: Counter[str] = Counter()
    by_field: Counter[str] = Counter()
    null_counts: Counter[str] = Counter()
    records_read = records_written = 0
    bom_stripped = False
    rows: list[tuple] = []
    first_bad: list[int] = []

    def flush(writer: pq.ParquetWriter) -> None:
        columns = list(zip(*rows, strict=True))
        arrays = [pa.array(col, type=f.type) for col, f in zip(columns, schema, strict=True)]
        table = pa.Table.from_arrays(arrays, schema=schema)
        for f, arr in zip(schema, arrays, strict=True):
            if f.nullable and arr.null_count:
                null_counts[f.name] += arr.null_count
        writer.write_table(table, row_group_size=len(rows))
        rows.clear()

    qctx = atomic_open(qpath) if qpath is not None else contextlib.nullcontext()
    with (
        open_lines(src) as (lines, compression),
        atomic_path(out_parquet, suffix=".parquet") as tmp_out,
        qctx as qfh,
    ):
        writer = pq.ParquetWriter(
            tmp_out, schema, compression="zstd", write_statistics=True, write_page_checksum=True
        )
        try:
            line_no = 0
            readline = lines.readline
            cap = max_line_bytes + 1  # the newline included
            for raw in iter(functools.partial(readline, cap), b""):
                line_no += 1
                try:
                    if raw[-1] != 10 and len(raw) == cap:  # 10: b"\n"
                        bad, raw = too_long(readline, raw)
                        raise bad
                    try:
                        obj = _orjson_loads(raw)
                    except _OrjsonError as exc:
                        if line_no == 1 and raw.startswith(BOM):
                            raw = raw[len(BOM) :]
                            bom_stripped = True
                            try:
                                obj = _orjson_loads(raw)
                            except _OrjsonError as exc2:
                                raise unparseable(raw, exc2) from None
                        else:
                            raise unparseable(raw, exc) from None
                    if type(obj) is not dict:
                        raise BadRecord(
                            "not_an_object", None, f"expected a JSON object, got {type_name(obj)}"
                        )
                    # No duplicate key when each colon is a top-level key's (the proof is at
                    # check_duplicate_keys, which handles every other line).
                    colons = len(raw) - len(raw.replace(b":", b""))  # see count_colons
                    if colons != len(obj):
                        check_duplicate_keys(raw, obj, colons)
                    row = convert(obj, line_no)
                except BadRecord as bad:
                    if strict:
                        raise IngestError(name, line_no, bad.reason, bad.detail) from None
                    by_reason[bad.reason] += 1
                    if len(first_bad) < 5:
                        first_bad.append(line_no)
                    if bad.field is not None:
                        by_field[f"{bad.reason}.{bad.field}"] += 1
                    qfh.write(quarantine_line(quarantine_record(name, line_no, bad, raw)))
                    continue
                rows.append(row)
                records_written += 1
                if len(rows) >= chunk_size:
                    flush(writer)
            records_read = line_no
            if rows:
                flush(writer)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise IngestError(name, None, "corrupt_gzip", str(exc) or type(exc).__name__) from exc
        finally:
            writer.close()

        quarantined = sum(by_reason.values())
        warnings = []
        if records_read == 0:
            if strict:
                raise IngestError(name, None, "empty_input", "the file holds no lines")
            warnings.append("empty_input: the file holds no lines")
            log.warning("%s: empty input: the file holds no lines", name)
        elif quarantined > max_quarantine_fraction * records_read:
            top = ", ".join(f"{k}: {v}" for k, v in by_reason.most_common(5))
            raise IngestError(
                name,
                None,
                "quarantine_rate",
                f"{quarantined} of {records_read} lines ({quarantined / records_read:.1%}) "
                f"quarantined, above max_quarantine_fraction {max_quarantine_fraction:g} "
                f"(data.ingest): has the input format changed? Reasons: {top}; first bad "
                f"lines: {', '.join(map(str, first_bad))}",
            )
        if records_read != records_written + quarantined:
            raise AssertionError(
                f"{name}: records_read={records_read} != written={records_written} + "
                f"quarantined={quarantined}"
            )
        on_disk = pq.ParquetFile(tmp_out).metadata.num_rows
        if on_disk != records_written:
            raise AssertionError(
                f"{name}: Parquet holds {on_disk} rows, expected {records_written}"
            )

    report = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "kind": convert.kind,
        "file": name,
        "compression": compression,
        "policy": policy,
        "chunk_size": chunk_size,
        "output": out_parquet.name,
        "quarantine": qpath.name if qpath is not None else None,
        "records_read": records_read,
        "records_written": records_written,
        "records_quarantined": quarantined,
        "quarantined_by_reason": dict(sorted(by_reason.items())),
        "quarantined_by_field": dict(sorted(by_field.items())),
        "null_counts": {f.name: null_counts.get(f.name, 0) for f in schema if f.nullable},
        "unknown_fields_dropped": dict(sorted(convert.unknown_fields.items())),
        "utf8_bom_stripped": bom_stripped,
        "empty_input": records_read == 0,
        "limits": {
            "max_line_bytes": max_line_bytes,
            "max_quarantine_fraction": max_quarantine_fraction,
            **convert.limits(),
        },
        "warnings": warnings,
        **convert.stats(),
    }
    if report_path is not None:
        write_json(report_path, report)
    return report


def ingest_reviews(
    src: str | os.PathLike,
    out_parquet: str | os.PathLike,
    *,
    policy: str = "quarantine",
    quarantine_path: str | os.PathLike | None = None,
    report_path: str | os.PathLike | None = None,
    chunk_size: int = 50_000,
    min_date: str = DEFAULT_LIMITS["min_date"],
    max_date: str = DEFAULT_LIMITS["max_date"],
    max_line_bytes: int = DEFAULT_LIMITS["max_line_bytes"],
    max_quarantine_fraction: float = DEFAULT_LIMITS["max_quarantine_fraction"],
) -> dict:
    """Ingest an Amazon Reviews 2023 review file into Parquet (:data:`REVIEW_SCHEMA`).

    ``quarantine_path`` defaults to ``<out stem>.quarantine.jsonl`` under the quarantine
    policy; under ``strict`` a quarantine file is written (empty) only when a path is given.
    The quality report is returned and, when ``report_path`` is given, written as JSON.
    Reviews dated outside ``[min_date, max_date)`` (ISO dates, UTC) are implausible; lines
    over ``max_line_bytes`` are not parsed; more than ``max_quarantine_fraction`` of the lines
    quarantined stops the ingest (``quarantine_rate``).
    """
    return _ingest(
        src,
        out_parquet,
        ReviewConverter(min_date, max_date),
        policy=policy,
        quarantine_path=quarantine_path,
        report_path=report_path,
        chunk_size=chunk_size,
        max_line_bytes=max_line_bytes,
        max_quarantine_fraction=max_quarantine_fraction,
    )


def ingest_meta(
    src: str | os.PathLike,
    out_parquet: str | os.PathLike,
    *,
    policy: str = "quarantine",
    quarantine_path: str | os.PathLike | None = None,
    report_path: str | os.PathLike | None = None,
    chunk_size: int = 50_000,
    min_date: str = DEFAULT_LIMITS["min_date"],
    max_date: str = DEFAULT_LIMITS["max_date"],
    max_line_bytes: int = DEFAULT_LIMITS["max_line_bytes"],
    max_quarantine_fraction: float = DEFAULT_LIMITS["max_quarantine_fraction"],
) -> dict:
    """Ingest an Amazon Reviews 2023 meta file into Parquet (:data:`META_SCHEMA`).

    Same policies, quarantine file, report and limits as :func:`ingest_reviews` (meta has no
    timestamps: the dates are accepted so both take the same ``data.ingest`` settings); the
    report adds ``meta_price`` (how each price was read) and ``details_values_stringified``.
    """
    del min_date, max_date  # meta records carry no dates
    return _ingest(
        src,
        out_parquet,
        MetaConverter(),
        policy=policy,
        quarantine_path=quarantine_path,
        report_path=report_path,
        chunk_size=chunk_size,
        max_line_bytes=max_line_bytes,
        max_quarantine_fraction=max_quarantine_fraction,
    )


def require_records(report: Mapping, src: str | os.PathLike) -> None:
    """Refuse a raw file that gave no records: later stages would fail on it far from here.

    Raises ``ValueError`` naming the file, how many lines were read and why the quarantined
    ones were set aside.
    """
    if report["records_written"]:
        return
    what = "products (the product catalogue is empty)" if report["kind"] == "meta" else "reviews"
    reasons = ", ".join(f"{k}: {v}" for k, v in report["quarantined_by_reason"].items())
    if report.get("empty_input"):
        reasons = "the file is empty"
    raise ValueError(
        f"{src}: 0 {what}; {report['records_read']} line(s) read, "
        f"{report['records_quarantined']} quarantined" + (f" ({reasons})" if reasons else "")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("reviews", "meta"))
    parser.add_argument("src", type=Path)
    parser.add_argument("out", type=Path, help="output Parquet path")
    parser.add_argument("--policy", choices=POLICIES, default="quarantine")
    parser.add_argument("--quarantine", type=Path, default=None)
    parser.add_argument("--report", type=Path, default=None)
    parser.add_argument("--chunk-size", type=int, default=50_000)
    parser.add_argument("--min-date", default=DEFAULT_LIMITS["min_date"])
    parser.add_argument("--max-date", default=DEFAULT_LIMITS["max_date"])
    parser.add_argument("--max-line-bytes", type=int, default=DEFAULT_LIMITS["max_line_bytes"])
    parser.add_argument(
        "--max-quarantine-fraction", type=float, default=DEFAULT_LIMITS["max_quarantine_fraction"]
    )
    args = parser.parse_args(argv)
    fn = ingest_reviews if args.kind == "reviews" else ingest_meta
    try:
        report = fn(
            args.src,
            args.out,
            policy=args.policy,
            quarantine_path=args.quarantine,
            report_path=args.report,
            chunk_size=args.chunk_size,
            min_date=args.min_date,
            max_date=args.max_date,
            max_line_bytes=args.max_line_bytes,
            max_quarantine_fraction=args.max_quarantine_fraction,
        )
    except IngestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
