"""Low-rank-plus-diagonal Gaussians: the per-user profile of the paper.

The covariance ``Sigma = W W^T + diag(psi)`` with ``W`` of rank ``k`` is the factor-analysis
model; its maximum-likelihood fit is :func:`fit_factor_analysis` (EM, Rubin and Thayer 1982).
For ``k = 1`` this is the paper's ``lambda v v^T + diag(sigma^2)`` with ``lambda = |w|^2`` and
``v = w / |w|``. The PQB reference code instead takes ``(lambda, v)`` as the top eigenpair of the
sample covariance and ``sigma^2`` as the clipped diagonal residual
(:func:`fit_eigenpair_heuristic`); that is not the MLE (it attributes all variance along ``v``
to the factor and double-counts the noise there). Both are kept so they can be compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import solve_triangular

LOG_2PI = float(np.log(2 * np.pi))


@dataclass
class LowRankGaussian:
    mean: np.ndarray  # (d,)
    loadings: np.ndarray  # (d, k)
    noise_var: np.ndarray  # (d,)
    # Cholesky factor of the covariance, computed on first use (parameters are not mutated).
    _chol_cache: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def dim(self) -> int:
        return self.mean.shape[0]

    def covariance(self) -> np.ndarray:
        return self.loadings @ self.loadings.T + np.diag(self.noise_var)

    def _chol(self) -> np.ndarray:
        if self._chol_cache is None:
            self._chol_cache = np.linalg.cholesky(self.covariance())
        return self._chol_cache

    def mahalanobis_sq(self, x: np.ndarray) -> np.ndarray:
        """Squared Mahalanobis distance ``(x - mu)^T Sigma^{-1} (x - mu)`` of each row."""
        diff = np.atleast_2d(x) - self.mean
        sol = solve_triangular(self._chol(), diff.T, lower=True)
        return np.einsum("ij,ij->j", sol, sol)

    def log_density(self, x: np.ndarray) -> np.ndarray:
        chol = self._chol()
        diff = np.atleast_2d(x) - self.mean
        sol = solve_triangular(chol, diff.T, lower=True)
        logdet = 2.0 * np.log(np.diag(chol)).sum()
        return -0.5 * (np.einsum("ij,ij->j", sol, sol) + logdet + self.dim * LOG_2PI)

    def rank_one_parts(self) -> tuple[float, np.ndarray]:
        """``(lambda, v)`` of the first factor (``lambda v v^T`` = its part of ``Sigma``)."""
        w = self.loadings[:, 0]
        lam = float(w @ w)
        v = w / np.sqrt(lam) if lam > 0 else np.eye(self.dim)[0]
        return lam, v


def _sample_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"need a 2-D array with at least 2 rows, got shape {x.shape}")
    mean = x.mean(axis=0)
    diff = x - mean
    return mean, diff.T @ diff / x.shape[0]


def gaussian_loglik(mean: np.ndarray, cov: np.ndarray, x: np.ndarray) -> float:
    """Total log-likelihood of the rows of ``x`` under ``N(mean, cov)``."""
    chol = np.linalg.cholesky(cov)
    sol = np.linalg.solve(chol, (np.atleast_2d(x) - mean).T)
    logdet = 2.0 * np.log(np.diag(chol)).sum()
    n, d = np.atleast_2d(x).shape
    return float(-0.5 * (np.einsum("ij,ij->", sol, sol) + n * (logdet + d * LOG_2PI)))


def fit_factor_analysis(
    x: np.ndarray,
    n_factors: int = 1,
    *,
    var_floor: float = 1e-4,
    max_iter: int = 500,
    tol: float = 1e-7,
) -> tuple[LowRankGaussian, dict]:
    """Maximum-likelihood ``N(mu, W W^T + diag(psi))`` by EM; ``psi >= var_floor``.

    EM starts from the eigenpair heuristic (top-``k`` eigenpairs of the sample covariance and
    the clipped diagonal residual) and never decreases the likelihood, so the fit is at least
    as likely as the heuristic's. Stops when the mean log-likelihood per row gains less than
    ``tol``. Returns the model and ``{"n_iter", "loglik", "converged"}`` (``loglik`` summed
    over rows). See :func:`fit_factor_analysis_many` (the same fit for many users at once).
    """
    models, infos = fit_factor_analysis_many(
        [x], n_factors, var_floor=var_floor, max_iter=max_iter, tol=tol
    )
    return models[0], infos[0]


def _batched_avg_loglik(w: np.ndarray, psi: np.ndarray, s: np.ndarray) -> np.ndarray:
    d = s.shape[-1]
    cov = w @ np.swapaxes(w, 1, 2) + psi[:, :, None] * np.eye(d)
    chol = np.linalg.cholesky(cov)
    logdet = 2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(1)
    trace = np.einsum("uij,uji->u", np.linalg.inv(cov), s)
    return -0.5 * (logdet + trace + d * LOG_2PI)


def fit_factor_analysis_many(
    xs: list[np.ndarray],
    n_factors: int = 1,
    *,
    var_floor: float = 1e-4,
    max_iter: int = 500,
    tol: float = 1e-7,
) -> tuple[list[LowRankGaussian], list[dict]]:
    """:func:`fit_factor_analysis` of every array in ``xs``, vectorised over the arrays.

    Each array converges (and is frozen) on its own, so the result for one array does not
    depend on the others.
    """
    if not xs:
        return [], []
    moments = [_sample_moments(x) for x in xs]
    means = np.stack([m for m, _ in moments])
    s = np.stack([c for _, c in moments])
    n_rows = np.array([np.atleast_2d(x).shape[0] for x in xs], dtype=np.float64)
    u, d = means.shape
    k = int(n_factors)
    if not 1 <= k < d:
        raise ValueError(f"n_factors must be in [1, {d - 1}], got {k}")
    evals, evecs = np.linalg.eigh(s)  # ascending
    top_vals = np.maximum(evals[:, ::-1][:, :k], 0.0)
    w = evecs[:, :, ::-1][:, :, :k] * np.sqrt(top_vals)[:, None, :]
    psi = np.maximum(np.diagonal(s, axis1=1, axis2=2) - (w**2).sum(2), var_floor)
    prev = _batched_avg_loglik(w, psi, s)
    active = np.ones(u, dtype=bool)
    n_iter = np.zeros(u, dtype=np.int64)
    eye_k = np.eye(k)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        wa, pa, sa = w[idx], psi[idx], s[idx]
        # E-step: beta = W^T Sigma^{-1} via Woodbury on the diagonal noise.
        psi_inv_w = wa / pa[:, :, None]
        m = eye_k + np.swapaxes(wa, 1, 2) @ psi_inv_w
        beta = np.linalg.solve(m, np.swapaxes(psi_inv_w, 1, 2))  # (u, k, d)
        ezz = eye_k - beta @ wa + beta @ sa @ np.swapaxes(beta, 1, 2)
        # M-step (the floor is the constrained maximiser of the unimodal per-dimension term).
        new_w = sa @ np.swapaxes(beta, 1, 2) @ np.linalg.inv(ezz)
        new_psi = np.maximum(np.diagonal(sa - new_w @ beta @ sa, axis1=1, axis2=2), var_floor)
        cur = _batched_avg_loglik(new_w, new_psi, sa)
        n_iter[idx] += 1
        improved = cur >= prev[idx]  # only rounding can make EM go down; then keep the old
        upd = idx[improved]
        w[upd], psi[upd] = new_w[improved], new_psi[improved]
        gain = np.where(improved, cur - prev[idx], 0.0)
        prev[upd] = cur[improved]
        active[idx[~improved | (gain < tol)]] = False
    models, infos = [], []
    for i in range(u):
        wi = w[i].copy()
        # Deterministic sign: the largest-magnitude loading of each factor is positive.
        for j in range(k):
            if wi[np.argmax(np.abs(wi[:, j])), j] < 0:
                wi[:, j] = -wi[:, j]
        models.append(LowRankGaussian(means[i], wi, psi[i].copy()))
        infos.append(
            {
                "n_iter": int(n_iter[i]),
                "loglik": float(prev[i] * n_rows[i]),
                "converged": bool(not active[i]),
            }
        )
    return models, infos


def fit_eigenpair_heuristic(x: np.ndarray, *, var_floor: float = 1e-4) -> LowRankGaussian:
    """The PQB reference fit: top eigenpair ``(lambda, v)`` of the sample covariance and
    ``sigma^2 = diag(S - lambda v v^T)`` clipped at ``var_floor``."""
    mean, s = _sample_moments(x)
    evals, evecs = np.linalg.eigh(s)
    lam = max(float(evals[-1]), 0.0)
    v = evecs[:, -1]
    if v[np.argmax(np.abs(v))] < 0:
        v = -v
    noise = np.maximum(np.diag(s) - lam * v**2, var_floor)
    return LowRankGaussian(mean, (np.sqrt(lam) * v)[:, None], noise)


def reference_distance_sq(model: LowRankGaussian, x: np.ndarray) -> np.ndarray:
    """The reference code's distance ``(v.d)^2 / lambda + sum_d r_d^2 / sigma_d^2`` with
    ``r = d - (v.d) v``: the factor and the residual scored as if independent. It is not the
    Mahalanobis distance of the model's ``lambda v v^T + diag(sigma^2)`` (along ``v`` it
    ignores the noise); with isotropic ``sigma^2`` it is that of
    ``lambda v v^T + sigma^2 (I - v v^T)``."""
    lam, v = model.rank_one_parts()
    diff = np.atleast_2d(x) - model.mean
    proj = diff @ v
    resid = diff - np.outer(proj, v)
    return proj**2 / max(lam, 1e-12) + (resid**2 / model.noise_var).sum(axis=1)


def acceptance_threshold(distances_sq: np.ndarray, quantile: float) -> float:
    """The acceptance region ``D^2 <= t`` with ``t`` the held-out ``quantile`` of ``D^2``
    (linear interpolation between order statistics, numpy's default)."""
    distances_sq = np.asarray(distances_sq, dtype=np.float64)
    if distances_sq.size == 0:
        raise ValueError("no held-out distances to set a threshold from")
    return float(np.quantile(distances_sq, quantile))
