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

In the workflow (rule ``ttp_cache_store``, method ``ttp_cached``):

* :func:`cache_plan` chooses the pairs. The *frequent broad queries* are the query keys
  whose label is in ``ttp.serving.labels`` (Broad) and that at least ``min_count`` training or
  validation searches issued (the query log the store is built from), the ``max_queries``
  most frequent; the *active users* are the served population, the test split's users, each
  with the history of their earliest test search (the fewest history entries): the snapshot
  an offline job would embed before that user's requests. The store never reads a test
  query: a test request only hits or misses it.
* the teacher (``ttp.student.teacher``, TTP (SFT+RL)) embeds every pair by generating its
  rewrite, with the history selected for that query by the relevance model, as at
  inference;
* :class:`CachedTTP` serves the test split: a hit is ranked by the stored TTP embedding
  against the teacher's item embeddings, a miss by the distilled student over its own item
  embeddings (two item indexes: the two models embed in different spaces).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from personalir.common.device import ttp_device
from personalir.common.io import (
    read_json,
    read_parquet_table,
    sha256_file,
    write_json,
    write_parquet,
)
from personalir.ttp.inputs.data import Example, ItemCorpus, item_fields, read_examples
from personalir.ttp.inputs.history import select_histories
from personalir.ttp.inputs.relevance import build_relevance
from personalir.ttp.methods.base import (
    PERSONAL_RETRIEVERS,
    PersonalRetriever,
    build_retriever,
    method_context,
)
from personalir.ttp.model.prompts import parse_generated
from personalir.ttp.model.search import exact_search
from personalir.ttp.training.sft_data import SFTSettings, build_prompt

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


# --------------------------------------------------------------------------- workflow
def model_version(
    models: Mapping[str, str], roles: Sequence[str] = ("ttp_backbone", "ttp_adapter")
) -> str:
    """The version of the TTP model a store is built by: the sha256 of every weight and
    config file (``*.safetensors``, ``*config.json``) of its backbone and adapter folders, so a
    retrained adapter is another version and files written beside the weights later (the
    provenance record) are not."""
    import hashlib

    digest = hashlib.sha256()
    for role in roles:
        root = Path(models[role])
        files = sorted(
            p
            for p in root.iterdir()
            if p.is_file() and (p.suffix == ".safetensors" or p.name.endswith("config.json"))
        )
        if not any(p.suffix == ".safetensors" for p in files):
            raise StoreError(f"{root}: no weights (*.safetensors) to version the {role} by")
        for p in files:
            digest.update(f"{role}/{p.name}={sha256_file(p)}\n".encode())
    return digest.hexdigest()[:24]


def frequent_queries(
    examples: Sequence[Example], *, labels: Sequence[str], min_count: int, max_queries: int | None
) -> list[tuple[str, str, int]]:
    """``(query key, the form issued most often, count)`` of the training and validation
    searches' queries with a label in ``labels`` issued at least ``min_count`` times, most
    frequent first (ties by key), at most ``max_queries``."""
    from collections import Counter

    counts: Counter = Counter()
    forms: dict[str, Counter] = {}
    for ex in examples:
        if ex.split == "test" or ex.label not in labels:
            continue
        key = query_key(ex.query)
        counts[key] += 1
        forms.setdefault(key, Counter())[ex.query] += 1
    chosen = sorted((k for k, c in counts.items() if c >= min_count), key=lambda k: (-counts[k], k))
    if max_queries is not None:
        chosen = chosen[:max_queries]
    return [(k, min(forms[k].items(), key=lambda f: (-f[1], f[0]))[0], counts[k]) for k in chosen]


def cache_plan(
    examples: Sequence[Example], *, labels: Sequence[str], min_count: int, max_queries: int | None
) -> tuple[list[Example], dict]:
    """The store's pairs as history-carrying searches (their ``selected_history`` unset: the
    relevance model selects it per query), and a report (queries with counts, users, pairs,
    and the test requests that will hit)."""
    queries = frequent_queries(
        examples, labels=labels, min_count=min_count, max_queries=max_queries
    )
    first: dict[str, Example] = {}
    for ex in examples:
        if ex.split != "test":
            continue
        cur = first.get(ex.user_id)
        if cur is None or (len(ex.history), ex.example_id) < (len(cur.history), cur.example_id):
            first[ex.user_id] = ex
    plan = []
    for user in sorted(first):
        snap = first[user]
        for k, (_key, form, _n) in enumerate(queries):
            plan.append(
                Example(
                    example_id=f"cache:{user}:{k}",
                    source="cache",
                    domain=snap.domain,
                    user_id=user,
                    query=form,
                    target="",
                    label="Cache",
                    split="test",
                    history=list(snap.history),
                )
            )
    keys = {q[0] for q in queries}
    test = [ex for ex in examples if ex.split == "test"]
    report = {
        "queries": [{"query": form, "key": key, "count": n} for key, form, n in queries],
        "labels": list(labels),
        "min_count": min_count,
        "max_queries": max_queries,
        "users": len(first),
        "pairs": len(plan),
        "test_requests": len(test),
        "test_requests_hitting": sum(query_key(ex.query) in keys for ex in test),
    }
    return plan, report


@PERSONAL_RETRIEVERS.register("ttp_cached")
class CachedTTP(PersonalRetriever):
    """Serving TTP offline (paper section 5.1): a request whose (user, query) pair is in the
    store gets the teacher's precomputed TTP embedding, searched over the teacher's item
    embeddings; any other request is served by the distilled student, without generation."""

    name, label, uses_history = "ttp_cached", "TTP cache + student", True
    model_roles = ("ttp_backbone", "ttp_adapter", "student", "ttp_store")
    config_keys = ("student", "inference", "sft")
    table4_row = False
    # The adapter is the student's teacher's (ttp.student.teacher); the workflow resolves it.
    adapter = "teacher"
    variant = "full"  # the student that serves the misses (Table 8's full student)
    default_params = {"teacher": "ttp_rl", "teacher_params": {}}

    @classmethod
    def params_from_config(cls, ttp):
        teacher = ttp["student"]["teacher"]
        return {
            "teacher": teacher,
            "teacher_params": PERSONAL_RETRIEVERS.get(teacher).params_from_config(ttp),
        }

    def rank(self, examples):
        from dataclasses import replace

        models = self.ctx.models
        store = open_store(models["ttp_store"], model_version=model_version(models))
        hits = [ex for ex in examples if store.get(ex.user_id, ex.query) is not None]
        hit_ids = {ex.example_id for ex in hits}
        misses = [ex for ex in examples if ex.example_id not in hit_ids]
        ranking = {}
        if hits:
            teacher_ctx = replace(
                self.ctx, models={r: models[r] for r in ("ttp_backbone", "ttp_adapter")}
            )
            teacher = build_retriever(
                self.params["teacher"], teacher_ctx, self.params["teacher_params"]
            )
            teacher.load()
            items = teacher._items(teacher.encoder)
            vectors = np.stack([store.get(ex.user_id, ex.query) for ex in hits])
            ranking.update(
                exact_search(
                    [ex.example_id for ex in hits],
                    vectors,
                    self.ctx.corpus.ids,
                    items,
                    self.ctx.depth,
                )
            )
            self.info["teacher_backbone"] = teacher.info.get("backbone")
        if misses:
            student = build_retriever(
                "student", replace(self.ctx, models={"student": models["student"]})
            )
            ranking.update(student.rank(misses))
        by_label: dict[str, list[int]] = {}
        for ex in examples:
            by_label.setdefault(ex.label, []).append(ex.example_id in hit_ids)
        self.info.update(
            teacher=self.params["teacher"],
            store_pairs=len(store),
            hits=len(hits),
            misses=len(misses),
            hit_rate=len(hits) / len(examples) if examples else None,
            hit_rate_by_label={k: sum(v) / len(v) for k, v in sorted(by_label.items())},
            routes={
                ex.example_id: ("cache" if ex.example_id in hit_ids else "student")
                for ex in examples
            },
        )
        return ranking


def build_store(
    *,
    examples_path: str | Path,
    items_path: str | Path,
    ttp: Mapping,
    models: Mapping[str, str],
    seed: int,
    threads: int,
    out_dir: str | Path,
    report_out: str | Path,
    log=print,
) -> dict:
    """Rule ttp_cache_store: the teacher's TTP embeddings of one set's cache plan."""
    import time

    import torch

    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    serving = ttp["serving"]
    examples = read_examples(examples_path)
    corpus = ItemCorpus.read(items_path)
    plan, report = cache_plan(
        examples,
        labels=serving["labels"],
        min_count=int(serving["min_count"]),
        max_queries=serving["max_queries"],
    )
    select_histories(
        plan,
        corpus,
        build_relevance(dict(ttp["history"]["relevance"]), ttp_device(ttp)),
        int(ttp["history"]["n"]),
        item_fields(ttp),
        int(ttp["items"]["max_features"]),
    )
    teacher_name = ttp["student"]["teacher"]
    cls = PERSONAL_RETRIEVERS.get(teacher_name)
    ctx = method_context(corpus, ttp, dict(models), depth=1, seed=seed, threads=threads)
    teacher = build_retriever(teacher_name, ctx, cls.params_from_config(ttp))
    teacher.load()
    enc = teacher.encoder
    settings = SFTSettings(
        item_fields=ctx.item_fields,
        max_features=ctx.max_features,
        history_item_tokens=int(teacher.params["history_item_tokens"]),
        system_prompt=teacher.params["system_prompt"],
    )
    prompts = [build_prompt(ex, corpus, enc.tokenizer, settings) for ex in plan]
    if plan:
        generated, vectors, well_formed = enc.generate_and_embed(
            prompts, int(teacher.params["max_new_tokens"])
        )
    else:
        generated, vectors, well_formed = [], np.zeros((0, 1), np.float32), []
    version = model_version(models)
    meta = write_store(
        out_dir,
        [ex.user_id for ex in plan],
        [ex.query for ex in plan],
        vectors,
        model_version=version,
    )
    report.update(
        teacher=teacher_name,
        backbone=teacher.info.get("backbone"),
        model_version=version,
        store=meta,
        well_formed_share=float(np.mean(well_formed)) if well_formed else None,
        rewrites={
            ex.example_id: parse_generated(g)[0] for ex, g in zip(plan, generated, strict=True)
        },
        seconds=round(time.perf_counter() - t0, 3),
    )
    write_json(report_out, report)
    log(
        f"{len(plan)} pairs ({report['users']} users x {len(report['queries'])} queries); "
        f"{report['test_requests_hitting']} of {report['test_requests']} test requests will hit"
    )
    return report
