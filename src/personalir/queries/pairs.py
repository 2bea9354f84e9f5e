"""Pairs: cross-user syntactic pairs from a product's shared pool, and within-user error pairs.

Syntactic pairs (one product at a time). Its *reviewers* are the product's selected users that
have a syntactic profile; its *pool* is its valid candidates (all backends). For users ``a`` and
``b`` a candidate belongs to ``a`` against ``b`` when ``a``'s acceptance region holds it and
``b``'s does not (:mod:`.matching`). A user pair is *feasible* when each user has at least one
candidate of their own against the other. Feasible pairs are taken greedily in decreasing
*distance between the two users' Gaussians* (config ``pairs.distance``, Jeffreys divergence by
default: the symmetrised Kullback-Leibler divergence of the full rank-one + diagonal
Gaussians), each user and each candidate at most once per product, up to ``per_product``
pairs. The query of ``a`` is, among ``a``'s own candidates against ``b``, the one of largest
normalised margin ``D_b^2/t_b - D_a^2/t_a`` that passes the fluency filter (evaluated
lazily, cached), taken first from the preferred backends' candidates (config
``pairs.prefer_backends``, the language model by default) when ``a`` owns one; likewise for
``b``. A pair whose side has no fluent candidate is skipped and
counted.

Error pairs. Each syntactic query ``q`` of user ``u`` gets the error variant that the error
stage's constrained injection (:class:`personalir.errors.inject.Injector`) makes from ``q``
with ``u``'s error profile; the pair is (clean ``q``, error variant). A query no word of which
can take a valid edit is reported (``shortfall``) and gets no error pair.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from personalir.queries.filters import fluency_reason
from personalir.queries.matching import GAUSSIAN_DISTANCES, UserProfile


@dataclass
class FluencyCache:
    """Perplexities computed on demand (one batch per call), remembered by text."""

    scorer: Callable[[list[str]], list[float]]
    max_perplexity: float
    values: dict[str, float] = field(default_factory=dict)
    removed: dict[str, str] = field(default_factory=dict)

    def perplexity(self, texts: list[str]) -> list[float]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.values]
        if todo:
            self.values.update(zip(todo, self.scorer(todo), strict=True))
        return [self.values[t] for t in texts]

    def fluent(self, text: str) -> bool:
        reason = fluency_reason(self.perplexity([text])[0], self.max_perplexity)
        if reason is not None:
            self.removed[text] = reason
        return reason is None


@dataclass
class ProductSelection:
    pairs: list[dict]
    report: dict


def select_product_pairs(
    product: str,
    users: list[str],
    profiles: dict[str, UserProfile],
    cand_ids: list[str],
    texts: list[str],
    z: np.ndarray,
    *,
    per_product: int | None,
    distance: str,
    fluency: FluencyCache,
    min_distance: float = 0.0,
    preference: Sequence[int] | None = None,
) -> ProductSelection:
    """Syntactic pairs of one product (see the module docstring).

    ``preference``: per candidate, its backend's rank in ``pairs.prefer_backends`` (0 first;
    candidates of other backends rank last); a side takes its best-margin fluent candidate
    of the best rank it has. None: margin alone decides."""
    dist_fn = GAUSSIAN_DISTANCES.get(distance)
    report = {
        "reviewers": len(users),
        "candidates": len(texts),
        "feasible_user_pairs": 0,
        "skipped_no_fluent_candidate": 0,
        "pairs": 0,
    }
    if len(users) < 2 or not texts:
        return ProductSelection([], report)
    rank = [0] * len(texts) if preference is None else [int(r) for r in preference]
    norm = np.stack([profiles[u].distance_sq(z) / profiles[u].threshold for u in users])
    accept = norm <= 1.0
    report["accepted_by_any"] = int(accept.any(0).sum())
    feasible = []
    for a, b in itertools.combinations(range(len(users)), 2):
        own_a = np.flatnonzero(accept[a] & ~accept[b])
        own_b = np.flatnonzero(accept[b] & ~accept[a])
        if len(own_a) and len(own_b):
            d = dist_fn(profiles[users[a]], profiles[users[b]])
            if d >= min_distance:
                feasible.append((-d, users[a], users[b], a, b))
    feasible.sort()
    report["feasible_user_pairs"] = len(feasible)
    used_users: set[int] = set()
    used_cands: set[int] = set()
    pairs = []

    def pick(me: int, other: int) -> int | None:
        own = np.flatnonzero(accept[me] & ~accept[other])
        own = [int(c) for c in own if int(c) not in used_cands]
        # Preferred backends first, then largest normalised margin; ties by candidate id.
        own.sort(key=lambda c: (rank[c], -(norm[other, c] - norm[me, c]), cand_ids[c]))
        for c in own:
            if fluency.fluent(texts[c]):
                return c
        return None

    for neg_d, _, _, a, b in feasible:
        if per_product is not None and len(pairs) >= per_product:
            break
        if a in used_users or b in used_users:
            continue
        ca = pick(a, b)
        cb = pick(b, a) if ca is not None else None
        if ca is None or cb is None:
            report["skipped_no_fluent_candidate"] += 1
            continue
        used_users.update((a, b))
        used_cands.update((ca, cb))
        sides = {}
        for role, me, other, c in (("a", a, b, ca), ("b", b, a, cb)):
            sides[role] = {
                "user_id": users[me],
                "candidate_index": c,
                "candidate_id": cand_ids[c],
                "text": texts[c],
                "d2_own": float(norm[me, c] * profiles[users[me]].threshold),
                "d2_other": float(norm[other, c] * profiles[users[other]].threshold),
                "threshold_own": profiles[users[me]].threshold,
                "threshold_other": profiles[users[other]].threshold,
                "margin": float(norm[other, c] - norm[me, c]),
                "perplexity": fluency.values[texts[c]],
            }
        pairs.append({"product": product, "distance": -neg_d, "sides": sides})
    report["pairs"] = len(pairs)
    return ProductSelection(pairs, report)


def attribution_checks(pair: dict, profiles: dict[str, UserProfile], z_a, z_b, knn=None) -> dict:
    """Is each query of the pair attributed to its own user rather than the partner?

    ``loglik``: by the rank-one + diagonal profile's log-density (the attribution model of the
    syntax stage, not the acceptance rule that selected the pair); ``both`` = both queries
    attributed correctly, ``assignment`` = the right assignment of the two queries to the two
    users is the likelier one. ``knn`` (optional): a scorer ``(user, z) -> score`` over users'
    held-out sentences, an attribution that no part of the selection saw.
    """
    ua, ub = pair["sides"]["a"]["user_id"], pair["sides"]["b"]["user_id"]
    la = [float(profiles[u].log_density(z_a[None])[0]) for u in (ua, ub)]
    lb = [float(profiles[u].log_density(z_b[None])[0]) for u in (ua, ub)]
    out = {
        "loglik_a_own": la[0] > la[1],
        "loglik_b_own": lb[1] > lb[0],
        "loglik_assignment": la[0] + lb[1] > la[1] + lb[0],
    }
    out["loglik_both"] = out["loglik_a_own"] and out["loglik_b_own"]
    if knn is not None:
        ka = [knn(u, z_a) for u in (ua, ub)]
        kb = [knn(u, z_b) for u in (ua, ub)]
        out["knn_both"] = ka[0] > ka[1] and kb[1] > kb[0]
        out["knn_assignment"] = ka[0] + kb[1] > ka[1] + kb[0]
    return out


class HeldOutKNN:
    """Mean cosine similarity of a style vector to its ``k`` nearest held-out (``test``)
    sentences of a user: evidence the profiles and thresholds were not fitted on."""

    def __init__(self, embeddings: pd.DataFrame, z: np.ndarray, k: int = 5, split: str = "test"):
        keep = (embeddings["split"] == split).to_numpy()
        zz = z[keep]
        zz = zz / np.maximum(np.linalg.norm(zz, axis=1, keepdims=True), 1e-12)
        users = embeddings["user_id"].to_numpy()[keep]
        self.bank = {u: zz[users == u] for u in np.unique(users)}
        self.k = k

    def __call__(self, user: str, z: np.ndarray) -> float:
        bank = self.bank.get(user)
        if bank is None or not len(bank):
            return -math.inf
        v = z / max(float(np.linalg.norm(z)), 1e-12)
        sims = np.sort(bank @ v)[::-1][: self.k]
        return float(sims.mean())
