"""User profile models for attribution: one small class each, registered by name.

Every model fits one profile per user from that user's ``train`` embeddings and scores a
sentence embedding under a given user's profile (higher = more like that user). Gaussian
models score by log-density, so profiles of different spread compare fairly; the cosine and
k-NN models by similarity. Scores of different users' profiles are compared directly by the
balanced and full-profile protocols, and within one user's profile by the AUROC protocol.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from scipy.special import ive

from personalir.common.registry import Registry
from personalir.syntax.gaussian import (
    LOG_2PI,
    LowRankGaussian,
    fit_eigenpair_heuristic,
    fit_factor_analysis_many,
)

PROFILE_MODELS: Registry[type[ProfileModel]] = Registry(
    "profile model",
    required=("label", "config_keys"),
    package="personalir.syntax",
    symbol="PROFILE_MODELS",
)


def rows_by_label(labels: np.ndarray, n: int) -> list[np.ndarray]:
    """The row indices of each label ``0..n-1``, ascending within a label: ``x[result[u]]``
    equals ``x[labels == u]``, found by one stable sort instead of a scan of every row per
    label (that scan made fitting quadratic in users)."""
    labels = np.asarray(labels, dtype=np.int64)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(n + 1))
    return [order[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


class ProfileModel(ABC):
    """Interface: ``fit(x, user)`` on train embeddings (``user``: int labels 0..U-1), then
    ``score(x, user)`` per row or ``score_profile(u, x)`` for many rows under one profile."""

    #: row label of the attribution table (rows follow ``syntax.attribution.models``)
    label: str = ""
    #: keys of ``syntax.attribution`` the model reads (through ``syntax.stage.model_params``)
    config_keys: tuple[str, ...] = ()

    def __init__(self, **params):
        self.params = params
        self.n_users = 0

    def fit(self, x: np.ndarray, user: np.ndarray) -> ProfileModel:
        x = np.asarray(x, dtype=np.float64)
        user = np.asarray(user, dtype=np.int64)
        self.n_users = int(user.max()) + 1 if user.size else 0
        self._fit([x[rows] for rows in rows_by_label(user, self.n_users)], x)
        return self

    def score_profile(self, u: int, x: np.ndarray) -> np.ndarray:
        """Scores of every row of ``x`` under the profile of user ``u``."""
        if not 0 <= u < self.n_users:
            raise IndexError(f"user label {u} outside 0..{self.n_users - 1}")
        return self._score_user(int(u), np.atleast_2d(np.asarray(x, dtype=np.float64)))

    def score(self, x: np.ndarray, user: np.ndarray) -> np.ndarray:
        """Score of row ``i`` of ``x`` under the profile of ``user[i]``."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        user = np.asarray(user, dtype=np.int64)
        out = np.empty(len(user), dtype=np.float64)
        n = int(user.max()) + 1 if user.size else 0
        for u, rows in enumerate(rows_by_label(user, n)):
            if rows.size:
                out[rows] = self._score_user(u, x[rows])
        return out

    @abstractmethod
    def _fit(self, per_user: list[np.ndarray], x_all: np.ndarray) -> None: ...

    @abstractmethod
    def _score_user(self, u: int, x: np.ndarray) -> np.ndarray: ...


def _unit(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(norm > 0, norm, 1.0)


@PROFILE_MODELS.register("single_embedding_cosine")
class SingleEmbeddingCosine(ProfileModel):
    label = "Single embedding + cosine"

    def _fit(self, per_user, x_all):
        self.centroids = np.stack([_unit(xs.mean(0)) for xs in per_user])

    def _score_user(self, u, x):
        return _unit(x) @ self.centroids[u]


@PROFILE_MODELS.register("shared_isotropic_gaussian")
class SharedIsotropicGaussian(ProfileModel):
    """Per-user mean, one variance shared by all dimensions and users (pooled within-user)."""

    label = "Shared isotropic Gaussian"
    config_keys = ("var_floor",)

    def _fit(self, per_user, x_all):
        self.means = np.stack([xs.mean(0) for xs in per_user])
        resid = np.concatenate([xs - xs.mean(0) for xs in per_user])
        self.var = max(float((resid**2).mean()), self.params.get("var_floor", 1e-4))
        self.dim = x_all.shape[1]

    def _score_user(self, u, x):
        sq = ((x - self.means[u]) ** 2).sum(1)
        return -0.5 * (sq / self.var + self.dim * (np.log(self.var) + LOG_2PI))


@PROFILE_MODELS.register("user_diagonal_gaussian")
class UserDiagonalGaussian(ProfileModel):
    label = "User diagonal Gaussian"
    config_keys = ("var_floor",)

    def _fit(self, per_user, x_all):
        floor = self.params.get("var_floor", 1e-4)
        self.means = np.stack([xs.mean(0) for xs in per_user])
        self.vars = np.stack([np.maximum(xs.var(0), floor) for xs in per_user])

    def _score_user(self, u, x):
        var = self.vars[u]
        return -0.5 * (
            ((x - self.means[u]) ** 2 / var).sum(1) + np.log(var).sum() + x.shape[1] * LOG_2PI
        )


def vmf_log_normaliser(kappa: float, dim: int) -> float:
    """``log C_d(kappa)`` of the von Mises-Fisher density on the unit sphere in ``R^d``."""
    nu = dim / 2.0 - 1.0
    if kappa < 1e-8:  # uniform density on the sphere
        from scipy.special import gammaln

        return float(gammaln(dim / 2.0) - np.log(2.0) - (dim / 2.0) * np.log(np.pi))
    log_bessel = np.log(ive(nu, kappa)) + kappa
    return float(nu * np.log(kappa) - (dim / 2.0) * LOG_2PI - log_bessel)


@PROFILE_MODELS.register("von_mises_fisher")
class VonMisesFisher(ProfileModel):
    """Mean direction and concentration (Banerjee et al. 2005 approximation of the MLE)."""

    label = "von Mises-Fisher"

    def _fit(self, per_user, x_all):
        d = x_all.shape[1]
        max_kappa = self.params.get("max_kappa", 1e4)
        self.mu, self.kappa, self.log_c = [], [], []
        for xs in per_user:
            m = _unit(xs).mean(0)
            r = float(np.clip(np.linalg.norm(m), 1e-9, 1 - 1e-9))
            kappa = min(r * (d - r**2) / (1 - r**2), max_kappa)
            self.mu.append(m / r)
            self.kappa.append(kappa)
            self.log_c.append(vmf_log_normaliser(kappa, d))
        self.mu = np.stack(self.mu)

    def _score_user(self, u, x):
        return self.log_c[u] + self.kappa[u] * (_unit(x) @ self.mu[u])


class _LowRankGaussianModel(ProfileModel):
    def _fit_all(self, per_user: list[np.ndarray]) -> list[LowRankGaussian]:
        raise NotImplementedError

    def _fit(self, per_user, x_all):
        self.gaussians = self._fit_all(per_user)

    def _score_user(self, u, x):
        return self.gaussians[u].log_density(x)


@PROFILE_MODELS.register("rank_one_diagonal_gaussian")
class RankOneDiagonalGaussian(_LowRankGaussianModel):
    """The paper's profile, fitted by maximum likelihood (one-factor factor analysis)."""

    label = "Rank-one + diagonal Gaussian"
    config_keys = ("var_floor", "em_max_iter", "em_tol")
    n_factors = 1

    def _fit_all(self, per_user):
        models, _ = fit_factor_analysis_many(
            per_user,
            self.n_factors,
            var_floor=self.params.get("var_floor", 1e-4),
            max_iter=self.params.get("em_max_iter", 500),
            tol=self.params.get("em_tol", 1e-7),
        )
        return models


@PROFILE_MODELS.register("rank_two_diagonal_gaussian")
class RankTwoDiagonalGaussian(RankOneDiagonalGaussian):
    label = "Rank-two + diagonal Gaussian"
    n_factors = 2


@PROFILE_MODELS.register("rank_one_diagonal_gaussian_eigenpair")
class RankOneDiagonalEigenpair(_LowRankGaussianModel):
    """The same model with the PQB reference code's eigenpair heuristic fit (not the MLE)."""

    label = "Rank-one + diagonal (eigenpair heuristic)"
    config_keys = ("var_floor",)

    def _fit_all(self, per_user):
        floor = self.params.get("var_floor", 1e-4)
        return [fit_eigenpair_heuristic(xs, var_floor=floor) for xs in per_user]


@PROFILE_MODELS.register("knn")
class KNearestNeighbours(ProfileModel):
    """Mean cosine similarity to the ``k`` most similar train sentences of the user."""

    label = "k-nearest neighbour"
    config_keys = ("knn_k",)

    def _fit(self, per_user, x_all):
        self.k = int(self.params.get("k", 5))
        self.banks = [_unit(xs) for xs in per_user]

    def _score_user(self, u, x):
        sims = _unit(x) @ self.banks[u].T
        k = min(self.k, sims.shape[1])
        top = -np.partition(-sims, k - 1, axis=1)[:, :k]
        return top.mean(1)


def build_model(name: str, params: dict) -> ProfileModel:
    return PROFILE_MODELS.get(name)(**params)
