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
encoder computes afresh. Entries are written atomically; a damaged entry is recomputed.
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


class EncodingCache:
    """Encodings on disk, one file per (encoder settings, texts): ``.npy`` or ``.npz``."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

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
            try:
                value = read(path)
            except (OSError, ValueError) as exc:
                log.warning("encoding cache: %s unreadable (%s); recomputing", path, exc)
            else:
                if value.shape[0] == len(texts):
                    self.hits += 1
                    log.info("encoding cache: read %s (%d texts)", path.name, len(texts))
                    return value
                log.warning(
                    "encoding cache: %s has %d rows, not %d; recomputing",
                    path,
                    value.shape[0],
                    len(texts),
                )
        value = compute()
        self.root.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, suffix=suffix) as tmp:
            write(tmp, value)
        self.misses += 1
        log.info("encoding cache: wrote %s (%d texts)", path.name, len(texts))
        return value

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}


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
