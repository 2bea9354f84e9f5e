"""Serving TTP offline: a personalised embedding cache in front of the distilled student.

TTP writes a rewrite before it embeds, which is too slow to run per request. The paper serves
it in two tiers (section 5.1): the TTP embeddings of active ``(user, broad query)`` pairs are
precomputed offline into a store; a request whose pair is in the store is served from it (a
*hit*), any other request by the distilled student, which embeds without generating (a
*miss*).

The store is a folder:

``embeddings.parquet``  one row per pair: ``user_id``, ``query_key``, ``embedding`` (float32);
``store.json``          ``format``, ``model_version`` (the fingerprint of the model that made
                        the embeddings), ``dim``, ``pairs``, and the sha256 of the Parquet file.

A store is opened for one model version: a store built by another version (a retrained TTP
adapter, another backbone) is refused, and so is a Parquet file whose bytes are not the ones
``store.json`` records. Query keys are the query lower-cased with its white space collapsed,
so a request matches a cached pair however its spaces and capitals fall.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from personalir.common.io import read_json, read_parquet_table, sha256_file, write_json

STORE_FORMAT = "personalir.ttp.embedding_store/1"
EMBEDDINGS = "embeddings.parquet"
META = "store.json"


class StoreError(RuntimeError):
    """A store that cannot serve this model: another version, or damaged files."""


def query_key(query: str) -> str:
    return re.sub(r"\s+", " ", query).strip().lower()


def write_store(
    folder: str | Path,
    user_ids: Sequence[str],
    queries: Sequence[str],
    embeddings: np.ndarray,
    *,
    model_version: str,
) -> dict:
    """Write a store of precomputed embeddings; returns its ``store.json`` record.

    Pairs with the same user and query key must have one embedding: a second, different one
    is an error (two embeddings for one request); an identical repeat is kept once.
    """
    import pyarrow as pa

    from personalir.common.io import write_parquet

    embeddings = np.asarray(embeddings, dtype=np.float32)
    if embeddings.ndim != 2 or not (len(user_ids) == len(queries) == embeddings.shape[0]):
        raise ValueError("user ids, queries and embedding rows must be aligned")
    if not model_version:
        raise ValueError("model_version must name the model that made the embeddings")
    rows: dict[tuple[str, str], int] = {}
    for i, (user, query) in enumerate(zip(user_ids, queries, strict=True)):
        key = (str(user), query_key(query))
        if key in rows:
            if not np.array_equal(embeddings[rows[key]], embeddings[i]):
                raise ValueError(f"two different embeddings for user {key[0]!r}, query {key[1]!r}")
            continue
        rows[key] = i
    keys = sorted(rows)
    order = [rows[k] for k in keys]
    dim = int(embeddings.shape[1])
    table = pa.table(
        {
            "user_id": [k[0] for k in keys],
            "query_key": [k[1] for k in keys],
            "embedding": pa.FixedSizeListArray.from_arrays(
                pa.array(embeddings[order].reshape(-1)), dim
            ),
        }
    )
    folder = Path(folder)
    write_parquet(folder / EMBEDDINGS, table)
    meta = {
        "format": STORE_FORMAT,
        "model_version": model_version,
        "dim": dim,
        "pairs": len(keys),
        "embeddings_sha256": sha256_file(folder / EMBEDDINGS),
    }
    write_json(folder / META, meta)
    return meta


@dataclass
class EmbeddingStore:
    model_version: str
    dim: int
    index: dict[tuple[str, str], int]
    vectors: np.ndarray

    def get(self, user_id: str, query: str) -> np.ndarray | None:
        row = self.index.get((str(user_id), query_key(query)))
        return None if row is None else self.vectors[row]

    def __len__(self) -> int:
        return len(self.index)


def open_store(folder: str | Path, *, model_version: str) -> EmbeddingStore:
    """Open a store for ``model_version``; refuses another version's store or damaged files."""
    folder = Path(folder)
    try:
        meta = read_json(folder / META)
    except (OSError, ValueError) as exc:
        raise StoreError(f"{folder / META}: not a readable store record ({exc})") from exc
    if meta.get("format") != STORE_FORMAT:
        raise StoreError(f"{folder / META}: format {meta.get('format')!r}, not {STORE_FORMAT}")
    if meta.get("model_version") != model_version:
        raise StoreError(
            f"{folder}: built by model version {meta.get('model_version')!r}, not "
            f"{model_version!r}: rebuild the store with this model"
        )
    path = folder / EMBEDDINGS
    if not path.exists() or sha256_file(path) != meta.get("embeddings_sha256"):
        raise StoreError(f"{path}: missing or not the file {folder / META} records")
    table = read_parquet_table(path)
    vectors = np.asarray(table.column("embedding").combine_chunks().flatten(), np.float32)
    vectors = vectors.reshape(table.num_rows, int(meta["dim"]))
    users, queries = table.column("user_id").to_pylist(), table.column("query_key").to_pylist()
    keys = zip(users, queries, strict=True)
    index = {(u, q): i for i, (u, q) in enumerate(keys)}
    if len(index) != int(meta["pairs"]):
        raise StoreError(f"{path}: {len(index)} pairs, {folder / META} records {meta['pairs']}")
    return EmbeddingStore(model_version, int(meta["dim"]), index, vectors)


@dataclass
class CachedServer:
    """Serve ``(user, query)`` requests from the store on a hit, from ``student`` on a miss.

    ``student(user_ids, queries) -> [n, dim]`` embeds a batch of misses (the distilled
    bi-encoder with its instruction + history + query template). Counts hits and misses.
    """

    store: EmbeddingStore
    student: Callable[[Sequence[str], Sequence[str]], np.ndarray]
    hits: int = 0
    misses: int = 0
    routes: list[str] = field(default_factory=list)

    def embed(self, user_ids: Sequence[str], queries: Sequence[str]) -> np.ndarray:
        if len(user_ids) != len(queries):
            raise ValueError("user ids and queries must be aligned")
        out = np.zeros((len(queries), self.store.dim), dtype=np.float32)
        missed = []
        for i, (user, query) in enumerate(zip(user_ids, queries, strict=True)):
            cached = self.store.get(user, query)
            if cached is None:
                missed.append(i)
                self.routes.append("student")
            else:
                out[i] = cached
                self.routes.append("cache")
        if missed:
            vecs = np.asarray(
                self.student([user_ids[i] for i in missed], [queries[i] for i in missed]),
                dtype=np.float32,
            )
            if vecs.shape != (len(missed), self.store.dim):
                raise ValueError(
                    f"the student gave {vecs.shape} for {len(missed)} misses of dim "
                    f"{self.store.dim}: it must embed in the store's space"
                )
            out[missed] = vecs
        self.hits += len(queries) - len(missed)
        self.misses += len(missed)
        return out

    def hit_rate(self) -> float | None:
        total = self.hits + self.misses
        return self.hits / total if total else None


def hit_rate(store: EmbeddingStore, requests: Iterable[tuple[str, str]]) -> dict:
    """Hits and misses of ``requests`` (``(user, query)``) against ``store``, without serving."""
    hits = misses = 0
    for user, query in requests:
        if store.get(user, query) is None:
            misses += 1
        else:
            hits += 1
    total = hits + misses
    return {
        "requests": total,
        "hits": hits,
        "misses": misses,
        "hit_rate": hits / total if total else None,
    }
