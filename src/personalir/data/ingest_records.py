"""Validate one parsed JSON object and convert it to a Parquet row of the ingest step.

Field checks and the review/meta converters (dict -> row tuple in schema order, see
:mod:`personalir.data.ingest_schema`). A failing check raises :class:`BadRecord` with its
reason code; the streaming driver (:mod:`personalir.data.ingest`) counts or quarantines it.

Choices worth knowing
- Nested ``images``/``videos``/``bought_together`` are kept as compact JSON text (``*_json``,
  key order as in the source): nothing downstream reads inside them and a JSON string cannot
  lose a field that a fixed struct type would not know about. Absent/null -> null.
- ``details`` values that are not strings are stringified as compact JSON (``12`` -> ``"12"``,
  ``true`` -> ``"true"``, lists/dicts -> their JSON); a JSON null stays a null map value.
  The report counts the stringified values.
- ``price``: a number is kept; a plain amount string is parsed (``"$1,299.99"``); anything
  else (``"N/A"``, ranges such as ``"$10 - $20"``) becomes null, ``price_raw`` keeping the
  source string; the report counts each outcome (``meta_price``).
- Required fields must be present and non-null; other official fields may be absent or null
  and become null. Reviews require rating, text, parent_asin, user_id, timestamp; meta requires
  parent_asin and title. Fields outside the official schema are dropped and counted
  (``unknown_fields_dropped``).
- ``records_read`` counts physical lines (blank ones included); a UTF-8 BOM on line 1 is
  stripped and noted. NUL and zero-width characters: refused in ids, counted in texts.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import re
from collections import Counter
from typing import Any

import orjson

from personalir.data.ingest_schema import (
    DEFAULT_LIMITS,
    META_FIELDS,
    META_SCHEMA,
    REVIEW_FIELDS,
    REVIEW_SCHEMA,
)
from personalir.data.invisible import INVISIBLE, ZERO_WIDTH, invisible_counts

_INT64_MAX = 2**63 - 1
_RATINGS = frozenset((1, 2, 3, 4, 5))  # 5.0 == 5: a float star count is accepted when whole
_BLANK_START = frozenset([chr(c) for c in range(0x3000 + 1) if chr(c).isspace()] + list(ZERO_WIDTH))
_CONTENT = re.compile(rf"[^\s{ZERO_WIDTH}]")
#: An id: no whitespace, no ``/`` (ids become file names and join keys), no control character
#: and no zero-width character (two ids that look the same must be the same id).
_ID = re.compile(rf"[^\s/\x00-\x1f\x7f{ZERO_WIDTH}]+")
_PRICE_AMOUNT = re.compile(r"\$?\s*((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)")
_PRICE_NULL_STRINGS = frozenset({"", "none", "null", "nan", "n/a", "na", "-", "--", "—"})
_dumps = orjson.dumps
try:  # CPython's own SHA-1: the same digest, less per-call overhead than OpenSSL's
    from _sha1 import sha1 as _sha1
except ImportError:  # pragma: no cover - another Python
    _sha1 = hashlib.sha1

# The review fields as orjson returns them: its key cache hands back the same string objects
# for the same key, so the lookups below match by identity instead of comparing characters.
# Only a speed-up: a key that is equal but not identical (after a cache eviction) still matches.
(
    _K_RATING,
    _K_TITLE,
    _K_TEXT,
    _K_IMAGES,
    _K_ASIN,
    _K_PARENT_ASIN,
    _K_USER_ID,
    _K_TIMESTAMP,
    _K_HELPFUL_VOTE,
    _K_VERIFIED_PURCHASE,
) = _REVIEW_KEY_ORDER = tuple(
    orjson.loads(
        b'{"rating":0,"title":0,"text":0,"images":0,"asin":0,"parent_asin":0,"user_id":0,'
        b'"timestamp":0,"helpful_vote":0,"verified_purchase":0}'
    )
)
_REVIEW_KEYS = frozenset(_REVIEW_KEY_ORDER)


def _compact_json(value: Any) -> str:
    return _dumps(value).decode()


def has_content(value: str) -> bool:
    """True unless ``value`` is empty or only whitespace and zero-width characters."""
    return _CONTENT.search(value) is not None


def date_ms(iso_date: str) -> int:
    """``YYYY-MM-DD`` (UTC midnight) as Unix milliseconds."""
    day = datetime.date.fromisoformat(iso_date)
    return (
        int(datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC).timestamp()) * 1000
    )


def _ms_date(ms: int) -> str:
    try:
        return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).date().isoformat()
    except (OverflowError, OSError, ValueError):
        return "beyond the calendar"


class BadRecord(Exception):
    """A record failed validation: its reason code, the field (if any) and a message."""

    __slots__ = ("reason", "field", "detail")

    def __init__(self, reason: str, field: str | None, detail: str):
        self.reason, self.field, self.detail = reason, field, detail


# ---------------------------------------------------------------------------------------------
# Field checks (small helpers for the cold fields; the hot review fields are inlined)


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _required(obj: dict, name: str) -> Any:
    value = obj.get(name)
    if value is None:
        got = "absent" if name not in obj else "null"
        raise BadRecord("missing_field", name, f"{name!r} is required (got {got})")
    return value


def _opt_str(obj: dict, name: str) -> str | None:
    value = obj.get(name)
    if value is None or type(value) is str:
        return value
    raise BadRecord("wrong_type", name, f"{name!r} must be a string, got {type_name(value)}")


def _is_object_list(value: Any) -> bool:
    return type(value) is list and all(type(item) is dict for item in value)


def _number(obj: dict, name: str, lo: float, hi: float, *, required: bool = False) -> float | None:
    value = _required(obj, name) if required else obj.get(name)
    if value is None:
        return None
    if type(value) is not float and type(value) is not int:
        raise BadRecord("wrong_type", name, f"{name!r} must be a number, got {type_name(value)}")
    if not lo <= value <= hi:
        raise BadRecord("out_of_range", name, f"{name!r} must be in [{lo}, {hi}], got {value!r}")
    return float(value)


def _opt_count(obj: dict, name: str) -> int | None:
    value = obj.get(name)
    if value is None:
        return None
    if type(value) is not int:
        raise BadRecord("wrong_type", name, f"{name!r} must be an integer, got {type_name(value)}")
    if not 0 <= value <= _INT64_MAX:
        raise BadRecord("out_of_range", name, f"{name!r} must be in [0, 2**63), got {value!r}")
    return value


def _opt_str_list(obj: dict, name: str) -> list[str] | None:
    value = obj.get(name)
    if value is None:
        return None
    if type(value) is not list:
        raise BadRecord("wrong_type", name, f"{name!r} must be a list, got {type_name(value)}")
    for item in value:
        if type(item) is not str:
            raise BadRecord(
                "wrong_type", name, f"{name!r} must hold strings, found {type_name(item)}"
            )
    return value


def _opt_json_list(obj: dict, name: str, of_objects: bool) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if type(value) is not list:
        raise BadRecord("wrong_type", name, f"{name!r} must be a list, got {type_name(value)}")
    if not value:
        return "[]"
    if of_objects:
        for item in value:
            if type(item) is not dict:
                raise BadRecord(
                    "wrong_type", name, f"{name!r} must hold objects, found {type_name(item)}"
                )
    return _compact_json(value)


def _non_empty_id(obj: dict, name: str) -> str:
    value = _required(obj, name)
    if type(value) is not str:
        raise BadRecord("wrong_type", name, f"{name!r} must be a string, got {type_name(value)}")
    if not value or value.isspace():
        raise BadRecord("empty_id", name, f"{name!r} is empty")
    _check_id(name, value)
    return value


def _check_id(name: str, value: str) -> None:
    if not value.encode().isalnum() and _ID.fullmatch(value) is None:
        bad = next(c for c in value if not _ID.fullmatch(c))
        raise BadRecord(
            "bad_id",
            name,
            f"{name!r} {value!r} holds {bad!r} (whitespace, '/', a control or zero-width char)",
        )


def _opt_title(obj: dict) -> str | None:
    title = _opt_str(obj, "title")
    if title is not None and not has_content(title):
        raise BadRecord(
            "empty_title", "title", f"'title' {title!r} is empty or only blank characters"
        )
    return title


# ---------------------------------------------------------------------------------------------
# Record converters: dict -> output row tuple in schema order


def _diagnose_review(obj: dict, min_ms: int, max_ms: int, limits: str) -> None:
    """Raise the first failing check of a review, in schema order (the slow, readable path)."""
    rating = _number(obj, "rating", 1, 5, required=True)
    if rating not in _RATINGS:
        raise BadRecord(
            "non_integral_rating",
            "rating",
            f"'rating' must be a whole number of stars, got {rating!r}",
        )
    _opt_title(obj)
    text = _required(obj, "text")
    if type(text) is not str:
        raise BadRecord("wrong_type", "text", f"'text' must be a string, got {type_name(text)}")
    if not has_content(text):
        raise BadRecord(
            "empty_text", "text", "'text' is empty or only whitespace and zero-width characters"
        )
    _opt_json_list(obj, "images", of_objects=True)
    asin = _opt_str(obj, "asin")
    if asin:
        _check_id("asin", asin)
    _non_empty_id(obj, "parent_asin")
    _non_empty_id(obj, "user_id")
    timestamp = _required(obj, "timestamp")
    if type(timestamp) is not int:
        raise BadRecord(
            "wrong_type",
            "timestamp",
            f"'timestamp' must be an integer (Unix ms), got {type_name(timestamp)}",
        )
    if timestamp <= 0:
        raise BadRecord(
            "out_of_range", "timestamp", f"'timestamp' must be > 0 (Unix ms), got {timestamp!r}"
        )
    if not min_ms <= timestamp < max_ms:
        hint = (
            "; read as seconds it would be " + _ms_date(timestamp * 1000) + ": seconds, not ms?"
            if min_ms <= timestamp * 1000 < max_ms
            else ""
        )
        raise BadRecord(
            "implausible_timestamp",
            "timestamp",
            f"'timestamp' {timestamp} ms is {_ms_date(timestamp)}, outside the plausible range "
            f"{limits}{hint}",
        )
    _opt_count(obj, "helpful_vote")
    verified = obj.get("verified_purchase")
    if verified is not None and type(verified) is not bool:
        raise BadRecord(
            "wrong_type",
            "verified_purchase",
            f"'verified_purchase' must be a boolean, got {type_name(verified)}",
        )


class ReviewConverter:
    """Review dict -> row. One combined predicate accepts good records; any failure is handed
    to :func:`_diagnose_review`, which names the first failing check (it must raise)."""

    schema = REVIEW_SCHEMA
    kind = "review"

    def __init__(
        self, min_date: str = DEFAULT_LIMITS["min_date"], max_date: str = DEFAULT_LIMITS["max_date"]
    ) -> None:
        self.seen: set[str] = set()
        self.unknown_fields: Counter[str] = Counter()
        self.min_ms, self.max_ms = date_ms(min_date), date_ms(max_date)
        if self.min_ms >= self.max_ms:
            raise ValueError(f"min_date {min_date} must be before max_date {max_date}")
        self.min_date, self.max_date = min_date, max_date
        self.limits_text = f"[{min_date}, {max_date}) (data.ingest.min_date, max_date)"
        self.invisible: Counter[str] = Counter()

    def stats(self) -> dict:
        return {"invisible_characters": invisible_counts(self.invisible, ("title", "text"))}

    def limits(self) -> dict:
        return {"min_date": self.min_date, "max_date": self.max_date}

    def __call__(self, obj: dict, line_no: int) -> tuple:
        get = obj.get
        rating = get(_K_RATING)
        title = get(_K_TITLE)
        text = get(_K_TEXT)
        images = get(_K_IMAGES)
        asin = get(_K_ASIN)
        parent_asin = get(_K_PARENT_ASIN)
        user_id = get(_K_USER_ID)
        timestamp = get(_K_TIMESTAMP)
        helpful_vote = get(_K_HELPFUL_VOTE)
        verified = get(_K_VERIFIED_PURCHASE)
        if not (
            (type(rating) is float or type(rating) is int)
            and rating in _RATINGS
            and (
                title is None
                or (
                    type(title) is str
                    and title
                    and (title[0] not in _BLANK_START or has_content(title))
                )
            )
            and type(text) is str
            and text
            and (text[0] not in _BLANK_START or has_content(text))
            and (images is None or images == [] or _is_object_list(images))
            and (
                asin is None
                or (
                    type(asin) is str
                    and (asin.encode().isalnum() or not asin or _ID.fullmatch(asin))
                )
            )
            and type(parent_asin) is str
            and ((parent := parent_asin.encode()).isalnum() or _ID.fullmatch(parent_asin))
            and type(user_id) is str
            and ((user := user_id.encode()).isalnum() or _ID.fullmatch(user_id))
            and type(timestamp) is int
            and self.min_ms <= timestamp < self.max_ms
            and (
                helpful_vote is None
                or (type(helpful_vote) is int and 0 <= helpful_vote <= _INT64_MAX)
            )
            and (verified is None or type(verified) is bool)
        ):
            _diagnose_review(obj, self.min_ms, self.max_ms, self.limits_text)
            raise AssertionError(f"review rejected by the fast path but not diagnosed: {obj!r}")
        if not _REVIEW_KEYS.issuperset(obj):
            self.unknown_fields.update(k for k in obj if k not in REVIEW_FIELDS)
        if INVISIBLE.search(text):
            self.invisible["text"] += 1
        if title is not None and INVISIBLE.search(title):
            self.invisible["title"] += 1
        if images is not None:
            images = "[]" if not images else _dumps(images).decode()
        # The UTF-8 of the f-string in review_id, from the ids' bytes already made above.
        rid = _sha1(b"%s\x1f%s\x1f%d" % (user, parent, timestamp)).digest()[:8].hex()
        if rid in self.seen:
            raise BadRecord(
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


class MetaConverter:
    schema = META_SCHEMA
    kind = "meta"

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.unknown_fields: Counter[str] = Counter()
        self.price_outcomes: Counter[str] = Counter()
        self.details_stringified = 0
        self.invisible: Counter[str] = Counter()

    def limits(self) -> dict:
        return {}

    def stats(self) -> dict:
        outcomes = ("absent_or_null", "number", "string_parsed", "string_null", "string_unparsed")
        return {
            "meta_price": {k: self.price_outcomes.get(k, 0) for k in outcomes},
            "details_values_stringified": self.details_stringified,
            "invisible_characters": invisible_counts(self.invisible, ("title", "description")),
        }

    def _price(self, obj: dict) -> tuple[float | None, str | None, str]:
        value = obj.get("price")
        if value is None:
            return None, None, "absent_or_null"
        t = type(value)
        if t is float or t is int:
            if not 0 <= value < math.inf:
                raise BadRecord("out_of_range", "price", f"'price' must be >= 0, got {value!r}")
            return float(value), None, "number"
        if t is not str:
            raise BadRecord(
                "wrong_type",
                "price",
                f"'price' must be a number or string, got {type_name(value)}",
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
            raise BadRecord(
                "wrong_type", "details", f"'details' must be an object, got {type_name(value)}"
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
        _required(obj, "title")
        title = _opt_title(obj)
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
            raise BadRecord(
                "duplicate_product",
                None,
                f"parent_asin {parent_asin!r} was already seen; kept the first",
            )
        self.seen.add(parent_asin)
        self.price_outcomes[price_outcome] += 1
        if title is not None and INVISIBLE.search(title):
            self.invisible["title"] += 1
        if description and any(INVISIBLE.search(d) for d in description):
            self.invisible["description"] += 1
        if not META_FIELDS.issuperset(obj):
            self.unknown_fields.update(k for k in obj if k not in META_FIELDS)
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
