"""The GEC chain: backends applied in the configured order, each on the previous output.

Backends come from ``errors.gec.backends``; identical sentences are corrected once and the
cacheable backends' corrections persist in a cache keyed by sentence hash
(:mod:`personalir.errors.cache`), flushed every chunk so an interrupted run keeps its work.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from personalir.errors.cache import CorrectionCache
from personalir.errors.gec.base import GEC_BACKENDS, GECBackend, GECError

log = logging.getLogger(__name__)


@dataclass
class BackendRun:
    name: str
    inputs: int = 0
    unique_inputs: int = 0
    skipped: int = 0
    cache_hits: int = 0
    computed: int = 0
    changed: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    counters: dict = field(default_factory=dict)
    cache: dict | None = None

    def as_dict(self) -> dict:
        """The run as a report entry. How many sentences the cache served and how many were
        computed depend on what earlier jobs (other domains share the cache) left in it, not
        on the result: their keys end in ``_this_run`` so that the written report leaves them
        to the rule's log (:func:`personalir.common.io.is_volatile`)."""
        d = self.__dict__.copy()
        d["cache_hits_this_run"] = d.pop("cache_hits")
        d["computed_this_run"] = d.pop("computed")
        d["computed_per_second"] = (
            round(self.computed / self.seconds, 2) if self.seconds > 0 else None
        )
        d["seconds"] = round(self.seconds, 3)
        d["cpu_seconds"] = round(self.cpu_seconds, 3)
        return d


def build_backends(gec_config: dict, *, threads: int = 1) -> list[GECBackend]:
    backends = []
    for name in gec_config["backends"]:
        cls = GEC_BACKENDS.get(name)
        backends.append(cls(gec_config.get(name, {}), threads=threads))
    if not backends:
        raise GECError("errors.gec.backends is empty: nothing would be corrected")
    return backends


def correct_corpus(
    backends: Sequence[GECBackend],
    corpus: Sequence[tuple[str, str]],
    *,
    cache_root: str | Path | None,
    chunk_size: int = 512,
) -> tuple[list[str], list[list[str]], list[BackendRun]]:
    """Run the chain over (user_id, sentence) pairs.

    Returns the corrected sentences, for each sentence the names of the backends that changed
    it, and one :class:`BackendRun` per backend (counts, cache hits, seconds). Identical
    sentences are corrected once. Computed corrections are added to the cache every
    ``chunk_size`` sentences, so an interrupted run keeps what it finished.
    """
    current = [s for _, s in corpus]
    changed_by: list[list[str]] = [[] for _ in current]
    runs = []
    for backend in backends:
        run = BackendRun(backend.name, inputs=len(current))
        t0, c0 = time.perf_counter(), time.process_time()
        backend.prepare([(u, s) for (u, _), s in zip(corpus, current, strict=True)])
        cache_obj = (
            CorrectionCache(cache_root, backend.name, backend.fingerprint())
            if backend.cacheable and cache_root is not None
            else None
        )
        unique = list(dict.fromkeys(current))
        run.unique_inputs = len(unique)
        result: dict[str, str] = {}
        todo = []
        for s in unique:
            if not backend.wants(s):
                result[s] = s
                run.skipped += 1
                continue
            hit = cache_obj.get(s) if cache_obj is not None else None
            if hit is not None:
                result[s] = hit
            else:
                todo.append(s)
        run.cache_hits = len(unique) - len(todo) - run.skipped
        for start in range(0, len(todo), chunk_size):
            chunk = todo[start : start + chunk_size]
            fixed = backend.correct(chunk)
            if len(fixed) != len(chunk):
                raise GECError(f"{backend.name} returned {len(fixed)} outputs for {len(chunk)}")
            result.update(zip(chunk, fixed, strict=True))
            if cache_obj is not None:
                cache_obj.put_many(zip(chunk, fixed, strict=True))
                cache_obj.flush()
            log.info("%s: %d/%d sentences computed", backend.name, start + len(chunk), len(todo))
        run.computed = len(todo)
        new = [result[s] for s in current]
        for i, (old, cur) in enumerate(zip(current, new, strict=True)):
            if old != cur:
                changed_by[i].append(backend.name)
                run.changed += 1
        current = new
        run.seconds = time.perf_counter() - t0
        run.cpu_seconds = time.process_time() - c0
        run.counters = dict(backend.counters)
        run.cache = cache_obj.describe() if cache_obj is not None else None
        runs.append(run)
    return current, changed_by, runs
