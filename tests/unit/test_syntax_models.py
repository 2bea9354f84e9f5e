"""The registered profile models and the attribution protocols on tiny inline data."""

from __future__ import annotations

import numpy as np
import pytest

from personalir.syntax.models import PROFILE_MODELS, build_model, vmf_log_normaliser
from personalir.syntax.protocols import (
    FPR_GRID,
    bootstrap_ci,
    competitor_sets,
    evaluate_model,
    make_plan,
    mann_whitney_auc,
    user_roc,
)

PAPER_MODELS = {
    "single_embedding_cosine",
    "shared_isotropic_gaussian",
    "user_diagonal_gaussian",
    "von_mises_fisher",
    "rank_two_diagonal_gaussian",
    "knn",
    "rank_one_diagonal_gaussian",
}


def test_the_seven_models_and_the_heuristic_variant_are_registered():
    assert set(PROFILE_MODELS.names()) >= PAPER_MODELS
    assert "rank_one_diagonal_gaussian_eigenpair" in PROFILE_MODELS
    with pytest.raises(KeyError, match="registered:"):
        build_model("no_such_model", {})


def _clusters(n_users=6, n=30, d=8, seed=0):
    gen = np.random.default_rng(seed)
    centres = gen.normal(size=(n_users, d))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = np.concatenate([c + 0.1 * gen.normal(size=(n, d)) for c in centres])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, np.repeat(np.arange(n_users), n)


@pytest.mark.parametrize("name", sorted(PAPER_MODELS | {"rank_one_diagonal_gaussian_eigenpair"}))
def test_every_model_attributes_well_separated_users(name):
    x, user = _clusters()
    test = np.arange(len(x)) % 5 == 0
    model = build_model(name, {"k": 3}).fit(x[~test], user[~test])
    own = model.score(x[test], user[test])
    other = model.score(x[test], (user[test] + 1) % 6)
    assert own.shape == (test.sum(),)
    assert (own > other).mean() > 0.95
    np.testing.assert_allclose(
        model.score_profile(2, x[test][:3]), model.score(x[test][:3], np.full(3, 2))
    )


def test_vmf_normaliser_matches_the_closed_form_in_three_dimensions():
    # On S^2: C_3(kappa) = kappa / (4 pi sinh kappa).
    for kappa in (0.5, 3.0, 40.0):
        assert vmf_log_normaliser(kappa, 3) == pytest.approx(
            np.log(kappa / (4 * np.pi * np.sinh(kappa)))
        )
    assert vmf_log_normaliser(0.0, 3) == pytest.approx(-np.log(4 * np.pi))


def test_mann_whitney_auc_golden_values():
    assert mann_whitney_auc([3, 4], [1, 2]) == 1.0
    assert mann_whitney_auc([1], [1]) == 0.5
    # Pairs (2>1, 2=2, 2<3): (1 + 0.5 + 0) / 3.
    assert mann_whitney_auc([2], [1, 2, 3]) == pytest.approx(0.5)
    assert np.isnan(mann_whitney_auc([], [1]))


def test_competitor_sets_come_from_shared_products():
    comps = competitor_sets({"p1": [0, 1], "p2": [1, 2], "p3": [3]}, 4)
    assert [c.tolist() for c in comps] == [[1], [0, 2], [1], []]


class _FixedScores:
    """score(x, u) = x[:, u]: a test row's score under each profile is given explicitly."""

    def score_profile(self, u, x):
        return x[:, u]


def test_protocols_on_hand_computed_scores():
    # Test rows 0-1 belong to user 0, rows 2-3 to user 1, row 4 to user 2 (no competitor).
    x = np.array(
        [
            [0.9, 0.1, 0.0],
            [0.2, 0.5, 0.0],
            [0.3, 0.8, 0.0],
            [0.6, 0.7, 0.0],
            [0.0, 0.0, 1.0],
        ]
    )
    plan = make_plan(
        np.array([0, 0, 1, 1, 2]),
        np.array(["a", "b", "c", "d", "e"]),
        competitor_sets({"p": [0, 1], "q": [2]}, 3),
        seed=1,
    )
    assert plan.evaluated.tolist() == [0, 1] and plan.skipped_no_competitor.tolist() == [2]
    res = evaluate_model(_FixedScores(), x, plan)
    per = res["per_user"]
    # User 0: row 0 (0.9 > 0.1) right, row 1 (0.2 < 0.5) wrong.
    assert per["balanced"][0] == 0.5
    # User 1: rows 2 and 3 both right (0.8 > 0.3, 0.7 > 0.6).
    assert per["balanced"][1] == 1.0
    # AUROC of user 0: genuine {0.9, 0.2} vs impostor rows 2-3 under profile 0 {0.3, 0.6}.
    assert per["auroc"][0] == pytest.approx(0.5)
    # Full profile of user 0: mean own 0.55 vs mean under profile 1 0.3.
    assert per["full_profile"][0] == 1.0
    # User 1: genuine {0.8, 0.7} vs impostor {0.1, 0.5} -> 1.0; mean 0.75 > 0.45.
    assert per["auroc"][1] == 1.0 and per["full_profile"][1] == 1.0
    assert res["roc"].shape == FPR_GRID.shape


def test_user_roc_endpoints():
    perfect = user_roc(np.array([3.0, 4.0]), np.array([1.0, 2.0]))
    assert perfect[0] == 1.0 or perfect[1] == 1.0
    assert perfect[-1] == 1.0
    tied = user_roc(np.array([1.0]), np.array([1.0]))
    np.testing.assert_allclose(tied, FPR_GRID)  # all ties: the diagonal


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    values = np.linspace(0.4, 0.9, 50)
    lo, hi = bootstrap_ci(values, n_boot=500, level=0.95, seed=3)
    assert lo < values.mean() < hi
    assert (lo, hi) == bootstrap_ci(values, n_boot=500, level=0.95, seed=3)


def test_competitor_subsets_are_seeded_and_counted():
    comps = competitor_sets({"p": [0, 1, 2, 3]}, 4)
    users = np.array([0, 1, 2, 3])
    ids = np.array(["a", "b", "c", "d"])
    plan = make_plan(users, ids, comps, seed=4, max_competitors=2)
    assert [len(plan.competitors[u]) for u in range(4)] == [2, 2, 2, 2]
    assert plan.n_subsampled == 4
    again = make_plan(users, ids, comps, seed=4, max_competitors=2)
    assert [c.tolist() for c in again.competitors] == [c.tolist() for c in plan.competitors]
    for u in range(4):
        assert u not in plan.competitors[u] and plan.balanced_pairs[u][0] in plan.competitors[u]


def test_rows_by_label_groups_as_a_mask_does_in_the_same_order():
    from personalir.syntax.models import rows_by_label

    labels = np.array([2, 0, 2, 1, 0, 2, 4])
    groups = rows_by_label(labels, 6)  # label 3 and 5 have no row
    assert [g.tolist() for g in groups] == [[1, 4], [3], [0, 2, 5], [], [6], []]
    x = np.arange(14.0).reshape(7, 2)
    for u, rows in enumerate(groups):
        assert np.array_equal(x[rows], x[labels == u])


@pytest.mark.parametrize("name", sorted(PROFILE_MODELS))
def test_scores_do_not_depend_on_the_order_rows_are_grouped(name):
    """score() groups rows by user; shuffling the rows permutes the scores and nothing else."""
    gen = np.random.default_rng(3)
    x = gen.normal(size=(60, 4)) + np.repeat(np.eye(4)[:3] * 3, 20, axis=0)
    user = np.repeat(np.arange(3), 20)
    model = build_model(name, {}).fit(x, user)
    perm = gen.permutation(60)
    assert np.array_equal(model.score(x[perm], user[perm]), model.score(x, user)[perm])
    assert np.array_equal(model.score(x[:5], user[:5]), model.score_profile(0, x[:5]))
