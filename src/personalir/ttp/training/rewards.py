"""The TTP RL reward and the dynamic choice of the contrastive positive (paper section 3.4).

For a rollout ``y`` (the model's output after the prompt: ``<think>rewrite</think><embed>``)::

    R = w_fmt * R_format + w_len * R_length + w_ret * R_retrieval      (0.5, 0.5, 2.0)

* ``R_format``: 0 when ``y`` is exactly ``<think>`` + a non-blank rewrite (no special token
  inside) + ``</think>``, optional white space, the embedding token, else -1
  (:func:`format_reward`);
* ``R_length = -max(0, |y| - L)`` with ``|y|`` in tokens (:func:`length_reward`);
* ``R_retrieval = clip(alpha * dS_pos + beta * dS_margin, -c, c)`` (:func:`retrieval_rewards`):
  ``S_pos`` is the inner product of the query embedding with the purchased item's, ``S_margin``
  is ``S_pos`` minus the best in-batch negative's score (a row whose batch holds no other
  product has no margin: its margin gain is 0, counted); ``d`` is the rollout's value minus the
  original query's (the query embedded as ``<think>query</think><embed>``), both scored by the
  scorer model (the frozen SFT model, or the policy itself in the "unfrozen" ablation).
  Scores are cosines divided by ``score_temperature`` (0.02, the InfoNCE temperature, as the
  reference code scores them), so a gain of 0.02 in cosine is a gain of 1 before clipping.

:func:`select_positives` is the dynamic positive selection: per prompt group the
highest-reward rollout, or the original query when that reward is negative; the ablation
picks a seeded random rollout instead. Everything here is plain arithmetic on arrays, so the
unit tests can check golden values without a model.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from personalir.ttp.model.prompts import THINK_CLOSE, THINK_OPEN, embedding_token

ORIGINAL = -1  # select_positives: "the original query" instead of a rollout index


@dataclass(frozen=True)
class RewardSettings:
    format_weight: float = 0.5
    length_weight: float = 0.5
    retrieval_weight: float = 2.0
    length_limit: int = 64
    alpha: float = 2.0
    beta: float = 1.0
    clip: float = 1.0
    score_temperature: float = 0.02

    @classmethod
    def from_config(cls, section: dict) -> RewardSettings:
        return cls(**{k: section[k] for k in cls.__dataclass_fields__ if k in section})

    @property
    def weights(self) -> tuple[float, float, float]:
        """(format, length, retrieval): the order of the reward functions given to TRL."""
        return (self.format_weight, self.length_weight, self.retrieval_weight)

    def total(self, fmt, length, retrieval):
        return (
            self.format_weight * np.asarray(fmt, float)
            + self.length_weight * np.asarray(length, float)
            + self.retrieval_weight * np.asarray(retrieval, float)
        )


@functools.cache
def format_pattern(
    think_open: str = THINK_OPEN, think_close: str = THINK_CLOSE, emb: str = "<embed>"
) -> re.Pattern:
    specials = "|".join(re.escape(t) for t in (think_open, think_close, emb))
    body = rf"(?:(?!{specials})[\s\S])*"
    return re.compile(
        rf"{re.escape(think_open)}(?P<rewrite>{body}){re.escape(think_close)}\s*{re.escape(emb)}"
    )


def format_reward(output: str, pattern: re.Pattern | None = None) -> float:
    """0 when ``output`` is ``<think>rewrite</think><embed>`` (rewrite non-blank; the
    process's embedding token), else -1."""
    pattern = pattern or format_pattern(THINK_OPEN, THINK_CLOSE, embedding_token())
    m = pattern.fullmatch(output)
    return 0.0 if m is not None and m.group("rewrite").strip() else -1.0


def length_reward(n_tokens: int, limit: int) -> float:
    """``-max(0, n_tokens - limit)``."""
    return -float(max(0, int(n_tokens) - int(limit)))


def _scores(
    queries: np.ndarray,
    items: np.ndarray,
    positives: Sequence[int],
    same: np.ndarray,
    temperature: float = 1.0,
):
    """S_pos and S_margin per query row: positives[i] indexes ``items``; ``same[i, j]`` marks
    items that are not negatives of row i (its own positive, or the same product)."""
    sims = np.asarray(queries, np.float64) @ np.asarray(items, np.float64).T / temperature
    rows = np.arange(sims.shape[0])
    pos = sims[rows, np.asarray(positives)]
    neg = np.where(same, -np.inf, sims)
    best_neg = neg.max(axis=1) if neg.shape[1] else np.full(len(rows), -np.inf)
    # No negative (every item of the batch is this row's product): no margin (NaN).
    return pos, np.where(np.isfinite(best_neg), pos - best_neg, np.nan)


def retrieval_rewards(
    rollout_emb: np.ndarray,
    original_emb: np.ndarray,
    item_emb: np.ndarray,
    positives: Sequence[int],
    same: np.ndarray,
    settings: RewardSettings,
) -> dict[str, np.ndarray]:
    """R_retrieval per rollout and its parts. Row ``i`` of ``rollout_emb`` and of
    ``original_emb`` (the original query of the same prompt) share ``positives[i]`` and
    ``same[i]``. Embeddings are L2-normalised: scores are cosines / ``score_temperature``."""
    t = settings.score_temperature
    s_pos, s_margin = _scores(rollout_emb, item_emb, positives, same, t)
    o_pos, o_margin = _scores(original_emb, item_emb, positives, same, t)
    d_pos, d_margin = s_pos - o_pos, s_margin - o_margin
    no_negative = np.isnan(d_margin)
    d_margin = np.where(no_negative, 0.0, d_margin)
    raw = settings.alpha * d_pos + settings.beta * d_margin
    return {
        "reward": np.clip(raw, -settings.clip, settings.clip),
        "raw": raw,
        "d_pos": d_pos,
        "d_margin": d_margin,
        "no_negative": no_negative,
    }


def select_positives(
    totals: Sequence[float], group_size: int, mode: str = "dynamic", rng=None
) -> list[int]:
    """One choice per consecutive group of ``group_size`` rollouts: the index (within the
    group) of the positive, or :data:`ORIGINAL`. ``dynamic``: the best total reward (first
    on ties), the original query when that reward is negative; ``random``: a rollout drawn
    uniformly by ``rng`` (a numpy Generator)."""
    totals = np.asarray(totals, dtype=float)
    if totals.size % group_size:
        raise ValueError(f"{totals.size} rewards are not groups of {group_size}")
    groups = totals.reshape(-1, group_size)
    if mode == "dynamic":
        best = np.argmax(np.nan_to_num(groups, nan=-np.inf), axis=1)
        return [ORIGINAL if not groups[g, b] >= 0 else int(b) for g, b in enumerate(best.tolist())]
    if mode == "random":
        if rng is None:
            raise ValueError("random selection needs a seeded rng")
        return [int(i) for i in rng.integers(0, group_size, size=groups.shape[0])]
    raise ValueError(f"unknown positive selection {mode!r} (dynamic or random)")
