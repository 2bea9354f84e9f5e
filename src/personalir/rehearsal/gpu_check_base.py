"""The GPU check's harness (:mod:`.gpu_check`): tolerances, the small shared inputs, timing
and the comparison of scores."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from personalir.data.sample_world import build_world
from personalir.rehearsal import tiny_models as tm
from personalir.retrieval.base import QueryText

SEED = 20251129
DOMAIN = "Musical_Instruments"


@dataclass(frozen=True)
class Tolerance:
    """``|a - b| <= atol + rtol * |b|`` element-wise (b: the reference device's value)."""

    atol: float
    rtol: float = 0.0
    why: str = ""

    def worst(self, a: np.ndarray, b: np.ndarray) -> float:
        """The largest ``|a - b| / (atol + rtol |b|)`` (pass: <= 1)."""
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape:
            raise ValueError(f"shapes differ: {a.shape} vs {b.shape}")
        if a.size == 0:
            return 0.0
        return float(np.max(np.abs(a - b) / (self.atol + self.rtol * np.abs(b))))


FLOAT32 = Tolerance(1e-4, 1e-3, "float32 on both devices: reduction order only")
FLOAT16 = Tolerance(5e-4, 5e-3, "float16 on the GPU (BGE-M3's use_fp16: auto) vs float32")
BFLOAT16 = Tolerance(0.05, 0.0, "bfloat16 on the GPU (rerankers' dtype: auto) vs float32")


@dataclass
class Inputs:
    """The small shared inputs: product texts of a sample world and short queries."""

    doc_ids: list[str]
    texts: list[str]
    queries: list[QueryText]
    words: list[str]
    root: Path


def build_inputs(root: Path, n_docs: int, n_queries: int) -> Inputs:
    world = build_world(DOMAIN, seed=SEED, n_products=n_docs, n_users=4, min_sentences_per_user=5)
    products = world.products[:n_docs]
    texts = [" ".join([p.title, *p.features[:2]]) for p in products]
    queries = [
        QueryText(f"q{i}", " ".join(p.title.split()[:5]).lower(), DOMAIN)
        for i, p in enumerate(products[:: max(1, len(products) // n_queries)][:n_queries])
    ]
    words = tm.vocabulary(texts + [q.text for q in queries], limit=4000)
    return Inputs([p.parent_asin for p in products], texts, queries, words, root)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def compare_scores(got: dict, ref: dict, tol: Tolerance) -> dict:
    common = sorted(set(got) & set(ref))
    a = np.array([got[k] for k in common])
    b = np.array([ref[k] for k in common])
    worst = tol.worst(a, b)
    return {
        "compared": len(common),
        "of": len(ref),
        "max_abs_diff": float(np.max(np.abs(a - b))) if common else None,
        "worst_over_tolerance": worst,
        "passed": bool(common) and len(common) == len(ref) and worst <= 1.0,
    }


@dataclass(frozen=True)
class Check:
    name: str
    unit: str  # what the throughput counts
    tolerance: Tolerance
    run: Callable[[str], tuple[object, int]]  # device -> (outputs, units of work)
    compare: Callable[[object, object], dict]  # (device outputs, reference outputs) -> facts


def timed(check: Check, device: str) -> tuple[object, dict]:
    sync(device)
    t0 = time.perf_counter()
    out, units = check.run(device)
    sync(device)
    seconds = time.perf_counter() - t0
    return out, {
        "seconds": round(seconds, 3),
        check.unit: units,
        f"{check.unit}_per_s": round(units / seconds, 2) if seconds > 0 else None,
    }
