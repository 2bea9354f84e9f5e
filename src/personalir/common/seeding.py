"""Deterministic seeds derived from a base seed and a path of names."""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(base: int, *names: object) -> int:
    """A 63-bit seed that depends only on ``base`` and ``names`` (stable across runs/processes)."""
    h = hashlib.sha256(str(base).encode())
    for name in names:
        h.update(b"\x1f" + str(name).encode())
    return int.from_bytes(h.digest()[:8], "big") >> 1


def rng(base: int, *names: object) -> np.random.Generator:
    return np.random.default_rng(derive_seed(base, *names))
