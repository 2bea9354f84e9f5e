"""Attribution protocols: balanced attribution, user AUROC and full-profile attribution.

Exact definitions (also in docs/syntax.md). ``C(A)`` is the competitor set of user ``A``: the
other modelled users who reviewed at least one product that ``A`` reviewed. Users with an
empty ``C(A)`` are not evaluated (counted in the report). ``s_U(x)`` is a model's score of
sentence ``x`` under user ``U``'s profile; ``T(A)`` are ``A``'s ``test`` sentences.

- Balanced attribution: for every ``x`` in ``T(A)`` one competitor ``B`` is drawn uniformly
  from ``C(A)`` (seeded by user and sentence, so every model sees the same pairs); the trial is
  correct when ``s_A(x) > s_B(x)`` (a tie counts one half). Accuracy per user, then the mean over
  users. Chance is 50%.
- User AUROC: genuine scores ``{s_A(x) : x in T(A)}`` against impostor scores
  ``{s_A(y) : y in T(B), B in C(A)}``, i.e. how well ``A``'s own profile ranks ``A``'s held-out
  sentences above those of people who reviewed the same products (Mann-Whitney, ties one half);
  per user, then the mean over users. Within-profile, so no cross-user calibration is needed.
- Full-profile attribution: all of ``T(A)`` at once, aggregated by the mean score
  (for a Gaussian, the joint log-likelihood per sentence); for every ``B`` in ``C(A)`` the
  comparison ``mean s_A(T(A)) > mean s_B(T(A))`` is one trial; accuracy per user over its
  competitors, then the mean over users. Chance is 50%.
Confidence intervals: percentile bootstrap over users (users resampled with replacement).
Competitor sets come from :func:`product_user_labels` (the products each modelled user
reviewed), which the encoder step also uses to form its same-product cohorts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from personalir.common.bootstrap import mean_interval
from personalir.common.seeding import rng

if TYPE_CHECKING:
    import pandas as pd

MEASURES = ("balanced", "auroc", "full_profile")


def product_user_labels(reviewers: pd.DataFrame, users: list[str]) -> dict[str, list[int]]:
    """Products -> labels of the modelled users who reviewed them."""
    code = {u: i for i, u in enumerate(users)}
    out: dict[str, set[int]] = defaultdict(set)
    for product, user in zip(reviewers["parent_asin"], reviewers["user_id"], strict=True):
        if user in code:
            out[str(product)].add(code[user])
    return {p: sorted(v) for p, v in sorted(out.items())}


def competitor_sets(product_users: dict[str, list[int]], n_users: int) -> list[np.ndarray]:
    """``C(A)`` for every user label ``A`` (sorted arrays of user labels)."""
    comp: list[set[int]] = [set() for _ in range(n_users)]
    for users in product_users.values():
        unique = set(users)
        for u in unique:
            comp[u] |= unique - {u}
    return [np.asarray(sorted(c), dtype=np.int64) for c in comp]


def mann_whitney_auc(genuine: np.ndarray, impostor: np.ndarray) -> float:
    """P(genuine > impostor) + 0.5 P(tie), by ranks."""
    from scipy.stats import rankdata

    genuine, impostor = np.asarray(genuine, float), np.asarray(impostor, float)
    if genuine.size == 0 or impostor.size == 0:
        return float("nan")
    ranks = rankdata(np.concatenate([genuine, impostor]))
    r_gen = ranks[: genuine.size].sum()
    return float((r_gen - genuine.size * (genuine.size + 1) / 2) / (genuine.size * impostor.size))


@dataclass
class EvaluationPlan:
    """The model-independent part: who is evaluated, which pairs, which impostors."""

    test_rows_by_user: dict[int, np.ndarray]
    competitors: list[np.ndarray]
    balanced_pairs: dict[int, np.ndarray]  # user -> competitor per test row
    evaluated: np.ndarray  # user labels evaluated
    skipped_no_competitor: np.ndarray
    skipped_no_test: np.ndarray
    n_subsampled: int = 0


def make_plan(
    test_user: np.ndarray,
    test_ids: np.ndarray,
    competitors: list[np.ndarray],
    seed: int,
    *,
    max_competitors: int | None = None,
) -> EvaluationPlan:
    """``test_user``/``test_ids``: user label and sentence id of each test row.

    With ``max_competitors``, a user with more competitors keeps a seeded uniform subset of
    that size (bounds the cost at full scale; counted in ``n_subsampled``).
    """
    by_user: dict[int, list[int]] = defaultdict(list)
    for row, u in enumerate(test_user):
        by_user[int(u)].append(row)
    rows = {u: np.asarray(v, dtype=np.int64) for u, v in by_user.items()}
    has_test = np.zeros(len(competitors), dtype=bool)
    has_test[list(rows)] = True
    evaluated, no_comp, no_test = [], [], []
    pairs: dict[int, np.ndarray] = {}
    kept: dict[int, np.ndarray] = {}
    n_subsampled = 0
    for u in range(len(competitors)):
        if u not in rows:
            no_test.append(u)
            continue
        comps = competitors[u][has_test[competitors[u]]]
        if comps.size == 0:
            no_comp.append(u)
            continue
        if max_competitors is not None and comps.size > max_competitors:
            keep = rng(seed, "competitors", u).choice(comps.size, max_competitors, replace=False)
            comps = np.sort(comps[keep])
            n_subsampled += 1
        kept[u] = comps
        evaluated.append(u)
        pairs[u] = np.asarray(
            [comps[rng(seed, "balanced", u, test_ids[r]).integers(comps.size)] for r in rows[u]],
            dtype=np.int64,
        )
    comp_eval = [kept.get(i, np.zeros(0, np.int64)) for i in range(len(competitors))]
    return EvaluationPlan(
        rows,
        comp_eval,
        pairs,
        np.asarray(evaluated, np.int64),
        np.asarray(no_comp, np.int64),
        np.asarray(no_test, np.int64),
        n_subsampled,
    )


def _tie_correct(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a > b).astype(float) + 0.5 * (a == b)


class PairScores:
    """Scores of (test row, profile user) pairs, computed once per profile user.

    Only the pairs a protocol needs are scored (not the full rows x users matrix), grouped so
    each profile scores all its rows in one call.
    """

    def __init__(self, model, x_test: np.ndarray, rows: np.ndarray, profiles: np.ndarray):
        self.n_rows = x_test.shape[0]
        keys = np.unique(profiles.astype(np.int64) * self.n_rows + rows.astype(np.int64))
        self.keys = keys
        self.values = np.empty(len(keys), dtype=np.float64)
        prof = keys // self.n_rows
        bounds = np.flatnonzero(np.r_[True, prof[1:] != prof[:-1], True])
        for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
            u = int(prof[start])
            r = keys[start:stop] % self.n_rows
            self.values[start:stop] = model.score_profile(u, x_test[r])

    def get(self, rows: np.ndarray, profiles: np.ndarray) -> np.ndarray:
        want = np.asarray(profiles, np.int64) * self.n_rows + np.asarray(rows, np.int64)
        pos = np.searchsorted(self.keys, want)
        if not np.array_equal(self.keys[np.minimum(pos, len(self.keys) - 1)], want):
            raise KeyError("a requested (row, profile) pair was not scored")
        return self.values[pos]


def needed_pairs(plan: EvaluationPlan) -> tuple[np.ndarray, np.ndarray]:
    rows, profs = [], []
    for a in plan.evaluated:
        a = int(a)
        own = plan.test_rows_by_user[a]
        comps = plan.competitors[a]
        rows += [own, own, np.repeat(own, len(comps))]
        profs += [np.full(len(own), a), plan.balanced_pairs[a], np.tile(comps, len(own))]
        imp = np.concatenate([plan.test_rows_by_user[int(b)] for b in comps])
        rows.append(imp)
        profs.append(np.full(len(imp), a))
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(rows), np.concatenate(profs)


FPR_GRID = np.linspace(0.0, 1.0, 101)


def user_roc(genuine: np.ndarray, impostor: np.ndarray, grid: np.ndarray = FPR_GRID):
    """TPR of one user's ROC at the false-positive rates of ``grid`` (ties move diagonally)."""
    scores = np.concatenate([genuine, impostor])
    labels = np.concatenate([np.ones(len(genuine)), np.zeros(len(impostor))])
    order = np.argsort(-scores, kind="stable")
    scores, labels = scores[order], labels[order]
    last_of_value = np.r_[np.flatnonzero(np.diff(scores)), len(scores) - 1]
    tps = np.cumsum(labels)[last_of_value]
    fps = (last_of_value + 1) - tps
    tpr = np.r_[0.0, tps / max(len(genuine), 1)]
    fpr = np.r_[0.0, fps / max(len(impostor), 1)]
    return np.interp(grid, fpr, tpr)


def evaluate_model(model, x_test: np.ndarray, plan: EvaluationPlan) -> dict:
    """Per-user values of the three measures, and the users' ROC curves vertically averaged
    on :data:`FPR_GRID` (the curve whose area is the mean per-user AUROC, up to the grid)."""
    per_user = {m: {} for m in MEASURES}
    table = PairScores(model, x_test, *needed_pairs(plan))
    roc_sum = np.zeros_like(FPR_GRID)
    for a in plan.evaluated:
        a = int(a)
        rows = plan.test_rows_by_user[a]
        comps = plan.competitors[a]
        own = table.get(rows, np.full(len(rows), a))
        rival = table.get(rows, plan.balanced_pairs[a])
        per_user["balanced"][a] = float(_tie_correct(own, rival).mean())
        imp_rows = np.concatenate([plan.test_rows_by_user[int(b)] for b in comps])
        imp_scores = table.get(imp_rows, np.full(len(imp_rows), a))
        per_user["auroc"][a] = mann_whitney_auc(own, imp_scores)
        roc_sum += user_roc(own, imp_scores)
        theirs = table.get(np.repeat(rows, len(comps)), np.tile(comps, len(rows)))
        theirs = theirs.reshape(len(rows), len(comps)).mean(axis=0)
        per_user["full_profile"][a] = float(
            _tie_correct(np.full(len(comps), own.mean()), theirs).mean()
        )
    n = max(len(plan.evaluated), 1)
    return {"per_user": per_user, "roc": roc_sum / n}


def bootstrap_ci(
    values: np.ndarray, *, n_boot: int, level: float, seed: int
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean over users (:func:`mean_interval`), drawn from
    ``rng(seed, "bootstrap")``; NaN without values or resamples."""
    return mean_interval(values, n_boot, level, rng(seed, "bootstrap"))
