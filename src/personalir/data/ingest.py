"""Stream Amazon Reviews 2023 JSONL (plain or gzip) into typed Parquet, counting every bad line.

Input is read line by line in bounded memory (rows are buffered ``chunk_size`` at a time and
written as one Parquet row group each). Gzip is detected by its magic bytes; a ``.gz`` name
without them is an error (usually an HTML error page saved under the archive's name). Lines are
parsed by orjson (strict RFC 8259: ``NaN``/``Infinity`` are invalid JSON; integers beyond 64 bits
become floats); the error path re-reads a rejected line to name the reason.

Output schemas (column order as listed; ``!`` marks non-nullable columns)
-----------------------------------------------------------------------
Reviews (:data:`REVIEW_SCHEMA`): ``review_id!`` string (see :func:`review_id`),
``user_id!``, ``parent_asin!``, ``asin`` string, ``timestamp!`` int64 (Unix ms, as in the
source), ``rating!`` float64, ``title`` string, ``text!`` string, ``helpful_vote`` int64,
``verified_purchase`` bool, ``images_json`` string, ``source_line!`` int64.

Meta (:data:`META_SCHEMA`): ``parent_asin!``, ``title!``, ``main_category``, ``store`` string,
``average_rating`` float64, ``rating_number`` int64, ``price`` float64, ``price_raw`` string,
``features``, ``description``, ``categories`` list<string>, ``details`` map<string,string>,
``images_json``, ``videos_json``, ``bought_together_json`` string, ``source_line!`` int64.

Choices worth knowing
- Nested ``images``/``videos``/``bought_together`` are kept as compact JSON text (``*_json``,
  key order as in the source): nothing downstream reads inside them and a JSON string cannot
  lose a field that a fixed struct type would not know about. Absent/null -> null.
- ``details`` values that are not strings are stringified as compact JSON (``12`` -> ``"12"``,
  ``true`` -> ``"true"``, lists/dicts -> their JSON); a JSON null stays a null map value.
  The report counts the stringified values.
- ``price``: a number is kept; a string is parsed when it is a plain amount (``"$1,299.99"``,
  ``"12.99"``); ``"None"``, ``""``, ``"N/A"``, ``"-"`` become null; anything else (ranges such as
  ``"$10 - $20"``) becomes null. ``price_raw`` keeps the source string whenever the source was a
  string, so no information is lost; the report counts each outcome (``meta_price``).
- Required fields must be present and non-null; other official fields may be absent or null
  and become null. Reviews require rating, text, parent_asin, user_id, timestamp; meta requires
  parent_asin and title. Fields outside the official schema are dropped and counted
  (``unknown_fields_dropped``).
- ``records_read`` counts physical lines (blank ones included). A UTF-8 BOM on line 1 is
  stripped and noted in the report.

Reason codes (stable; checks run in this order, the first failing one is reported; field
checks go through the fields in the official schema order)
- ``blank_line``: empty or whitespace-only line.
- ``truncated_final_line``: last line has no newline and does not parse.
- ``nul_byte``: a raw NUL byte in the line.
- ``invalid_utf8``: the line is not valid UTF-8.
- ``lone_surrogate``: a ``\\uD800``-``\\uDFFF`` escape without its pair (not storable as UTF-8).
- ``invalid_json``: the line does not parse as JSON.
- ``not_an_object``: valid JSON that is not an object (array, number, string, ...).
- ``missing_field``: a required field is absent or null.
- ``wrong_type``: a field has the wrong JSON type (``"rating": "five"``, a bool where an int
  belongs, ``features`` not a list of strings, ...).
- ``out_of_range``: rating outside 1..5, average_rating outside 0..5, negative or
  non-finite counts/prices, timestamp <= 0 or after 2100-01-01.
- ``empty_text``: review text empty or whitespace only.
- ``empty_id``: user_id or parent_asin empty or whitespace only.
- ``duplicate_review``: same review_id as an earlier record (same user_id, parent_asin,
  timestamp, or a 64-bit hash collision, which would break review_id uniqueness anyway); the
  first is kept.
- ``duplicate_product``: same meta parent_asin as an earlier record; the first is kept.

File-level problems raise :class:`IngestError` under both policies (no output is written):
``not_gzip`` (a ``.gz`` name without a gzip header) and ``corrupt_gzip`` (truncated or damaged
stream: an unknown amount of data is missing, so nothing could honestly be counted).

Policies: ``strict`` raises :class:`IngestError` at the first bad line (nothing is written);
``quarantine`` writes bad lines to a JSONL file (``{file, line, reason, field, detail, raw,
raw_lossy[, raw_base64]}``; ``raw`` is the line without its ``\\n``, invalid bytes shown as
``\\xNN`` and ``raw_lossy`` true, with the exact bytes in ``raw_base64``) and counts them in the
quality report. ``records_read == records_written + sum(quarantined_by_reason)`` is checked
before anything is published.

Command line: ``python -m personalir.data.ingest {reviews,meta} SRC OUT [--policy P]
[--quarantine Q] [--report R] [--chunk-size N]`` (exit 1 with the IngestError message).

Determinism: for the same input bytes and ``chunk_size`` the Parquet bytes are identical
(input order kept, no metadata that varies between runs; pyarrow's version string is in the
footer). Memory: one chunk of rows plus the duplicate-detection set, which grows with the
input (one 16-character review_id per accepted review, about 80 bytes each in CPython, so
~0.8 GB per 10M reviews; one parent_asin per product for meta).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import re
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from personalir.common.io import atomic_open, atomic_path, write_json

__all__ = [
    "IngestError",
    "META_SCHEMA",
    "POLICIES",
    "REASONS",
    "REVIEW_SCHEMA",
    "ingest_meta",
    "ingest_reviews",
    "review_id",
]

POLICIES = ("strict", "quarantine")
REASONS = (
    "blank_line",
    "truncated_final_line",
    "nul_byte",
    "invalid_utf8",
    "lone_surrogate",
    "invalid_json",
    "not_an_object",
    "missing_field",
    "wrong_type",
    "out_of_range",
    "empty_text",
    "empty_id",
    "duplicate_review",
    "duplicate_product",
)
REPORT_SCHEMA_VERSION = 1

_STR_LIST = pa.list_(pa.string())

REVIEW_SCHEMA = pa.schema(
    [
        pa.field("review_id", pa.string(), nullable=False),
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("parent_asin", pa.string(), nullable=False),
        pa.field("asin", pa.string()),
        pa.field("timestamp", pa.int64(), nullable=False),
        pa.field("rating", pa.float64(), nullable=False),
        pa.field("title", pa.string()),
        pa.field("text", pa.string(), nullable=False),
        pa.field("helpful_vote", pa.int64()),
        pa.field("verified_purchase", pa.bool_()),
        pa.field("images_json", pa.string()),
        pa.field("source_line", pa.int64(), nullable=False),
    ]
)

META_SCHEMA = pa.schema(
    [
        pa.field("parent_asin", pa.string(), nullable=False),
        pa.field("title", pa.string(), nullable=False),
        pa.field("main_category", pa.string()),
        pa.field("store", pa.string()),
        pa.field("average_rating", pa.float64()),
        pa.field("rating_number", pa.int64()),
        pa.field("price", pa.float64()),
        pa.field("price_raw", pa.string()),
        pa.field("features", _STR_LIST),
        pa.field("description", _STR_LIST),
        pa.field("categories", _STR_LIST),
        pa.field("details", pa.map_(pa.string(), pa.string())),
        pa.field("images_json", pa.string()),
        pa.field("videos_json", pa.string()),
        pa.field("bought_together_json", pa.string()),
        pa.field("source_line", pa.int64(), nullable=False),
    ]
)

_REVIEW_FIELDS = frozenset(
    {
        "rating",
        "title",
        "text",
        "images",
        "asin",
        "parent_asin",
        "user_id",
        "timestamp",
        "helpful_vote",
        "verified_purchase",
    }
)
_META_FIELDS = frozenset(
    {
        "main_category",
        "title",
        "average_rating",
        "rating_number",
        "features",
        "description",
        "price",
        "images",
        "videos",
        "store",
        "categories",
        "details",
        "parent_asin",
        "bought_together",
    }
)

_MAX_TIMESTAMP_MS = 4_102_444_800_000  # 2100-01-01T00:00:00Z
_INT64_MAX = 2**63 - 1
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_NUL = b"\x00"
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_PRICE_AMOUNT = re.compile(r"\$?\s*((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)")
_PRICE_NULL_STRINGS = frozenset({"", "none", "null", "nan", "n/a", "na", "-", "--", "—"})
_orjson_loads = orjson.loads
_dumps = orjson.dumps
_sha1 = hashlib.sha1
_OrjsonError = orjson.JSONDecodeError


def _compact_json(value: Any) -> str:
    return _dumps(value).decode()


class IngestError(ValueError):
    """A bad record under the ``strict`` policy, or a file-level problem under either policy.

    The message reads ``<file>:<line>: <reason>: <detail>`` (line omitted for file-level
    problems such as a corrupt gzip stream).
    """

    def __init__(self, file: str, line: int | None, reason: str, detail: str):
        self.file, self.line, self.reason, self.detail = file, line, reason, detail
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {reason}: {detail}")


class _Bad(Exception):
    """Internal: a record failed validation."""

    __slots__ = ("reason", "field", "detail")

    def __init__(self, reason: str, field: str | None, detail: str):
        self.reason, self.field, self.detail = reason, field, detail


def review_id(user_id: str, parent_asin: str, timestamp: int) -> str:
    """Stable review key: first 16 hex digits of sha1(user_id US parent_asin US timestamp).

    US is the ASCII unit separator ``\\x1f``, which cannot be confused with id characters.
    """
    return _review_digest(user_id, parent_asin, timestamp)[:8].hex()


def _review_digest(user_id: str, parent_asin: str, timestamp: int) -> bytes:
    # Keep in step with the inlined copy in _ReviewConverter.__call__ (hot path).
    return _sha1(f"{user_id}\x1f{parent_asin}\x1f{timestamp}".encode()).digest()


# ---------------------------------------------------------------------------------------------
# Field checks (small helpers for the cold fields; the hot review fields are inlined)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _required(obj: dict, name: str) -> Any:
    value = obj.get(name)
    if value is None:
        got = "absent" if name not in obj else "null"
        raise _Bad("missing_field", name, f"{name!r} is required (got {got})")
    return value


def _opt_str(obj: dict, name: str) -> str | None:
    value = obj.get(name)
    if value is None or type(value) is str:
        return value
    raise _Bad("wrong_type", name, f"{name!r} must be a string, got {_type_name(value)}")


def _is_object_list(value: Any) -> bool:
    return type(value) is list and all(type(item) is dict for item in value)


def _number(obj: dict, name: str, lo: float, hi: float, *, required: bool = False) -> float | None:
    value = _required(obj, name) if required else obj.get(name)
    if value is None:
        return None
    if type(value) is not float and type(value) is not int:
        raise _Bad("wrong_type", name, f"{name!r} must be a number, got {_type_name(value)}")
    if not lo <= value <= hi:
        raise _Bad("out_of_range", name, f"{name!r} must be in [{lo}, {hi}], got {value!r}")
    return float(value)


def _opt_count(obj: dict, name: str) -> int | None:
    value = obj.get(name)
    if value is None:
        return None
    if type(value) is not int:
        raise _Bad("wrong_type", name, f"{name!r} must be an integer, got {_type_name(value)}")
    if not 0 <= value <= _INT64_MAX:
        raise _Bad("out_of_range", name, f"{name!r} must be in [0, 2**63), got {value!r}")
    return value


def _opt_str_list(obj: dict, name: str) -> list[str] | None:
    value = obj.get(name)
    if value is None:
        return None
    if type(value) is not list:
        raise _Bad("wrong_type", name, f"{name!r} must be a list, got {_type_name(value)}")
    for item in value:
        if type(item) is not str:
            raise _Bad("wrong_type", name, f"{name!r} must hold strings, found {_type_name(item)}")
    return value


def _opt_json_list(obj: dict, name: str, of_objects: bool) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if type(value) is not list:
        raise _Bad("wrong_type", name, f"{name!r} must be a list, got {_type_name(value)}")
    if not value:
        return "[]"
    if of_objects:
        for item in value:
            if type(item) is not dict:
                raise _Bad(
                    "wrong_type", name, f"{name!r} must hold objects, found {_type_name(item)}"
                )
    return _compact_json(value)


def _non_empty_id(obj: dict, name: str) -> str:
    value = _required(obj, name)
    if type(value) is not str:
        raise _Bad("wrong_type", name, f"{name!r} must be a string, got {_type_name(value)}")
    if not value or value.isspace():
        raise _Bad("empty_id", name, f"{name!r} is empty")
    return value


# ---------------------------------------------------------------------------------------------
# Record converters: dict -> output row tuple in schema order


def _diagnose_review(obj: dict) -> None:
    """Raise the first failing check of a review, in schema order (the slow, readable path)."""
    _number(obj, "rating", 1, 5, required=True)
    _opt_str(obj, "title")
    text = _required(obj, "text")
    if type(text) is not str:
        raise _Bad("wrong_type", "text", f"'text' must be a string, got {_type_name(text)}")
    if not text or text.isspace():
        raise _Bad("empty_text", "text", "'text' is empty or whitespace only")
    _opt_json_list(obj, "images", of_objects=True)
    _opt_str(obj, "asin")
    _non_empty_id(obj, "parent_asin")
    _non_empty_id(obj, "user_id")
    timestamp = _required(obj, "timestamp")
    if type(timestamp) is not int:
        raise _Bad(
            "wrong_type",
            "timestamp",
            f"'timestamp' must be an integer (Unix ms), got {_type_name(timestamp)}",
        )
    if not 0 < timestamp < _MAX_TIMESTAMP_MS:
        raise _Bad(
            "out_of_range",
            "timestamp",
            f"'timestamp' must be in (0, {_MAX_TIMESTAMP_MS}) ms, got {timestamp!r}",
        )
    _opt_count(obj, "helpful_vote")
    verified = obj.get("verified_purchase")
    if verified is not None and type(verified) is not bool:
        raise _Bad(
            "wrong_type",
            "verified_purchase",
            f"'verified_purchase' must be a boolean, got {_type_name(verified)}",
        )


class _ReviewConverter:
    """Review dict -> row. One combined predicate accepts good records; any failure is handed
    to :func:`_diagnose_review`, which names the first failing check (it must raise)."""

    schema = REVIEW_SCHEMA
    kind = "review"

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.unknown_fields: Counter[str] = Counter()

    def stats(self) -> dict:
        return {}

    def __call__(self, obj: dict, line_no: int) -> tuple:
        get = obj.get
        rating = get("rating")
        title = get("title")
        text = get("text")
        images = get("images")
        asin = get("asin")
        parent_asin = get("parent_asin")
        user_id = get("user_id")
        timestamp = get("timestamp")
        helpful_vote = get("helpful_vote")
        verified = get("verified_purchase")
        if not (
            (type(rating) is float or type(rating) is int)
            and 1 <= rating <= 5
            and (title is None or type(title) is str)
            and type(text) is str
            and text
            and not text.isspace()
            and (images is None or images == [] or _is_object_list(images))
            and (asin is None or type(asin) is str)
            and type(parent_asin) is str
            and parent_asin
            and not parent_asin.isspace()
            and type(user_id) is str
            and user_id
            and not user_id.isspace()
            and type(timestamp) is int
            and 0 < timestamp < _MAX_TIMESTAMP_MS
            and (
                helpful_vote is None
                or (type(helpful_vote) is int and 0 <= helpful_vote <= _INT64_MAX)
            )
            and (verified is None or type(verified) is bool)
        ):
            _diagnose_review(obj)
            raise AssertionError(f"review rejected by the fast path but not diagnosed: {obj!r}")
        if not _REVIEW_FIELDS.issuperset(obj):
            self.unknown_fields.update(k for k in obj if k not in _REVIEW_FIELDS)
        if images is not None:
            images = "[]" if not images else _dumps(images).decode()
        rid = _sha1(f"{user_id}\x1f{parent_asin}\x1f{timestamp}".encode()).digest()[:8].hex()
        if rid in self.seen:
            raise _Bad(
                "duplicate_review",
                None,
                f"review_id {rid} (same user_id, parent_asin, timestamp) was already seen; "
                "kept the first",
            )
        self.seen.add(rid)
        return (
            rid,
            user_id,
            parent_asin,
            asin,
            timestamp,
            float(rating),
            title,
            text,
            helpful_vote,
            verified,
            images,
            line_no,
        )


class _MetaConverter:
    schema = META_SCHEMA
    kind = "meta"

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.unknown_fields: Counter[str] = Counter()
        self.price_outcomes: Counter[str] = Counter()
        self.details_stringified = 0

    def stats(self) -> dict:
        outcomes = ("absent_or_null", "number", "string_parsed", "string_null", "string_unparsed")
        return {
            "meta_price": {k: self.price_outcomes.get(k, 0) for k in outcomes},
            "details_values_stringified": self.details_stringified,
        }

    def _price(self, obj: dict) -> tuple[float | None, str | None, str]:
        value = obj.get("price")
        if value is None:
            return None, None, "absent_or_null"
        t = type(value)
        if t is float or t is int:
            if not 0 <= value < math.inf:
                raise _Bad("out_of_range", "price", f"'price' must be >= 0, got {value!r}")
            return float(value), None, "number"
        if t is not str:
            raise _Bad(
                "wrong_type",
                "price",
                f"'price' must be a number or string, got {_type_name(value)}",
            )
        stripped = value.strip()
        if stripped.lower() in _PRICE_NULL_STRINGS:
            return None, value, "string_null"
        match = _PRICE_AMOUNT.fullmatch(stripped)
        if match is None:
            return None, value, "string_unparsed"
        return float(match.group(1).replace(",", "")), value, "string_parsed"

    def _details(self, obj: dict) -> list[tuple[str, str | None]] | None:
        value = obj.get("details")
        if value is None:
            return None
        if type(value) is not dict:
            raise _Bad(
                "wrong_type", "details", f"'details' must be an object, got {_type_name(value)}"
            )
        items = []
        for k, v in value.items():
            if v is not None and type(v) is not str:
                v = _compact_json(v)
                self.details_stringified += 1
            items.append((k, v))
        return items

    def __call__(self, obj: dict, line_no: int) -> tuple:
        main_category = _opt_str(obj, "main_category")
        title = _required(obj, "title")
        if type(title) is not str:
            raise _Bad("wrong_type", "title", f"'title' must be a string, got {_type_name(title)}")
        average_rating = _number(obj, "average_rating", 0.0, 5.0)
        rating_number = _opt_count(obj, "rating_number")
        features = _opt_str_list(obj, "features")
        description = _opt_str_list(obj, "description")
        price, price_raw, price_outcome = self._price(obj)
        images = _opt_json_list(obj, "images", of_objects=True)
        videos = _opt_json_list(obj, "videos", of_objects=True)
        store = _opt_str(obj, "store")
        categories = _opt_str_list(obj, "categories")
        details = self._details(obj)
        parent_asin = _non_empty_id(obj, "parent_asin")
        bought_together = _opt_json_list(obj, "bought_together", of_objects=False)
        if parent_asin in self.seen:
            raise _Bad(
                "duplicate_product",
                None,
                f"parent_asin {parent_asin!r} was already seen; kept the first",
            )
        self.seen.add(parent_asin)
        self.price_outcomes[price_outcome] += 1
        if not _META_FIELDS.issuperset(obj):
            self.unknown_fields.update(k for k in obj if k not in _META_FIELDS)
        return (
            parent_asin,
            title,
            main_category,
            store,
            average_rating,
            rating_number,
            price,
            price_raw,
            features,
            description,
            categories,
            details,
            images,
            videos,
            bought_together,
            line_no,
        )


# ---------------------------------------------------------------------------------------------
# Source reading


@contextlib.contextmanager
def _open_lines(src: Path) -> Iterator[tuple[io.BufferedIOBase, str]]:
    """Yield a binary line iterator over ``src`` (gzip detected by magic) and its compression."""
    with open(src, "rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        if magic == _GZIP_MAGIC:
            # A big BufferedReader on top keeps line splitting in C.
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                yield io.BufferedReader(gz, buffer_size=1 << 20), "gzip"
        elif src.name.endswith(".gz"):
            raise IngestError(src.name, None, "not_gzip", "name ends in .gz but no gzip header")
        else:
            yield raw, "none"


def _unparseable(raw: bytes, exc: Exception) -> _Bad:
    """Name why orjson rejected ``raw`` (the error path only, so it may be slow)."""
    if not raw.strip():
        return _Bad("blank_line", None, "empty or whitespace-only line")
    if not raw.endswith(b"\n"):
        return _Bad(
            "truncated_final_line", None, f"last line has no newline and does not parse ({exc})"
        )
    if _NUL in raw:
        return _Bad("nul_byte", None, f"raw NUL byte at offset {raw.index(_NUL)}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return _Bad("invalid_utf8", None, f"invalid UTF-8 at byte {err.start}: {err.reason}")
    if _SURROGATE_ESCAPE.search(raw):
        try:
            lenient = json.loads(text)
        except ValueError:
            pass
        else:
            if _has_lone_surrogate(lenient):
                return _Bad("lone_surrogate", None, "a \\uD800-\\uDFFF escape has no pair")
    return _Bad("invalid_json", None, str(exc))


def _has_lone_surrogate(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _quarantine_record(file: str, line: int, bad: _Bad, raw: bytes) -> dict:
    body = raw[:-1] if raw.endswith(b"\n") else raw
    try:
        text, lossy = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, lossy = body.decode("utf-8", "backslashreplace"), True
    rec = {
        "file": file,
        "line": line,
        "reason": bad.reason,
        "field": bad.field,
        "detail": bad.detail,
        "raw": text,
        "raw_lossy": lossy,
    }
    if lossy:
        rec["raw_base64"] = base64.b64encode(body).decode("ascii")
    return rec


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
) -> dict:
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
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
        _open_lines(src) as (lines, compression),
        atomic_path(out_parquet, suffix=".parquet") as tmp_out,
        qctx as qfh,
    ):
        writer = pq.ParquetWriter(tmp_out, schema, compression="zstd", write_statistics=True)
        try:
            line_no = 0
            for raw in lines:
                line_no += 1
                try:
                    try:
                        obj = _orjson_loads(raw)
                    except _OrjsonError as exc:
                        if line_no == 1 and raw.startswith(_BOM):
                            raw = raw[len(_BOM) :]
                            bom_stripped = True
                            try:
                                obj = _orjson_loads(raw)
                            except _OrjsonError as exc2:
                                raise _unparseable(raw, exc2) from None
                        else:
                            raise _unparseable(raw, exc) from None
                    if type(obj) is not dict:
                        raise _Bad(
                            "not_an_object", None, f"expected a JSON object, got {_type_name(obj)}"
                        )
                    row = convert(obj, line_no)
                except _Bad as bad:
                    if strict:
                        raise IngestError(name, line_no, bad.reason, bad.detail) from None
                    by_reason[bad.reason] += 1
                    if bad.field is not None:
                        by_field[f"{bad.reason}.{bad.field}"] += 1
                    qfh.write(
                        json.dumps(_quarantine_record(name, line_no, bad, raw), ensure_ascii=False)
                        + "\n"
                    )
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
) -> dict:
    """Ingest an Amazon Reviews 2023 review file into Parquet (:data:`REVIEW_SCHEMA`).

    ``quarantine_path`` defaults to ``<out stem>.quarantine.jsonl`` under the quarantine
    policy; under ``strict`` a quarantine file is written (empty) only when a path is given.
    The quality report is returned and, when ``report_path`` is given, written as JSON.
    """
    return _ingest(
        src,
        out_parquet,
        _ReviewConverter(),
        policy=policy,
        quarantine_path=quarantine_path,
        report_path=report_path,
        chunk_size=chunk_size,
    )


def ingest_meta(
    src: str | os.PathLike,
    out_parquet: str | os.PathLike,
    *,
    policy: str = "quarantine",
    quarantine_path: str | os.PathLike | None = None,
    report_path: str | os.PathLike | None = None,
    chunk_size: int = 50_000,
) -> dict:
    """Ingest an Amazon Reviews 2023 meta file into Parquet (:data:`META_SCHEMA`).

    Same policies, quarantine file and report as :func:`ingest_reviews`; the report adds
    ``meta_price`` (how each price was read) and ``details_values_stringified``.
    """
    return _ingest(
        src,
        out_parquet,
        _MetaConverter(),
        policy=policy,
        quarantine_path=quarantine_path,
        report_path=report_path,
        chunk_size=chunk_size,
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
        )
    except IngestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
