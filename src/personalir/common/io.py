"""Atomic, self-checking artifact writes and checked reads.

Every writer goes through :func:`atomic_path`, which yields a temporary sibling path and
renames it onto the target only after the body finished without an exception. Two things
come with every write:

- **A record of what was written.** The sha256, size, mtime and inode of the file as its
  writer left it go to ``<folder>/.integrity/<name>.json``. While the file is that file (same
  inode, or the same mtime), its bytes must hash to the record: the workflow's pre-run guard
  and the ``provenance`` rule use it to refuse a file changed after it was written (bit rot
  and in-place edits keep the inode; a flipped bit need not change the mtime).
- **Cleanup of a killed writer's leftovers.** Temporary files are named
  ``.<name>.tmp-<host>-<pid>-<random>``; the next write of the same target removes those of
  its own host whose process is gone (a live writer's, or another host's, are left alone).

Parquet is written with page checksums (CRC-32 of every data page), and :func:`read_parquet`
verifies them, naming the file when one fails.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import logging
import os
import socket
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

INTEGRITY_DIR = ".integrity"
_CHUNK = 1 << 20
log = logging.getLogger(__name__)

#: Report keys that count cache use: they depend on what earlier runs left, not on the result.
CACHE_COUNTS = frozenset({"from_cache", "parsed_now", "duplicate_texts_reused"})


def is_volatile(name: str) -> bool:
    """Keys and columns that hold how long something took or what a cache saved.

    They differ between two runs of the same code on the same inputs, so artifacts do not
    keep them: :func:`write_json` and :func:`drop_volatile_columns` move them to the rule's
    log (untracked), where Snakemake's benchmark files keep the rule's own time too.
    """
    return (
        name == "seconds"
        or name.startswith("seconds_")
        or name.endswith(("_seconds", "_per_second", "_per_s", "_this_run", "_time", "_runtime"))
        or name in CACHE_COUNTS
    )


def split_volatile(obj: Any, path: str = "") -> tuple[Any, dict[str, Any]]:
    """(``obj`` without volatile keys at any depth, {dotted path: removed value})."""
    removed: dict[str, Any] = {}
    if isinstance(obj, dict):
        kept = {}
        for key, value in obj.items():
            where = f"{path}.{key}" if path else str(key)
            if is_volatile(str(key)):
                removed[where] = value
            else:
                kept[key], sub = split_volatile(value, where)
                removed.update(sub)
        return kept, removed
    if isinstance(obj, (list, tuple)):
        items = []
        for i, value in enumerate(obj):
            item, sub = split_volatile(value, f"{path}[{i}]")
            items.append(item)
            removed.update(sub)
        return items, removed
    return obj, removed


def log_run_facts(target: str | os.PathLike, facts: dict[str, Any]) -> None:
    if facts:
        log.info("run facts of %s (not kept in it): %s", target, json.dumps(facts, default=str))


def drop_volatile_columns(target: str | os.PathLike, frame):
    """A DataFrame without volatile columns (logged as run facts of ``target``)."""
    volatile = [c for c in frame.columns if is_volatile(str(c))]
    if not volatile:
        return frame
    log_run_facts(target, {c: frame[c].tolist() for c in volatile})
    return frame.drop(columns=volatile)


class CorruptArtifact(RuntimeError):
    """An artifact whose bytes fail a check (checksum, recorded hash); the message names it."""


# --------------------------------------------------------------------------- hashing
def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def written_record_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.parent / INTEGRITY_DIR / f"{path.name}.json"


def record_written(path: str | os.PathLike) -> dict[str, Any]:
    """Record a just-written file's sha256, size and mtime (see the module docstring)."""
    path = Path(path)
    st = path.stat()
    record = {
        "sha256": sha256_file(path),
        "bytes": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "inode": [st.st_dev, st.st_ino],
    }
    side = written_record_path(path)
    side.parent.mkdir(exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{side.name}.tmp-", dir=side.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh, sort_keys=True)
        os.replace(tmp, side)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return record


def written_record(path: str | os.PathLike) -> dict[str, Any] | None:
    """The record of how the file's writer left it, if it applies to the file there now.

    It applies while the file is the one its writer created (the same inode: Snakemake
    touches every output after its job, so the mtime moves) or carries the writer's mtime
    (a copy that kept times). None when there is no record or the file was replaced since
    (a DVC checkout, a plain copy, a rewrite by a writer that keeps no record).
    """
    path = Path(path)
    try:
        with open(written_record_path(path), encoding="utf-8") as fh:
            record = json.load(fh)
        st = path.stat()
        same_file = [st.st_dev, st.st_ino] == record.get("inode")
        if not same_file and st.st_mtime_ns != record["mtime_ns"]:
            return None
        return {"sha256": str(record["sha256"]), "bytes": int(record["bytes"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --------------------------------------------------------------------------- temporary files
def temp_prefix(target: str | os.PathLike) -> str:
    """Name prefix of this process's temporary siblings of ``target``."""
    return f".{Path(target).name}.tmp-{socket.gethostname()}-{os.getpid()}-"


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale_temps(target: str | os.PathLike) -> list[Path]:
    """Remove temporary siblings of ``target`` left by dead processes of this host."""
    target = Path(target)
    host = socket.gethostname()
    removed = []
    if not target.parent.is_dir():
        return removed
    stem = f".{target.name}.tmp-{host}-"
    for entry in target.parent.iterdir():
        if not entry.name.startswith(stem):
            continue
        pid = entry.name[len(stem) :].split("-", 1)[0]
        if not pid.isdigit() or _process_alive(int(pid)):
            continue
        if entry.is_dir() and not entry.is_symlink():
            import shutil

            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
        removed.append(entry)
    return removed


def atomic_dir(target: str | os.PathLike) -> Path:
    """A fresh temporary sibling directory of ``target`` (its leftovers cleaned like files')."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target)
    return Path(tempfile.mkdtemp(prefix=temp_prefix(target), dir=target.parent))


# --------------------------------------------------------------------------- writers
@contextlib.contextmanager
def atomic_path(
    target: str | os.PathLike, suffix: str | None = None, *, record: bool = True
) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; move it onto ``target`` on success.

    ``record=False``: keep no record of what was written (for caches that checksum their
    entries themselves)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target)
    fd, tmp = tempfile.mkstemp(
        prefix=temp_prefix(target), suffix=suffix or ".tmp", dir=target.parent
    )
    os.close(fd)
    tmp_path = Path(tmp)
    # mkstemp creates 0600 files; artifacts get the usual permissions (umask applied).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_path, 0o666 & ~umask)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp_path, target)
        if record:
            record_written(target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_open(target: str | os.PathLike, mode: str = "w", *, record: bool = True, **kwargs: Any):
    """Open a temporary file for writing that becomes ``target`` when closed cleanly."""
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8")
        kwargs.setdefault("newline", "\n")
    with atomic_path(target, record=record) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh


def write_text(target: str | os.PathLike, text: str, *, record: bool = True) -> None:
    with atomic_open(target, record=record) as fh:
        fh.write(text)


def write_json(
    target: str | os.PathLike, obj: Any, *, record: bool = True, keep_timings: bool = False
) -> None:
    """Deterministic JSON: sorted keys, two-space indent, trailing newline.

    Timings and cache-use counts (:func:`is_volatile`) are not written: they go to the log.
    ``keep_timings``: write them (a benchmark's figures, never a workflow artifact).
    """
    if not keep_timings:
        obj, facts = split_volatile(obj)
        log_run_facts(target, facts)
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_text(target, text, record=record)


def write_jsonl(target: str | os.PathLike, records: Iterable[dict]) -> int:
    """Write one JSON object per line (keys in the given order); return the count."""
    n = 0
    with atomic_open(target) as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    return n


def write_parquet(target: str | os.PathLike, table) -> None:
    """Write a pandas DataFrame or pyarrow Table as Parquet, byte-deterministically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(table, pa.Table):
        table = pa.Table.from_pandas(table, preserve_index=False)
    # Drop pandas metadata so the bytes do not depend on the pandas version.
    table = table.replace_schema_metadata(None)
    with atomic_path(target, suffix=".parquet") as tmp:
        pq.write_table(
            table, tmp, compression="zstd", write_statistics=True, write_page_checksum=True
        )


def read_parquet(path: str | os.PathLike, **kwargs: Any):
    """Read a Parquet file into a DataFrame, verifying its page checksums.

    Any failure to decode (a checksum mismatch, a damaged footer) raises
    :class:`CorruptArtifact` naming the file.
    """
    import pandas as pd
    import pyarrow as pa

    try:
        return pd.read_parquet(path, page_checksum_verification=True, **kwargs)
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as exc:
        raise CorruptArtifact(f"{path}: not a readable Parquet file ({exc})") from exc


def read_parquet_table(path: str | os.PathLike, **kwargs: Any):
    """:func:`read_parquet` as a pyarrow Table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path, page_checksum_verification=True, **kwargs)
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as exc:
        raise CorruptArtifact(f"{path}: not a readable Parquet file ({exc})") from exc


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


class InputDecodeError(ValueError):
    """An input text file is not valid UTF-8; the message names the file and the byte offset."""


def utf8_error(path: str | os.PathLike) -> InputDecodeError:
    """The error of a text input that failed to decode: its file, the byte offset of the first
    invalid byte (of the decompressed text for a ``.gz`` file) and that byte's line.

    Readers call it when decoding raised, so that the message names the file, which Python's
    ``UnicodeDecodeError`` does not: ``raise utf8_error(path) from None``."""
    raw = Path(path).read_bytes()
    of = ""
    if str(path).endswith(".gz"):
        raw, of = gzip.decompress(raw), " (of the decompressed text)"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        bad = raw[exc.start : exc.end].hex(" ")
        return InputDecodeError(
            f"{path}: byte offset {exc.start}{of}: not valid UTF-8 ({exc.reason}: byte(s) "
            f"{bad}, on line {line}); save the file as UTF-8"
        )
    return InputDecodeError(f"{path}: not valid UTF-8")
