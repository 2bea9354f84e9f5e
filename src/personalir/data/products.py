"""Product documents (the retrieval corpus) and their core terms (generation constraints).

Core terms follow the PQB reference rules for attributes: values come from the meta
``details`` (Brand first, falling back to ``store``) and then from short ``features``;
values with digits, longer than ``max_value_words`` words, or yes/no answers are not usable;
duplicates (case-insensitive) are dropped; keys such as main category or country are never
used. Products with fewer than ``min_attributes`` usable values stay in the retrieval corpus
but get no core terms (``eligible`` is false), and the report counts them.

Where this project differs from the reference code: values are whitespace-normalised and
stripped of surrounding punctuation before the checks, and a value equal to another after
case folding counts once (the reference deduplicates exact strings only).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa

from personalir.common.details import details_pairs
from personalir.data.text import clean_text

_DIGIT = re.compile(r"\d")
_YES_NO = {"yes", "no", "y", "n", "true", "false", "none", "n/a", "na", "not applicable"}
_EDGE_PUNCT = re.compile(r"^[\s\-–—:;,.'\"()\[\]]+|[\s\-–—:;,.'\"()\[\]]+$")


@dataclass(frozen=True)
class ProductRules:
    n_core_terms: int = 5
    min_attributes: int = 5
    max_value_words: int = 3
    drop_keys: tuple[str, ...] = ()
    max_doc_chars: int = 2000
    document: DocumentTemplate = field(default_factory=lambda: DocumentTemplate())

    @classmethod
    def from_config(cls, section: dict) -> ProductRules:
        return cls(
            n_core_terms=section["n_core_terms"],
            min_attributes=section["min_attributes"],
            max_value_words=section["max_value_words"],
            drop_keys=tuple(section["drop_keys"]),
            max_doc_chars=section["max_doc_chars"],
            document=DocumentTemplate.from_config(section.get("document") or {}),
        )


@dataclass
class ValueAudit:
    """Why candidate attribute values were rejected (counted, never silently dropped)."""

    counts: Counter = field(default_factory=Counter)


def normalise_value(value: str) -> str:
    return _EDGE_PUNCT.sub("", clean_text(value))


def value_rejection(value: str, max_words: int) -> str | None:
    """Reason a candidate value cannot be a core term, or None if it can."""
    if not value:
        return "empty"
    if _DIGIT.search(value):
        return "has_digit"
    if len(value.split()) > max_words:
        return "too_many_words"
    if value.lower() in _YES_NO:
        return "yes_no"
    return None


def select_attributes(
    details,
    store: str | None,
    features: Iterable[str] | None,
    rules: ProductRules,
    audit: ValueAudit | None = None,
) -> list[tuple[str, str]]:
    """Usable (key, value) attributes in priority order: Brand, other details, short features."""
    audit = audit if audit is not None else ValueAudit()
    drop = {k.lower() for k in rules.drop_keys}
    items = details_pairs(details)
    brand = [(k, v) for k, v in items if k.strip().lower() == "brand"]
    if not brand and store:
        brand = [("Brand", store)]
    others = [(k, v) for k, v in items if k.strip().lower() != "brand"]
    candidates = brand + others + [("Feature", f) for f in (features or [])]
    seen: set[str] = set()
    kept: list[tuple[str, str]] = []
    for key, raw in candidates:
        if key.strip().lower() in drop:
            audit.counts["dropped_key"] += 1
            continue
        value = normalise_value(raw)
        reason = value_rejection(value, rules.max_value_words)
        if reason is None and value.lower() in seen:
            reason = "duplicate"
        if reason:
            audit.counts[reason] += 1
            continue
        seen.add(value.lower())
        kept.append((key.strip(), value))
    return kept


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value if v is not None]


#: Meta fields a product document can be made of (Amazon Reviews 2023 meta schema).
DOCUMENT_FIELDS = (
    "title",
    "store",
    "main_category",
    "description",
    "features",
    "categories",
    "details",
)


@dataclass(frozen=True)
class DocumentTemplate:
    """Which meta fields make a product's document, in which order, and how they are joined.

    Every piece (the title, each description paragraph, each feature, each ``details`` pair
    written with ``details``, e.g. ``"{key}: {value}"``) is cleaned; a piece equal to an earlier
    one (case-insensitive) is dropped; a piece not ending in ``.``, ``!`` or ``?`` gets
    ``terminator``; pieces are joined by ``separator``. The default is title + description +
    features joined by spaces, each piece ending with a full stop."""

    fields: tuple[str, ...] = ("title", "description", "features")
    details: str = "{key}: {value}"
    separator: str = " "
    terminator: str = "."

    def __post_init__(self) -> None:
        unknown = [f for f in self.fields if f not in DOCUMENT_FIELDS]
        if not self.fields or unknown:
            raise ValueError(
                f"document fields {list(self.fields)}: "
                + (f"unknown field {unknown[0]!r}" if unknown else "none given")
                + f" (choose from {', '.join(DOCUMENT_FIELDS)})"
            )
        if len(set(self.fields)) != len(self.fields):
            raise ValueError(f"document fields {list(self.fields)}: a field is listed twice")
        try:
            self.details.format(key="k", value="v")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"document details format {self.details!r}: use the placeholders {{key}} and "
                f"{{value}} only ({exc!r})"
            ) from None

    @classmethod
    def from_config(cls, section: dict) -> DocumentTemplate:
        default = cls()
        return cls(
            fields=tuple(section.get("fields", default.fields)),
            details=section.get("details", default.details),
            separator=section.get("separator", default.separator),
            terminator=section.get("terminator", default.terminator),
        )

    def as_dict(self) -> dict:
        """The template as config writes it (recorded in reports and run metadata)."""
        return {
            "fields": list(self.fields),
            "details": self.details,
            "separator": self.separator,
            "terminator": self.terminator,
        }

    def describe(self) -> str:
        """One line for the console: the fields in order and how details and pieces read."""
        line = " + ".join(self.fields)
        if "details" in self.fields:
            line += f" (details as {self.details!r})"
        else:
            line += " (details are not part of the document)"
        return line + f", pieces joined by {self.separator!r}"

    def pieces(self, record: dict) -> list[str]:
        """The raw text pieces of a meta record, in template order."""
        out: list[str] = []
        for name in self.fields:
            if name == "details":
                out += [
                    self.details.format(key=k, value=v)
                    for k, v in details_pairs(record.get("details"))
                    if v.strip()
                ]
            else:
                out += _as_list(record.get(name))
        return out

    def render(self, record: dict, max_chars: int) -> str:
        """The document of a meta record, cut at a word boundary to ``max_chars``."""
        parts: list[str] = []
        seen: set[str] = set()
        for piece in self.pieces(record):
            text = clean_text(piece)
            if text and text.lower() not in seen:
                seen.add(text.lower())
                ended = not self.terminator or text[-1] in ".!?"
                parts.append(text if ended else text + self.terminator)
        doc = self.separator.join(parts)
        if len(doc) > max_chars:
            cut = max(doc.rfind(c, 0, max_chars) for c in (" ", "\n", "\t"))
            doc = doc[: cut if cut > 0 else max_chars]
        return doc


def build_document(title: str | None, description, features, max_chars: int) -> str:
    """Title + description + features (the default template), cleaned, repeated bullets
    removed, cut at a word."""
    record = {"title": title, "description": description, "features": features}
    return DocumentTemplate().render(record, max_chars)


PRODUCT_SCHEMA = pa.schema(
    [
        ("parent_asin", pa.string()),
        ("title", pa.string()),
        ("main_category", pa.string()),
        ("document", pa.string()),
        ("attribute_keys", pa.list_(pa.string())),
        ("attribute_values", pa.list_(pa.string())),
        ("core_terms", pa.list_(pa.string())),
        ("eligible", pa.bool_()),
    ]
)


def build_product_table(meta: pa.Table, rules: ProductRules) -> tuple[pa.Table, dict]:
    """One row per meta record (input order), plus a report of what was excluded and why."""
    audit = ValueAudit()
    rows = {name: [] for name in PRODUCT_SCHEMA.names}
    empty_docs = 0
    columns = set(meta.column_names)
    records = meta.select(
        [
            c
            for c in (
                "parent_asin",
                "title",
                "main_category",
                "description",
                "features",
                "details",
                "store",
                "categories",
            )
            if c in columns
        ]
    ).to_pylist()
    for rec in records:
        features = _as_list(rec.get("features"))
        attrs = select_attributes(rec.get("details"), rec.get("store"), features, rules, audit)
        doc = rules.document.render({**rec, "features": features}, rules.max_doc_chars)
        empty_docs += not doc
        eligible = len(attrs) >= rules.min_attributes
        rows["parent_asin"].append(rec["parent_asin"])
        rows["title"].append(clean_text(rec.get("title") or ""))
        rows["main_category"].append(rec.get("main_category"))
        rows["document"].append(doc)
        rows["attribute_keys"].append([k for k, _ in attrs])
        rows["attribute_values"].append([v for _, v in attrs])
        rows["core_terms"].append([v for _, v in attrs[: rules.n_core_terms]] if eligible else [])
        rows["eligible"].append(eligible)
    table = pa.table(rows, schema=PRODUCT_SCHEMA)
    n = table.num_rows
    n_eligible = sum(rows["eligible"])
    report = {
        "products": n,
        "eligible": n_eligible,
        "excluded_too_few_attributes": n - n_eligible,
        "empty_documents": empty_docs,
        "rejected_attribute_values": dict(sorted(audit.counts.items())),
        "rules": {
            "n_core_terms": rules.n_core_terms,
            "min_attributes": rules.min_attributes,
            "max_value_words": rules.max_value_words,
        },
        "document": rules.document.as_dict(),
    }
    return table, report
