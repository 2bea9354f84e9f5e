"""User matching: candidates in the syntactic style space, scored against users' Gaussians.

Built on the syntax stage's public pieces (:mod:`personalir.syntax`): the same spaCy pipeline
and rule extraction as the user sentences, the trained encoder's vocabulary and weights, and the
per-user rank-one + diagonal Gaussians with their acceptance thresholds.

A candidate ``q`` is *accepted* by user ``u`` when ``D_u^2(q) <= t_u`` (the user's acceptance
region). ``t_u`` is the profile's held-out quantile threshold (``gate: profile``, the syntax
stage's ``threshold_quantile``) or the chi-square quantile of the style-space dimension
(``gate: chi2``, the reference code's gate, exact for a Gaussian). A candidate *belongs to*
``u`` against a competitor ``v`` when ``u`` accepts it and ``v`` does not. The *normalised*
distance ``D_u^2 / t_u`` (1 on the region's border) makes the margin between two users
comparable: ``margin_{u,v}(q) = D_v^2/t_v - D_u^2/t_u``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from personalir.common.io import read_parquet_table
from personalir.common.registry import Registry
from personalir.syntax.features import vectorize
from personalir.syntax.gaussian import LowRankGaussian, reference_distance_sq
from personalir.syntax.rules import ParseSettings, load_pipeline, parse_texts

GAUSSIAN_DISTANCES: Registry = Registry("Gaussian distance")


@dataclass
class UserProfile:
    user_id: str
    gaussian: LowRankGaussian
    threshold: float
    fit: str  # "mle" or "eigenpair"

    def distance_sq(self, z: np.ndarray) -> np.ndarray:
        if self.fit == "eigenpair":
            return reference_distance_sq(self.gaussian, z)
        return self.gaussian.mahalanobis_sq(z)

    def log_density(self, z: np.ndarray) -> np.ndarray:
        return self.gaussian.log_density(z)


def load_user_profiles(
    path, *, fit: str = "mle", gate: str = "profile", chi2_quantile: float = 0.95
) -> dict[str, UserProfile]:
    """Profiles of ``results/syntax/<Domain>/profiles.parquet`` (one row per modelled user)."""
    from scipy.stats import chi2

    if fit not in ("mle", "eigenpair"):
        raise ValueError(f"fit must be 'mle' or 'eigenpair', got {fit!r}")
    table = read_parquet_table(path).to_pydict()
    out = {}
    for i, user in enumerate(table["user_id"]):
        mean = np.asarray(table["mean"][i], dtype=np.float64)
        lam = float(table[f"{fit}_lambda"][i])
        v = np.asarray(table[f"{fit}_direction"][i], dtype=np.float64)
        noise = np.asarray(table[f"{fit}_noise_var"][i], dtype=np.float64)
        g = LowRankGaussian(mean, (np.sqrt(max(lam, 0.0)) * v)[:, None], noise)
        if gate == "profile":
            t = float(table[f"{fit}_threshold"][i])
        elif gate == "chi2":
            t = float(chi2.ppf(chi2_quantile, df=mean.shape[0]))
        else:
            raise ValueError(f"gate must be 'profile' or 'chi2', got {gate!r}")
        out[str(user)] = UserProfile(str(user), g, t, fit)
    return out


class StyleEncoder:
    """Texts -> rules (spaCy) -> sparse rule vectors -> the trained encoder's style space."""

    def __init__(self, weights_path, meta_path, parse_section: dict):
        from personalir.syntax.encoder import load_encoder

        self.encoder, self.vocabulary = load_encoder(weights_path, meta_path)
        self.settings = ParseSettings.from_config(parse_section)
        self.nlp = load_pipeline(self.settings)

    def rules(self, texts: Sequence[str]) -> list[list[str]]:

        results = parse_texts(list(texts), self.settings, nlp=self.nlp)
        return [r.rules if r.status == "ok" else [] for r in results]

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(embeddings, has_rules)``: a text none of whose rules is in the vocabulary gets a
        zero row and ``has_rules = False`` (it cannot be matched and is reported as such)."""

        rules = self.rules(texts)
        x = vectorize(rules, self.vocabulary)
        has = np.diff(x.indptr) > 0
        z = np.zeros((len(texts), self.encoder.settings.dim), dtype=np.float64)
        if has.any():
            z[has] = self.encoder.encode(x[np.flatnonzero(has)]).astype(np.float64)
        return z, has


# ---------------------------------------------------------------------------- distances
def _full(p: UserProfile) -> tuple[np.ndarray, np.ndarray]:
    return p.gaussian.mean, p.gaussian.covariance()


@GAUSSIAN_DISTANCES.register("jeffreys")
def jeffreys_divergence(a: UserProfile, b: UserProfile) -> float:
    """Symmetrised KL, ``KL(a||b) + KL(b||a)``, of the two users' Gaussians."""
    ma, sa = _full(a)
    mb, sb = _full(b)
    ia, ib = np.linalg.inv(sa), np.linalg.inv(sb)
    d = ma - mb
    k = ma.shape[0]
    return float(0.5 * (np.trace(ib @ sa) + np.trace(ia @ sb) + d @ (ia + ib) @ d - 2 * k))


@GAUSSIAN_DISTANCES.register("bhattacharyya")
def bhattacharyya_distance(a: UserProfile, b: UserProfile) -> float:
    ma, sa = _full(a)
    mb, sb = _full(b)
    s = 0.5 * (sa + sb)
    d = ma - mb
    _, ld = np.linalg.slogdet(s)
    _, la = np.linalg.slogdet(sa)
    _, lb = np.linalg.slogdet(sb)
    return float(d @ np.linalg.solve(s, d) / 8 + 0.5 * (ld - 0.5 * (la + lb)))
