"""Persistent cache of corrections, keyed by the sha256 of the input sentence.

Correction is the expensive step of this stage, so every cacheable backend keeps its outputs
in ``<root>/<backend>-<fingerprint>/``, where the fingerprint hashes everything that changes
the backend's output (package and model versions, thresholds, iterations). A changed setting
therefore starts a new, empty cache instead of serving stale corrections.

Storage is lock-free and crash-safe: each flush writes one new Parquet segment
(``seg-<content hash>.parquet``, columns ``key``, ``output``) through an atomic rename, so
concurrent rules (one per domain) never overwrite each other and a reader never sees half a
file. When more than ``max_segments`` segments pile up, a flush compacts them into one.

Nothing damaged is served: every row carries ``check``, the sha256 of its key and output, and
a row whose check does not match (a flipped bit, an output moved to another key) is dropped;
a segment that cannot be read (truncated, not Parquet) is skipped; a segment without the
``check`` column (an older cache) is kept only when its content matches the digest in its
name. Dropped sentences are simply corrected again; :meth:`CorrectionCache.describe` counts
them (``dropped_rows``, ``unreadable_segments``), and the stage report carries that.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from personalir.common.io import atomic_path, read_parquet_table, write_json


def sentence_key(sentence: str) -> str:
    return hashlib.sha256(sentence.encode("utf-8")).hexdigest()


def row_check(key: str, output: str) -> str:
    """The integrity check of one (key, output) row."""
    return hashlib.sha256(key.encode() + b"\0" + output.encode("utf-8")).hexdigest()[:32]


def _segment_digest(items: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for k in sorted(items):
        digest.update(k.encode() + items[k].encode("utf-8") + b"\x00")
    return digest.hexdigest()[:20]


class CorrectionCache:
    def __init__(self, root: str | Path, backend: str, fingerprint: str, *, max_segments: int = 32):
        self.dir = Path(root) / f"{backend}-{fingerprint[:16]}"
        self.backend = backend
        self.fingerprint = fingerprint
        self.max_segments = max_segments
        self._store: dict[str, str] = {}
        self._pending: dict[str, str] = {}
        self.dropped_rows = 0
        self.unreadable_segments = 0
        self._load()

    def _segments(self) -> list[Path]:
        return sorted(self.dir.glob("seg-*.parquet")) if self.dir.exists() else []

    def _read_segment(self, seg: Path) -> dict[str, str]:
        """The verified rows of one segment (see the module docstring)."""
        try:
            table = read_parquet_table(seg)
            keys = table.column("key").to_pylist()
            outputs = table.column("output").to_pylist()
            checks = table.column("check").to_pylist() if "check" in table.column_names else None
        except FileNotFoundError:  # compacted away by a concurrent writer: its merge has it
            return {}
        except Exception:  # truncated, not Parquet, columns missing: recompute its rows
            self.unreadable_segments += 1
            return {}
        if checks is None:
            items = dict(zip(keys, outputs, strict=True))
            if seg.name == f"seg-{_segment_digest(items)}.parquet":
                return items
            self.dropped_rows += len(keys)
            return {}
        out = {}
        for k, o, c in zip(keys, outputs, checks, strict=True):
            if isinstance(k, str) and isinstance(o, str) and c == row_check(k, o):
                out[k] = o
            else:
                self.dropped_rows += 1
        return out

    def _load(self) -> None:
        for seg in self._segments():
            self._store.update(self._read_segment(seg))

    def __len__(self) -> int:
        return len(self._store) + len(self._pending)

    def get(self, sentence: str) -> str | None:
        key = sentence_key(sentence)
        hit = self._store.get(key)
        return hit if hit is not None else self._pending.get(key)

    def put_many(self, pairs: Iterable[tuple[str, str]]) -> None:
        for sentence, output in pairs:
            self._pending[sentence_key(sentence)] = output

    def _write_segment(self, items: dict[str, str]) -> Path:
        keys = sorted(items)
        outputs = [items[k] for k in keys]
        table = pa.table(
            {
                "key": keys,
                "output": outputs,
                "check": [row_check(k, o) for k, o in zip(keys, outputs, strict=True)],
            }
        )
        target = self.dir / f"seg-{_segment_digest(items)}.parquet"
        # Written even when a segment of that name exists: it may be the damaged copy whose
        # rows are being corrected again (same content, atomic replace).
        with atomic_path(target, suffix=".parquet", record=False) as tmp:
            pq.write_table(table, tmp, compression="zstd")
        return target

    def flush(self) -> int:
        """Write pending entries as a new segment; return how many were written."""
        if not self._pending:
            return 0
        self.dir.mkdir(parents=True, exist_ok=True)
        manifest = self.dir / "manifest.json"
        if not manifest.exists():
            write_json(
                manifest,
                {
                    "backend": self.backend,
                    "fingerprint": self.fingerprint,
                    "key": "sha256 of the UTF-8 input sentence",
                },
                record=False,
            )
        n = len(self._pending)
        self._write_segment(self._pending)
        self._store.update(self._pending)
        self._pending = {}
        segments = self._segments()
        if len(segments) > self.max_segments:
            merged: dict[str, str] = {}
            for seg in segments:
                merged.update(self._read_segment(seg))
            keep = self._write_segment(merged)
            for seg in segments:
                if seg != keep:
                    seg.unlink(missing_ok=True)
        return n

    def describe(self) -> dict:
        return {
            "dir": str(self.dir),
            # the cache's size depends on which jobs filled it before: the rule's log keeps it
            "entries_this_run": len(self),
            "segments_this_run": len(self._segments()),
            "fingerprint": self.fingerprint,
            # damaged rows and segments found on load; their sentences are corrected again
            "dropped_rows": self.dropped_rows,
            "unreadable_segments": self.unreadable_segments,
        }
