"""Per-user splits, the rule vocabulary and sparse sentence vectors.

Splits are per user: a seeded permutation of the user's usable sentences puts
``round(n * test)`` of them in ``test``, ``round(n * calib)`` in ``calib`` and the rest in
``train``. ``train`` fits the rule vocabulary, the SVD, the encoder and every profile; ``calib``
early-stops the encoder and sets the acceptance thresholds; ``test`` is used only by the
attribution evaluation. The vocabulary is fitted on ``train`` only (the reference code used
every sentence; the difference is a few rare rules, and no held-out sentence shapes a feature).
A sentence's feature for a rule is ``count / (1 + count)`` (reference code), so a rule repeated
in one sentence saturates instead of dominating.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from personalir.common.seeding import rng

SPLITS = ("train", "calib", "test")


def assign_splits(user_ids: Sequence[str], *, calib: float, test: float, seed: int) -> np.ndarray:
    """Split label of each sentence (array of ``"train"|"calib"|"test"``), per user."""
    user_ids = np.asarray(user_ids, dtype=object)
    labels = np.empty(len(user_ids), dtype=object)
    order = np.argsort(user_ids, kind="stable")
    bounds = np.flatnonzero(np.r_[True, user_ids[order][1:] != user_ids[order][:-1], True])
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        rows = order[start:stop]
        n = len(rows)
        perm = rows[rng(seed, "split", user_ids[rows[0]]).permutation(n)]
        n_test = int(round(n * test))
        n_calib = int(round(n * calib))
        labels[perm[:n_test]] = "test"
        labels[perm[n_test : n_test + n_calib]] = "calib"
        labels[perm[n_test + n_calib :]] = "train"
    return labels


def fit_vocabulary(rule_lists: Sequence[Sequence[str]], min_df: int) -> tuple[list[str], list[int]]:
    """Rules present in at least ``min_df`` sentences, sorted by (-df, rule); and their df."""
    df: Counter = Counter()
    for rules in rule_lists:
        df.update(set(rules))
    kept = sorted(((-c, r) for r, c in df.items() if c >= min_df))
    return [r for _, r in kept], [-c for c, _ in kept]


def vectorize(rule_lists: Sequence[Sequence[str]], vocabulary: Sequence[str]) -> sp.csr_matrix:
    """Sparse ``count/(1+count)`` matrix (sentences x vocabulary); out-of-vocabulary rules drop."""
    index = {r: i for i, r in enumerate(vocabulary)}
    indptr = [0]
    indices: list[int] = []
    data: list[float] = []
    for rules in rule_lists:
        counts = Counter(index[r] for r in rules if r in index)
        for col in sorted(counts):
            c = counts[col]
            indices.append(col)
            data.append(c / (1.0 + c))
        indptr.append(len(indices))
    return sp.csr_matrix(
        (
            np.asarray(data, dtype=np.float32),
            np.asarray(indices, dtype=np.int32),
            np.asarray(indptr, dtype=np.int64),
        ),
        shape=(len(rule_lists), len(vocabulary)),
    )
