"""Atomic artifact writes: a reader never sees a half-written file.

Every writer goes through :func:`atomic_path`, which yields a temporary sibling path and
renames it onto the target only after the body finished without an exception.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; move it onto ``target`` on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=suffix or ".tmp", dir=target.parent
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
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_open(target: str | os.PathLike, mode: str = "w", **kwargs: Any):
    """Open a temporary file for writing that becomes ``target`` when closed cleanly."""
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8")
        kwargs.setdefault("newline", "\n")
    with atomic_path(target) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh


def write_text(target: str | os.PathLike, text: str) -> None:
    with atomic_open(target) as fh:
        fh.write(text)


def write_json(target: str | os.PathLike, obj: Any) -> None:
    """Deterministic JSON: sorted keys, two-space indent, trailing newline."""
    write_text(target, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


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
        pq.write_table(table, tmp, compression="zstd", write_statistics=True)


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
