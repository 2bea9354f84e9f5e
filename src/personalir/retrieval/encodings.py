"""Corpus and query encodings shared by the retrieval runs of one workflow.

The packaged hybrid (``fused_dense_sparse``) scores with the same MiniLM and SPLADE encodings
that the ``minilm`` and ``splade_tiny`` runs compute. With an encoding cache
(``RunSettings.encoding_cache``, the workflow's ``results/retrieval/encodings/``) every
encoder writes what it computed and reads what an earlier run computed, so the corpus and
the queries are encoded once per model. The workflow runs the fused job after its members'
(``workflow_support.retrieval_encoding_donors``), so the second encoding never happens.

An entry is found only under exactly the same inputs: the key hashes the texts (in order),
the encoder's settings (model files, parameters, batch size, device, thread count), the
library versions and the source of the encoder's module, so a changed model, setting or
encoder computes afresh. Entries are written atomically, each with a sha256 over its name and
bytes beside it (``<entry>.sha256``); an entry that does not match it (a flipped bit, a
truncated file, another entry's file swapped in), that has no checksum or cannot be read is
recomputed and counted (``stats()["recomputed"]``; a run's metadata reports the totals).
Without a cache (``None``) nothing is read or written.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from personalir.common.io import atomic_path

log = logging.getLogger("personalir.retrieval")


@cache
def model_fingerprint(path: str) -> tuple:
    """Every file of a model folder by relative name, size and modification time: a model
    saved again (say, fine-tuned into the same folder) misses the cache."""
    root = Path(path)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return tuple(
        (str(p.relative_to(root)) if p != root else p.name, p.stat().st_size, p.stat().st_mtime_ns)
        for p in files
    )


@cache
def source_hash(obj: type) -> str:
    """SHA-256 of the source file that defines ``obj``."""
    return hashlib.sha256(Path(inspect.getsourcefile(obj)).read_bytes()).hexdigest()


def library_versions(*names: str) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


# Totals over every cache of this process (a run's metadata reports them).
PROCESS_TOTALS = {"hits": 0, "misses": 0, "recomputed": 0}


class EncodingCache:
    """Encodings on disk, one file per (encoder settings, texts): ``.npy`` or ``.npz``."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.hits = 0
        self.misses = 0
        self.recomputed = 0  # entries present but damaged (checksum, shape or read error)

    def path(self, key: Mapping[str, Any], texts: Sequence[str], suffix: str) -> Path:
        digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode())
        digest.update(len(texts).to_bytes(8, "little"))
        for text in texts:
            raw = text.encode("utf-8")
            digest.update(len(raw).to_bytes(8, "little"))
            digest.update(raw)
        return self.root / f"{key['encoder']}-{digest.hexdigest()[:40]}{suffix}"

    def dense(
        self, key: Mapping[str, Any], texts: Sequence[str], compute: Callable[[], np.ndarray]
    ) -> np.ndarray:
        """A (texts x dim) array: read when present, else computed and written."""
        return self._get(key, texts, ".npy", compute, _read_npy, _write_npy)

    def sparse(self, key: Mapping[str, Any], texts: Sequence[str], compute: Callable[[], Any]):
        """A (texts x vocabulary) CSR matrix: read when present, else computed and written."""
        return self._get(key, texts, ".npz", compute, _read_npz, _write_npz)

    def _get(self, key, texts, suffix, compute, read, write):
        path = self.path(key, texts, suffix)
        if path.exists():
            problem = _verify(path)
            if problem is None:
                try:
                    value = read(path)
                except (OSError, ValueError) as exc:
                    problem = f"unreadable ({exc})"
                else:
                    if value.shape[0] == len(texts):
                        self.hits += 1
                        PROCESS_TOTALS["hits"] += 1
                        log.info("encoding cache: read %s (%d texts)", path.name, len(texts))
                        return value
                    problem = f"{value.shape[0]} rows, not {len(texts)}"
            log.warning("encoding cache: %s %s; recomputing", path, problem)
            self.recomputed += 1
            PROCESS_TOTALS["recomputed"] += 1
        value = compute()
        self.root.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, suffix=suffix, record=False) as tmp:
            write(tmp, value)
            digest = _sha256(tmp, path.name)
        # The checksum is written after the entry: a crash in between leaves an entry without
        # one, which is recomputed, never trusted.
        with atomic_path(_checksum_path(path), suffix=".sha256", record=False) as tmp:
            tmp.write_text(digest + "\n", encoding="ascii")
        self.misses += 1
        PROCESS_TOTALS["misses"] += 1
        log.info("encoding cache: wrote %s (%d texts)", path.name, len(texts))
        return value

    def stats(self) -> dict[str, int]:
        """Damaged entries recomputed, and this run's hits and misses: those depend on what
        earlier jobs left in the cache, so written reports leave them to the rule's log."""
        return {
            "hits_this_run": self.hits,
            "misses_this_run": self.misses,
            "recomputed": self.recomputed,
        }


def _checksum_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _sha256(path: Path, name: str) -> str:
    """sha256 of the entry's name (its key) and bytes: an entry swapped with another, even
    with its checksum file, does not match."""
    h = hashlib.sha256(name.encode() + b"\0")
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verify(path: Path) -> str | None:
    """None when ``path``'s bytes match its recorded sha256, else what is wrong."""
    check = _checksum_path(path)
    try:
        want = check.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return "has no readable checksum"
    try:
        got = _sha256(path, path.name)
    except OSError as exc:
        return f"unreadable ({exc})"
    return None if got == want else "does not match its checksum"


def _read_npy(path: Path) -> np.ndarray:
    return np.load(path, allow_pickle=False)


def _write_npy(path: Path, value: np.ndarray) -> None:
    with open(path, "wb") as fh:
        np.save(fh, np.ascontiguousarray(value), allow_pickle=False)


def _read_npz(path: Path):
    import scipy.sparse as sp

    return sp.load_npz(path).tocsr()


def _write_npz(path: Path, value) -> None:
    import scipy.sparse as sp

    with open(path, "wb") as fh:
        sp.save_npz(fh, value.tocsr(), compressed=False)
