"""Low-rank-plus-diagonal Gaussians: the per-user profile of the paper.

The covariance ``Sigma = W W^T + diag(psi)`` with ``W`` of rank ``k`` is the factor-analysis
model; its maximum-likelihood fit is :func:`fit_factor_analysis` (EM, Rubin and Thayer 1982).
For ``k = 1`` this is the paper's ``lambda v v^T + diag(sigma^2)`` with ``lambda = |w|^2`` and
``v = w / |w|``. The PQB reference code instead takes ``(lambda, v)`` as the top eigenpair of the
sample covariance and ``sigma^2`` as the clipped diagonal residual
(:func:`fit_eigenpair_heuristic`); that is not the MLE (it attributes all variance along ``v``
to the factor and double-counts the noise there). Both are kept so they can be compared.

Rule step syntax_profiles (:func:`run_profiles`): fit both profiles of every user on its
``train`` embeddings and set each acceptance threshold from its ``calib`` sentences.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy.linalg import solve_triangular

from personalir.common.artifacts import read_embeddings
from personalir.common.io import write_json, write_parquet
from personalir.syntax.features import SPLITS

log = logging.getLogger("personalir.syntax")

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


def fit_profiles(meta: pd.DataFrame, z: np.ndarray, params: dict) -> tuple[pa.Table, dict]:
    """Rank-one + diagonal profile of every user, by MLE and by the eigenpair heuristic,
    with acceptance thresholds from the ``calib`` quantile of the squared distance."""
    q = params["threshold_quantile"]
    floor = params["var_floor"]
    rows: dict[str, list] = defaultdict(list)
    summary: dict[str, list] = defaultdict(list)
    not_converged = 0
    split = meta["split"].to_numpy()
    groups = meta.groupby("user_id", sort=True).indices
    parts = {user: tuple(idx[split[idx] == s] for s in SPLITS) for user, idx in groups.items()}
    mles, infos = fit_factor_analysis_many(
        [z[p[0]] for p in parts.values()],
        1,
        var_floor=floor,
        max_iter=params["em_max_iter"],
        tol=params["em_tol"],
    )
    for (user, (tr, ca, te)), mle, info in zip(parts.items(), mles, infos, strict=True):
        not_converged += not info["converged"]
        heur = fit_eigenpair_heuristic(z[tr], var_floor=floor)
        rows["user_id"].append(user)
        rows["n_train"].append(len(tr))
        rows["n_calib"].append(len(ca))
        rows["mean"].append(mle.mean.astype(np.float32))
        for tag, model, dist in (
            ("mle", mle, mle.mahalanobis_sq),
            ("eigenpair", heur, lambda x, m=heur: reference_distance_sq(m, x)),
        ):
            lam, v = model.rank_one_parts()
            thr = acceptance_threshold(dist(z[ca]), q)
            rows[f"{tag}_lambda"].append(lam)
            rows[f"{tag}_direction"].append(v.astype(np.float32))
            rows[f"{tag}_noise_var"].append(model.noise_var.astype(np.float32))
            rows[f"{tag}_threshold"].append(thr)
            n_tr = len(tr)
            summary[f"{tag}_train_loglik"].append(
                gaussian_loglik(model.mean, model.covariance(), z[tr]) / n_tr
            )
            summary[f"{tag}_test_loglik"].append(
                gaussian_loglik(model.mean, model.covariance(), z[te]) / len(te)
            )
            summary[f"{tag}_test_accept"].append(float((dist(z[te]) <= thr).mean()))
        rows["em_iterations"].append(info["n_iter"])
    dim = z.shape[1]

    def vec(name):
        return pa.FixedSizeListArray.from_arrays(
            pa.array(np.concatenate(rows[name]) if rows[name] else [], pa.float32()), dim
        )

    table = pa.table(
        {
            "user_id": pa.array(rows["user_id"], pa.string()),
            "n_train": pa.array(rows["n_train"], pa.int32()),
            "n_calib": pa.array(rows["n_calib"], pa.int32()),
            "mean": vec("mean"),
            **{
                f"{t}_{c}": (
                    vec(f"{t}_{c}")
                    if c in ("direction", "noise_var")
                    else pa.array(rows[f"{t}_{c}"], pa.float64())
                )
                for t in ("mle", "eigenpair")
                for c in ("lambda", "direction", "noise_var", "threshold")
            },
            "em_iterations": pa.array(rows["em_iterations"], pa.int32()),
        }
    )
    report = {
        "users": len(rows["user_id"]),
        "threshold_quantile": q,
        "em_not_converged": int(not_converged),
        "distance": {
            "mle": "Mahalanobis of lambda v v^T + diag(sigma^2)",
            "eigenpair": "reference code: (v.d)^2/lambda + sum r^2/sigma^2",
        },
        **{f"mean_{k}": float(np.mean(v)) for k, v in sorted(summary.items())},
        "users_mle_train_loglik_ge_eigenpair": int(
            np.sum(
                np.asarray(summary["mle_train_loglik"])
                >= np.asarray(summary["eigenpair_train_loglik"]) - 1e-9
            )
        ),
    }
    return table, report


def run_profiles(embeddings_path, out: dict, params: dict) -> dict:
    meta, z = read_embeddings(embeddings_path)
    table, report = fit_profiles(meta, z, params)
    write_parquet(out["profiles"], table)
    write_json(out["report"], report)
    log.info("profiles: %s", report)
    return report
