"""Amazon Reviews 2023 as the ingest step stores it: Parquet schemas, reason codes, errors.

The official fields each file type may hold, the typed columns they become, and the stable
reason codes a rejected line is counted under (:mod:`personalir.data.ingest_records` runs the
checks, :mod:`personalir.data.ingest` streams files through them).

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

Reason codes (stable; checks run in this order, the first failing one is reported; field
checks go through the fields in the official schema order, each field's checks in the order
listed here)
- ``line_too_long``: the line holds more than ``max_line_bytes`` bytes (newline excluded); it
  is not parsed; the quarantine file keeps its first bytes (up to 1 KiB, ``raw_truncated``).
- ``blank_line``: empty or whitespace-only line.
- ``truncated_final_line``: last line has no newline and does not parse.
- ``nul_byte``: a raw NUL byte in the line.
- ``invalid_utf8``: the line is not valid UTF-8.
- ``lone_surrogate``: a ``\\uD800``-``\\uDFFF`` escape without its pair (not storable as UTF-8).
- ``invalid_json``: the line does not parse as JSON.
- ``not_an_object``: valid JSON that is not an object (array, number, string, ...).
- ``duplicate_key``: an object (at any depth) names the same key twice; JSON parsers keep one
  of the values silently, so which one the source meant is unknown.
- ``missing_field``: a required field is absent or null.
- ``wrong_type``: a field has the wrong JSON type (``"rating": "five"``, a bool where an int
  belongs, ``features`` not a list of strings, ...).
- ``out_of_range``: rating outside 1..5, average_rating outside 0..5, negative or
  non-finite counts/prices, timestamp <= 0.
- ``non_integral_rating``: a review rating that is not a whole number of stars (``4.5``; the
  official schema has 1-5 stars; ``5.0`` is accepted).
- ``implausible_timestamp``: a review timestamp outside the configured plausible range
  ``[min_date, max_date)`` (``data.ingest``): seconds where milliseconds belong (1970 dates)
  or a date in the future. The detail says which, and the date it would be.
- ``empty_text``: review text empty, or only whitespace and zero-width characters.
- ``empty_title``: a title that is present but empty or only whitespace and zero-width
  characters (a review's title may be absent or null; a product's title is required).
- ``empty_id``: user_id or parent_asin empty or whitespace only.
- ``bad_id``: user_id, parent_asin or asin holding whitespace, ``/`` or a control character
  (ids name files and join keys downstream).
- ``duplicate_review``: same review_id as an earlier record (same user_id, parent_asin,
  timestamp, or a 64-bit hash collision, which would break review_id uniqueness anyway); the
  first is kept.
- ``duplicate_product``: same meta parent_asin as an earlier record; the first is kept.

File-level problems raise :class:`IngestError` under both policies (no output is written):
``not_gzip`` (a ``.gz`` name without a gzip header), ``corrupt_gzip`` (truncated or damaged
stream: an unknown amount of data is missing, so nothing could honestly be counted) and
``quarantine_rate`` (more than ``max_quarantine_fraction`` of the lines were quarantined: the
input format has probably changed, and a run on what is left would mislead). An empty input
file (no lines) is ``empty_input``: an error under ``strict``, a warning in the report
(``empty_input: true``, ``warnings``) under ``quarantine``.
"""

from __future__ import annotations

import hashlib

import pyarrow as pa

__all__ = [
    "DEFAULT_LIMITS",
    "FILE_REASONS",
    "IngestError",
    "META_SCHEMA",
    "POLICIES",
    "REASONS",
    "REVIEW_SCHEMA",
    "review_id",
]

POLICIES = ("strict", "quarantine")
REASONS = (
    "line_too_long",
    "blank_line",
    "truncated_final_line",
    "nul_byte",
    "invalid_utf8",
    "lone_surrogate",
    "invalid_json",
    "not_an_object",
    "duplicate_key",
    "missing_field",
    "wrong_type",
    "out_of_range",
    "non_integral_rating",
    "implausible_timestamp",
    "empty_text",
    "empty_title",
    "empty_id",
    "bad_id",
    "duplicate_review",
    "duplicate_product",
)
#: File-level reasons of :class:`IngestError` (no line number).
FILE_REASONS = ("not_gzip", "corrupt_gzip", "quarantine_rate", "empty_input")
#: Plausibility limits of ``data.ingest`` (the schema's defaults; see the config docs).
DEFAULT_LIMITS = {
    "min_date": "1995-01-01",
    "max_date": "2030-01-01",
    "max_line_bytes": 1 << 20,
    "max_quarantine_fraction": 0.05,
}
REPORT_SCHEMA_VERSION = 2

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

REVIEW_FIELDS = frozenset(
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
META_FIELDS = frozenset(
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


_sha1 = hashlib.sha1


class IngestError(ValueError):
    """A bad record under the ``strict`` policy, or a file-level problem under either policy.

    The message reads ``<file>:<line>: <reason>: <detail>`` (line omitted for file-level
    problems such as a corrupt gzip stream).
    """

    def __init__(self, file: str, line: int | None, reason: str, detail: str):
        self.file, self.line, self.reason, self.detail = file, line, reason, detail
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {reason}: {detail}")


def review_id(user_id: str, parent_asin: str, timestamp: int) -> str:
    """Stable review key: first 16 hex digits of sha1(user_id US parent_asin US timestamp).

    US is the ASCII unit separator ``\\x1f``, which cannot be confused with id characters.
    """
    return _review_digest(user_id, parent_asin, timestamp)[:8].hex()


def _review_digest(user_id: str, parent_asin: str, timestamp: int) -> bytes:
    # Keep in step with the inlined copy in ReviewConverter.__call__ (ingest_records) (hot path).
    return _sha1(f"{user_id}\x1f{parent_asin}\x1f{timestamp}".encode()).digest()
