"""Reading raw JSONL lines for the ingest: opening (gzip by magic), why a line is bad, quarantine.

The ingest engine (:mod:`personalir.data.ingest`) streams lines through orjson; this module
holds what it needs around that hot loop and nowhere else: opening the source, naming the
reason orjson rejected a line (the error path only), the duplicate-key check, skipping a line
over the size cap, and the quarantine file's records. Kept apart so that the engine module
holds the loop, the report and the public entry points.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from personalir.data.ingest_records import BadRecord
from personalir.data.ingest_schema import IngestError

GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"
_NUL = b"\x00"
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_dumps = orjson.dumps
QUARANTINE_RAW_BYTES = 1024  # what the quarantine file keeps of a line over the size cap


@contextlib.contextmanager
def open_lines(src: Path) -> Iterator[tuple[io.BufferedIOBase, str]]:
    """Yield a binary line iterator over ``src`` (gzip detected by magic) and its compression."""
    with open(src, "rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        if magic == GZIP_MAGIC:
            # A big BufferedReader on top keeps line splitting in C.
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                yield io.BufferedReader(gz, buffer_size=1 << 20), "gzip"
        elif src.name.endswith(".gz"):
            raise IngestError(src.name, None, "not_gzip", "name ends in .gz but no gzip header")
        else:
            yield raw, "none"


def unparseable(raw: bytes, exc: Exception) -> BadRecord:
    """Name why orjson rejected ``raw`` (the error path only, so it may be slow)."""
    if not raw.strip():
        return BadRecord("blank_line", None, "empty or whitespace-only line")
    if not raw.endswith(b"\n"):
        return BadRecord(
            "truncated_final_line", None, f"last line has no newline and does not parse ({exc})"
        )
    if _NUL in raw:
        return BadRecord("nul_byte", None, f"raw NUL byte at offset {raw.index(_NUL)}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return BadRecord("invalid_utf8", None, f"invalid UTF-8 at byte {err.start}: {err.reason}")
    if _SURROGATE_ESCAPE.search(raw):
        try:
            lenient = json.loads(text)
        except ValueError:
            pass
        else:
            if _has_lone_surrogate(lenient):
                return BadRecord("lone_surrogate", None, "a \\uD800-\\uDFFF escape has no pair")
    return BadRecord("invalid_json", None, str(exc))


def _has_lone_surrogate(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def count_colons(data: bytes) -> int:
    # bytes.replace finds a single byte with memchr; bytes.count (CPython 3.11) compares byte
    # by byte, which made the per-line count about 4% of the ingest's instructions.
    return len(data) - len(data.replace(b":", b""))


def check_duplicate_keys(raw: bytes, obj: dict, colons: int) -> None:
    """Raise ``duplicate_key`` if an object in ``raw`` names a key twice (orjson keeps one).

    Outside strings a colon follows every key and nothing else; inside strings a colon is the
    byte ``:`` unless escaped as ``\\u003a``, which orjson never writes. So, without that
    escape in ``raw``, the colons of ``raw`` minus those of ``orjson.dumps(obj)`` are exactly
    the keys the parse collapsed. (The caller's fast test, colons == top-level keys, needs no
    dump: no colon is in a string and no object is nested.) The line is parsed again keeping
    every pair only to name the key, or when the escape occurs.
    """
    # (A one-byte search for any backslash first: memchr-fast, and most lines have none.)
    if colons == count_colons(_dumps(obj)) and (b"\\" not in raw or b"\\u003" not in raw):
        return

    def pairs(items: list[tuple[str, Any]]) -> dict:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                raise BadRecord("duplicate_key", None, f"key {key!r} appears twice in one object")
            seen.add(key)
        return dict(items)

    json.loads(raw, object_pairs_hook=pairs)


def too_long(readline: Callable[[int], bytes], head: bytes) -> tuple[BadRecord, bytes]:
    """Skip the rest of a line over the size cap; its reason and its first bytes."""
    size, chunk = len(head), head
    while chunk and not chunk.endswith(b"\n"):
        chunk = readline(1 << 20)
        size += len(chunk)
    size -= 1 if chunk.endswith(b"\n") else 0
    return BadRecord(
        "line_too_long", None, f"{size} bytes, above max_line_bytes {len(head) - 1}"
    ), head[:QUARANTINE_RAW_BYTES]


def quarantine_line(rec: dict) -> str:
    """One JSONL line; U+2028/U+2029 escaped, so no line splitter breaks the record apart."""
    text = json.dumps(rec, ensure_ascii=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029") + "\n"


def quarantine_record(file: str, line: int, bad: BadRecord, raw: bytes) -> dict:
    """The quarantine file's record of a bad line (the module docstring of ingest: fields)."""
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
    if bad.reason == "line_too_long":
        rec["raw_truncated"] = True
    return rec
