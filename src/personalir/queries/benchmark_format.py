"""The PQB benchmark file format: one JSON object per query, and the released format.

Benchmark JSONL (``results/queries/<Domain>/benchmark.jsonl``), one object per line:

``query_id``   unique id of the query (str)
``domain``     Amazon Reviews 2023 category (str)
``product``    parent_asin of the product the query asks for: its relevant document (str)
``user_id``    the user whose wording the query carries (str)
``pair_id``    id shared by the two queries that are compared (str)
``kind``       ``syntactic`` (two users, same product and core terms), ``writing_error``
               (one user: clean query and its error variant) or ``unpaired`` (a query with
               no partner: evaluated for effectiveness only, never in a robustness metric)
``role``       ``a`` / ``b`` within a syntactic pair; ``clean`` / ``error`` within a
               writing-error pair; ``single`` for an unpaired query (its ``pair_id`` is its own)
``text``       the query (str)
``core_terms`` the product's core terms the query contains (list[str])
``provenance`` how the query was made: candidate id, distances, edits applied (object)

The released format of the PQB files is ``{asin: [{asin, uid, syntax_query, typo_query}]}``
per domain; :func:`from_released` turns it into benchmark records. There, the syntactic pairs
are all pairs of different users' ``syntax_query`` for the same asin (the reference metric
definition) and each non-null ``typo_query`` pairs with its user's ``syntax_query``. An entry
in no pair (the only user of its product, without a ``typo_query``) becomes an ``unpaired``
query, so that it is still evaluated for effectiveness and counted.

The older release (``released-v0``) has one query per record, ``{asin, uid, query}``, as a
JSON list or as JSONL; :func:`read_released` recognises either shape (a JSON object is the
current format, anything else the older one) and turns the older one into the current one
with ``typo_query: null``.

Reading refuses a key given twice in one JSON object (JSON would keep only the last, silently)
and names a file that is not UTF-8 with the byte offset of its first invalid byte.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from personalir.common.io import utf8_error, write_json, write_jsonl

FIELDS = (
    "query_id",
    "domain",
    "product",
    "user_id",
    "pair_id",
    "kind",
    "role",
    "text",
    "core_terms",
    "provenance",
)
KINDS = {"syntactic": ("a", "b"), "writing_error": ("clean", "error"), "unpaired": ("single",)}
#: Query formats :func:`read_released` reads: the current release and the older one.
RELEASED_FORMATS = ("released", "released-v0")


class BenchmarkFormatError(ValueError):
    """A benchmark or released file breaks the format; the message names file and line."""


def validate_record(rec: Any, where: str) -> dict:
    if not isinstance(rec, dict):
        raise BenchmarkFormatError(f"{where}: expected a JSON object")
    missing = [f for f in FIELDS if f not in rec]
    if missing:
        raise BenchmarkFormatError(f"{where}: missing field(s) {missing}")
    for f in ("query_id", "domain", "product", "user_id", "pair_id", "text"):
        if not isinstance(rec[f], str) or not rec[f].strip():
            raise BenchmarkFormatError(f"{where}: field {f!r} must be a non-empty string")
    if rec["kind"] not in KINDS:
        raise BenchmarkFormatError(f"{where}: kind {rec['kind']!r} not in {sorted(KINDS)}")
    if rec["role"] not in KINDS[rec["kind"]]:
        raise BenchmarkFormatError(
            f"{where}: role {rec['role']!r} not valid for kind {rec['kind']!r} "
            f"(expected one of {KINDS[rec['kind']]})"
        )
    if not isinstance(rec["core_terms"], list) or not all(
        isinstance(t, str) for t in rec["core_terms"]
    ):
        raise BenchmarkFormatError(f"{where}: core_terms must be a list of strings")
    if not isinstance(rec["provenance"], dict):
        raise BenchmarkFormatError(f"{where}: provenance must be an object")
    return rec


def check_pairs(records: list[dict], source: str = "benchmark") -> None:
    """Every pair has exactly its two roles; query ids are unique."""
    seen: set[str] = set()
    pairs: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        if rec["query_id"] in seen:
            raise BenchmarkFormatError(f"{source}: duplicate query_id {rec['query_id']!r}")
        seen.add(rec["query_id"])
        pairs[rec["pair_id"]].append(rec)
    for pair_id, members in pairs.items():
        kinds = {m["kind"] for m in members}
        roles = sorted(m["role"] for m in members)
        if len(kinds) != 1 or roles != sorted(KINDS[members[0]["kind"]]):
            raise BenchmarkFormatError(
                f"{source}: pair {pair_id!r} has roles {roles} of kinds {sorted(kinds)}"
            )
        if len({m["product"] for m in members}) != 1:
            raise BenchmarkFormatError(f"{source}: pair {pair_id!r} mixes products")


class DuplicateKeyError(ValueError):
    """A JSON object gives a key twice (raised while parsing; readers name file and line)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """``object_pairs_hook`` of every reader: a key given twice is an error, not the last."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def duplicate_key_message(where: str, key: str) -> str:
    return (
        f"{where}: key {key!r} is given twice in one JSON object (JSON would keep only the "
        "last): delete one"
    )


def first_duplicate_key(text: str) -> tuple[int, str] | None:
    """(line, key) of the first key given twice in one object of a JSON text, in document
    order (found by walking the text, so that a whole-file JSON error names its line)."""
    decoder = json.JSONDecoder()
    space = json.decoder.WHITESPACE

    def skip(pos: int) -> int:
        return space.match(text, pos).end()

    def walk(pos: int) -> tuple[int, tuple[int, str] | None]:
        opener = text[pos]
        if opener not in "{[":
            return decoder.scan_once(text, pos)[1], None
        closer, keys, pos = "}" if opener == "{" else "]", set(), skip(pos + 1)
        while text[pos] != closer:
            if opener == "{":
                key, after = json.decoder.scanstring(text, pos + 1)
                if key in keys:
                    return pos, (text.count("\n", 0, pos) + 1, key)
                keys.add(key)
                pos = skip(skip(after) + 1)  # past the colon
            pos, found = walk(pos)
            if found:
                return pos, found
            pos = skip(pos)
            if text[pos] == ",":
                pos = skip(pos + 1)
        return pos + 1, None

    try:
        return walk(skip(0))[1]
    except (ValueError, IndexError, StopIteration):
        return None


def _loads(text: str, where: str) -> Any:
    """``json.loads`` refusing duplicate keys; ``where`` names the line (``file:line``)."""
    try:
        return json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKeyError as exc:
        raise BenchmarkFormatError(duplicate_key_message(where, exc.args[0])) from None


def read_benchmark(path: str | Path) -> list[dict]:
    path = Path(path)
    records = []
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    raise BenchmarkFormatError(f"{path}:{lineno}: blank line")
                try:
                    rec = _loads(line, f"{path}:{lineno}")
                except json.JSONDecodeError as exc:
                    raise BenchmarkFormatError(f"{path}:{lineno}: invalid JSON: {exc}") from None
                records.append(validate_record(rec, f"{path}:{lineno}"))
    except UnicodeDecodeError:
        raise utf8_error(path) from None
    check_pairs(records, str(path))
    return records


def write_benchmark(path: str | Path, records: Iterable[dict]) -> int:
    records = [{f: rec[f] for f in FIELDS} for rec in records]
    for i, rec in enumerate(records, 1):
        validate_record(rec, f"record {i}")
    check_pairs(records)
    return write_jsonl(path, records)


def to_released(records: list[dict]) -> dict[str, list[dict]]:
    """Export to ``{asin: [{asin, uid, syntax_query, typo_query}]}``.

    Each user's syntactic query for a product is its ``syntax_query``; the error variant of
    that same text (a writing-error pair whose clean text equals it) is its ``typo_query``.
    """
    syntax: dict[tuple[str, str], str] = {}
    typo: dict[tuple[str, str, str], str] = {}
    by_pair: dict[str, dict[str, dict]] = defaultdict(dict)
    for rec in records:
        if rec["kind"] in ("syntactic", "unpaired"):
            syntax.setdefault((rec["product"], rec["user_id"]), rec["text"])
        else:
            by_pair[rec["pair_id"]][rec["role"]] = rec
    for pair in by_pair.values():
        clean, error = pair["clean"], pair["error"]
        typo[(clean["product"], clean["user_id"], clean["text"])] = error["text"]
        # a user with only a writing-error pair (the only user of a product) still has a row
        syntax.setdefault((clean["product"], clean["user_id"]), clean["text"])
    out: dict[str, list[dict]] = defaultdict(list)
    for (asin, uid), text in sorted(syntax.items()):
        out[asin].append(
            {
                "asin": asin,
                "uid": uid,
                "syntax_query": text,
                "typo_query": typo.get((asin, uid, text)),
            }
        )
    return dict(out)


def write_released(path: str | Path, records: list[dict]) -> None:
    write_json(path, to_released(records))


def read_released(path: str | Path, query_format: str = "released") -> tuple[dict, str]:
    """A released file as the current format ``{asin: [...]}`` and the format it was in.

    ``released`` accepts both shapes (an object keyed by asin: current; a JSON list or JSONL
    of ``{asin, uid, query}``: the older one); ``released-v0`` accepts only the older one.
    """
    if query_format not in RELEASED_FORMATS:
        raise ValueError(f"query format {query_format!r} not in {RELEASED_FORMATS}")
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise utf8_error(path) from None
    try:
        data = json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKeyError as exc:
        line, key = first_duplicate_key(text) or (None, exc.args[0])
        where = f"{path}:{line}" if line else str(path)
        raise BenchmarkFormatError(duplicate_key_message(where, key)) from None
    except json.JSONDecodeError as exc:
        data = _jsonl_records(path, text, exc)
    if isinstance(data, dict) and isinstance(data.get("query"), str) and "asin" in data:
        data = [data]  # a JSONL of one older-format record
    if isinstance(data, dict):
        if query_format == "released-v0":
            raise BenchmarkFormatError(
                f"{path}: an object keyed by asin is the current release format, not "
                "released-v0 (a list of {asin, uid, query}); use --query-format released"
            )
        return data, "released"
    if not isinstance(data, list):
        raise BenchmarkFormatError(
            f"{path}: expected an object keyed by asin (current release) or a list of "
            "{asin, uid, query} records (released-v0)"
        )
    return released_from_v0(data, str(path)), "released-v0"


def _jsonl_records(path: Path, text: str, whole_error: json.JSONDecodeError) -> list:
    records = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(_loads(line, f"{path}:{lineno}"))
        except json.JSONDecodeError as exc:
            if lineno == 1:  # not JSONL either: report the whole-file error
                raise BenchmarkFormatError(f"{path}: invalid JSON: {whole_error}") from None
            raise BenchmarkFormatError(f"{path}:{lineno}: invalid JSON line: {exc}") from None
    return records


def released_from_v0(records: list, source: str = "released-v0 file") -> dict[str, list[dict]]:
    """The older one-query-per-record release as the current format (no ``typo_query``)."""
    out: dict[str, list[dict]] = defaultdict(list)
    for i, rec in enumerate(records):
        where = f"{source}: record {i + 1}"
        if not isinstance(rec, dict):
            raise BenchmarkFormatError(f"{where}: expected an object {{asin, uid, query}}")
        missing = [k for k in ("asin", "uid", "query") if k not in rec]
        if missing:
            raise BenchmarkFormatError(f"{where}: missing field(s) {missing}")
        if not isinstance(rec["asin"], str) or not rec["asin"].strip():
            raise BenchmarkFormatError(f"{where}: asin must be a non-empty string")
        if not isinstance(rec["query"], str) or not rec["query"].strip():
            raise BenchmarkFormatError(f"{where}: query must be a non-empty string")
        out[rec["asin"]].append(
            {
                "asin": rec["asin"],
                "uid": rec["uid"],
                "syntax_query": rec["query"],
                "typo_query": None,
            }
        )
    return dict(out)


def from_released(data: dict | str | Path, domain: str) -> list[dict]:
    """Benchmark records from a released PQB file (either format) or its parsed content."""
    source = "released file"
    if not isinstance(data, dict):
        source = str(data)
        data, _ = read_released(data)
    records: list[dict] = []
    for asin in sorted(data):
        entries = data[asin]
        if not isinstance(entries, list):
            raise BenchmarkFormatError(f"{source}: entry {asin!r} is not a list")
        users = []
        for i, e in enumerate(entries):
            where = f"{source}: {asin}[{i}]"
            if not isinstance(e, dict) or not isinstance(e.get("syntax_query"), str):
                raise BenchmarkFormatError(f"{where}: needs uid and a string syntax_query")
            if not e["syntax_query"].strip():
                raise BenchmarkFormatError(f"{where}: syntax_query is empty")
            if e.get("asin", asin) != asin:
                raise BenchmarkFormatError(f"{where}: asin {e.get('asin')!r} != key {asin!r}")
            users.append(e)
        for (i, a), (j, b) in itertools.combinations(enumerate(users), 2):
            pair_id = f"{domain}:{asin}:syn:{i}-{j}"
            for role, e, k in (("a", a, i), ("b", b, j)):
                records.append(
                    _released_record(
                        domain,
                        asin,
                        e,
                        pair_id,
                        "syntactic",
                        role,
                        e["syntax_query"],
                        f"{pair_id}:{role}:{k}",
                    )
                )
        for i, e in enumerate(users):
            if len(users) == 1 and not e.get("typo_query"):
                pair_id = f"{domain}:{asin}:one:{i}"
                records.append(
                    _released_record(
                        domain, asin, e, pair_id, "unpaired", "single", e["syntax_query"], pair_id
                    )
                )
            if e.get("typo_query"):
                pair_id = f"{domain}:{asin}:err:{i}"
                records.append(
                    _released_record(
                        domain,
                        asin,
                        e,
                        pair_id,
                        "writing_error",
                        "clean",
                        e["syntax_query"],
                        f"{pair_id}:clean",
                    )
                )
                records.append(
                    _released_record(
                        domain,
                        asin,
                        e,
                        pair_id,
                        "writing_error",
                        "error",
                        e["typo_query"],
                        f"{pair_id}:error",
                    )
                )
    check_pairs(records, source)
    return records


def _released_record(domain, asin, entry, pair_id, kind, role, text, query_id) -> dict:
    return {
        "query_id": query_id,
        "domain": domain,
        "product": asin,
        "user_id": str(entry.get("uid", "")) or "unknown",
        "pair_id": pair_id,
        "kind": kind,
        "role": role,
        "text": text,
        "core_terms": [],
        "provenance": {"source": "released"},
    }
