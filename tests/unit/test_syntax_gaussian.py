"""Rank-one + diagonal Gaussians: MLE by factor analysis vs the eigenpair heuristic."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from personalir.syntax.gaussian import (
    LowRankGaussian,
    acceptance_threshold,
    fit_eigenpair_heuristic,
    fit_factor_analysis,
    fit_factor_analysis_many,
    gaussian_loglik,
    reference_distance_sq,
)


def _sample(seed, n=40, d=8):
    gen = np.random.default_rng(seed)
    w = gen.normal(size=(d, 1))
    psi = gen.uniform(0.05, 0.5, size=d)
    return gen.multivariate_normal(gen.normal(size=d), w @ w.T + np.diag(psi), size=n)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mle_matches_scikit_learn_and_beats_the_heuristic(seed):
    from sklearn.decomposition import FactorAnalysis

    x = _sample(seed)
    model, info = fit_factor_analysis(x, 1, max_iter=5000, tol=1e-10)
    sk = FactorAnalysis(1, tol=1e-12, max_iter=20000).fit(x)
    # scikit-learn's FactorAnalysis is an independent MLE implementation (SVD-based).
    assert info["loglik"] == pytest.approx(sk.score(x) * len(x), abs=1e-3)
    assert gaussian_loglik(model.mean, model.covariance(), x) == pytest.approx(info["loglik"])
    heur = fit_eigenpair_heuristic(x)
    assert info["loglik"] >= gaussian_loglik(heur.mean, heur.covariance(), x)


def test_batched_fit_equals_single_fits():
    xs = [_sample(s, n=20 + s) for s in range(4)]
    many, infos = fit_factor_analysis_many(xs, 1)
    for x, m, info in zip(xs, many, infos, strict=True):
        single, sinfo = fit_factor_analysis(x, 1)
        np.testing.assert_allclose(m.loadings, single.loadings)
        assert info == sinfo


def test_heuristic_is_top_eigenpair_with_clipped_residual():
    x = np.array([[0.0, 0.0], [2.0, 0.1], [4.0, -0.1], [6.0, 0.0]])
    heur = fit_eigenpair_heuristic(x, var_floor=1e-4)
    lam, v = heur.rank_one_parts()
    s = np.cov(x.T, bias=True)
    evals, evecs = np.linalg.eigh(s)
    assert lam == pytest.approx(evals[-1])
    assert abs(v @ evecs[:, -1]) == pytest.approx(1.0)
    assert np.all(heur.noise_var >= 1e-4)
    np.testing.assert_allclose(heur.noise_var, np.maximum(np.diag(s) - lam * v**2, 1e-4))


def test_distances_and_density_agree_with_explicit_formulas():
    gen = np.random.default_rng(3)
    model = LowRankGaussian(gen.normal(size=4), gen.normal(size=(4, 1)), gen.uniform(0.1, 1, 4))
    x = gen.normal(size=(5, 4))
    cov = model.covariance()
    diff = x - model.mean
    np.testing.assert_allclose(
        model.mahalanobis_sq(x), np.einsum("ij,jk,ik->i", diff, np.linalg.inv(cov), diff)
    )
    np.testing.assert_allclose(model.log_density(x), multivariate_normal(model.mean, cov).logpdf(x))


def test_reference_distance_is_not_the_model_mahalanobis():
    v = np.array([0.6, 0.8, 0.0])
    iso = LowRankGaussian(np.zeros(3), (2.0 * v)[:, None], np.full(3, 0.5))
    x = np.array([[1.0, -1.0, 0.5], [0.2, 0.3, -2.0]])
    ref = reference_distance_sq(iso, x)
    # Closed form (v.d)^2 / lambda + |d - (v.d) v|^2 / sigma^2 with lambda = 4, sigma^2 = 0.5 ...
    proj = x @ v
    np.testing.assert_allclose(ref, proj**2 / 4.0 + ((x - np.outer(proj, v)) ** 2).sum(1) / 0.5)
    # ... which is the Mahalanobis distance of lambda v v^T + sigma^2 (I - v v^T),
    other = 4.0 * np.outer(v, v) + 0.5 * (np.eye(3) - np.outer(v, v))
    np.testing.assert_allclose(ref, np.einsum("ij,jk,ik->i", x, np.linalg.inv(other), x))
    # not that of the model's covariance lambda v v^T + sigma^2 I.
    assert not np.allclose(ref, iso.mahalanobis_sq(x))


def test_acceptance_threshold_is_the_held_out_quantile():
    d2 = np.arange(1, 21, dtype=float)  # 1..20
    # numpy's linear interpolation: position 0.95 * 19 = 18.05 -> 19 + 0.05 * 1.
    assert acceptance_threshold(d2, 0.95) == pytest.approx(19.05)
    with pytest.raises(ValueError):
        acceptance_threshold(np.array([]), 0.95)
