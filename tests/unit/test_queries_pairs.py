"""User matching and pair selection on hand-made Gaussians (golden values stated inline)."""

import numpy as np
import pandas as pd
import pytest

from personalir.queries.matching import (
    UserProfile,
    bhattacharyya_distance,
    jeffreys_divergence,
    load_user_profiles,
)
from personalir.queries.pairs import (
    FluencyCache,
    HeldOutKNN,
    attribution_checks,
    select_product_pairs,
)
from personalir.syntax.gaussian import LowRankGaussian


def profile(user, mean, lam=0.0, noise=1.0, threshold=4.0):
    mean = np.asarray(mean, dtype=float)
    d = len(mean)
    v = np.eye(d)[0]
    return UserProfile(
        user,
        LowRankGaussian(mean, (np.sqrt(lam) * v)[:, None], np.full(d, noise)),
        threshold,
        "mle",
    )


def test_gaussian_distances_golden():
    a, b = profile("a", [0.0, 0.0]), profile("b", [3.0, 4.0])
    # Equal covariances I: Jeffreys = |mu_a - mu_b|^2 = 25, Bhattacharyya = 25 / 8.
    assert jeffreys_divergence(a, b) == pytest.approx(25.0)
    assert bhattacharyya_distance(a, b) == pytest.approx(25.0 / 8)
    assert jeffreys_divergence(a, a) == pytest.approx(0.0, abs=1e-12)
    # Same mean, variances 1 and 2 in each of 2 dims: per dim 0.5 * (1/2 + 2 - 2) = 0.25.
    c = profile("c", [0.0, 0.0], noise=2.0)
    assert jeffreys_divergence(a, c) == pytest.approx(0.5)
    assert jeffreys_divergence(a, c) == pytest.approx(jeffreys_divergence(c, a))


def test_profiles_load_from_the_syntax_stage_table(tmp_path):
    from personalir.common.io import write_parquet
    from personalir.syntax.gaussian import fit_profiles

    gen = np.random.default_rng(0)
    rows, z = [], []
    for u, centre in (("u1", 0.0), ("u2", 3.0)):
        for i in range(40):
            rows.append({"user_id": u, "split": ("train", "calib", "test")[i % 3]})
            z.append(gen.normal(centre, 1.0, size=4))
    meta, z = pd.DataFrame(rows), np.asarray(z)
    table, _ = fit_profiles(
        meta, z, {"threshold_quantile": 0.95, "var_floor": 1e-4, "em_max_iter": 200, "em_tol": 1e-7}
    )
    write_parquet(tmp_path / "profiles.parquet", table)
    profs = load_user_profiles(tmp_path / "profiles.parquet")
    assert sorted(profs) == ["u1", "u2"]
    p = profs["u2"]
    assert p.threshold == pytest.approx(table.column("mle_threshold")[1].as_py())
    assert p.distance_sq(np.full((1, 4), 3.0))[0] < p.distance_sq(np.zeros((1, 4)))[0]
    chi = load_user_profiles(tmp_path / "profiles.parquet", gate="chi2", chi2_quantile=0.95)
    assert chi["u1"].threshold == pytest.approx(9.487729, rel=1e-5)  # chi2(4) 95% quantile
    eig = load_user_profiles(tmp_path / "profiles.parquet", fit="eigenpair")
    assert eig["u1"].threshold == pytest.approx(table.column("eigenpair_threshold")[0].as_py())


def _scene():
    """Users A (0,0), B (5,0), C (0,5), unit variance, threshold D^2 <= 4 (radius 2)."""
    profs = {u: profile(u, m) for u, m in (("A", [0, 0]), ("B", [5, 0]), ("C", [0, 5]))}
    pts = {
        "a1": [0.0, 0.0],
        "a2": [0.5, 0.0],
        "b1": [5.0, 0.0],
        "b2": [4.0, 0.0],
        "c1": [0.0, 5.0],
        "c2": [0.0, 4.5],
        "mid": [2.5, 0.0],
    }
    ids = list(pts)
    return profs, ids, [f"text {i}" for i in ids], np.array([pts[i] for i in ids])


def test_pairs_farthest_gaussians_first_disjoint_users_best_margin():
    profs, ids, texts, z = _scene()
    calls = []

    def scorer(batch):
        calls.append(list(batch))
        return [10.0] * len(batch)

    fl = FluencyCache(scorer, max_perplexity=100.0)
    sel = select_product_pairs(
        "P",
        ["A", "B", "C"],
        profs,
        ids,
        texts,
        z,
        per_product=None,
        distance="jeffreys",
        fluency=fl,
    )
    # Jeffreys: B-C = 50 > A-B = A-C = 25, so B-C is taken; A is then left without a partner.
    assert len(sel.pairs) == 1
    pair = sel.pairs[0]
    assert pair["distance"] == pytest.approx(50.0)
    assert {pair["sides"]["a"]["user_id"], pair["sides"]["b"]["user_id"]} == {"B", "C"}
    by_user = {s["user_id"]: s["candidate_id"] for s in pair["sides"].values()}
    # The candidate of largest normalised margin: b1 (at B's mean), c1 (at C's mean).
    assert by_user == {"B": "b1", "C": "c1"}
    assert sel.report["feasible_user_pairs"] == 3
    # Only the two chosen candidates were scored for fluency (the lazy filter: fluency costs
    # a model pass per text, so nothing is scored ahead of need).
    assert sorted(t for c in calls for t in c) == ["text b1", "text c1"]


def test_lazy_fluency_moves_to_the_next_candidate_and_counts():
    profs, ids, texts, z = _scene()
    fl = FluencyCache(lambda b: [1000.0 if t == "text b1" else 10.0 for t in b], 100.0)
    sel = select_product_pairs(
        "P", ["A", "B"], profs, ids, texts, z, per_product=1, distance="jeffreys", fluency=fl
    )
    sides = {s["user_id"]: s["candidate_id"] for s in sel.pairs[0]["sides"].values()}
    assert sides == {"A": "a1", "B": "b2"}
    assert fl.removed == {"text b1": "perplexity 1000.0 > 100.0"}
    # No fluent candidate at all: the pair is skipped and counted, not forced.
    fl = FluencyCache(lambda b: [1000.0] * len(b), 100.0)
    sel = select_product_pairs(
        "P", ["A", "B"], profs, ids, texts, z, per_product=1, distance="jeffreys", fluency=fl
    )
    assert sel.pairs == [] and sel.report["skipped_no_fluent_candidate"] == 1


def test_no_pair_without_own_candidates():
    profs, ids, texts, z = _scene()
    keep = [i for i, c in enumerate(ids) if c.startswith("a")]
    sel = select_product_pairs(
        "P",
        ["A", "B"],
        profs,
        [ids[i] for i in keep],
        [texts[i] for i in keep],
        z[keep],
        per_product=None,
        distance="jeffreys",
        fluency=FluencyCache(lambda b: [1.0], 9.0),
    )
    assert sel.pairs == [] and sel.report["feasible_user_pairs"] == 0


def test_attribution_checks_and_held_out_knn():
    profs, ids, texts, z = _scene()
    pair = {"sides": {"a": {"user_id": "A"}, "b": {"user_id": "B"}}}
    ok = attribution_checks(pair, profs, z[0], z[2])
    assert ok["loglik_both"] and ok["loglik_assignment"]
    swapped = attribution_checks(pair, profs, z[2], z[0])
    assert not swapped["loglik_both"] and not swapped["loglik_assignment"]
    emb = pd.DataFrame({"user_id": ["A", "A", "B", "B"], "split": ["test"] * 3 + ["train"]})
    knn = HeldOutKNN(emb, np.array([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [1.0, 0.0]]), k=2)
    assert knn("A", np.array([2.0, 0.0])) > knn("B", np.array([2.0, 0.0]))
    assert knn("nobody", np.array([1.0, 0.0])) == -np.inf


def test_preferred_backend_wins_over_a_larger_margin_when_the_user_owns_one():
    """b2 (margin smaller than b1's) is an LM candidate: with prefer_backends [lm] B takes
    it; C owns no LM candidate and falls back to its best-margin one (c1)."""
    profs, ids, texts, z = _scene()
    fl = FluencyCache(lambda batch: [10.0] * len(batch), max_perplexity=100.0)
    rank = [0 if i == "b2" else 1 for i in ids]
    kw = dict(per_product=None, distance="jeffreys", fluency=fl)
    sel = select_product_pairs("P", ["A", "B", "C"], profs, ids, texts, z, preference=rank, **kw)
    by_user = {s["user_id"]: s["candidate_id"] for s in sel.pairs[0]["sides"].values()}
    assert by_user == {"B": "b2", "C": "c1"}
    plain = select_product_pairs("P", ["A", "B", "C"], profs, ids, texts, z, **kw)
    by_user = {s["user_id"]: s["candidate_id"] for s in plain.pairs[0]["sides"].values()}
    assert by_user == {"B": "b1", "C": "c1"}
