"""The sample world's users: planted style mixture, error habits and brand/colour/style tastes.

Each user gets a sparse Dirichlet mixture over the syntactic constructions, an error profile
(rate, mechanism mixture, POS preferences, long-word factor) and preferred brands, colours and
styles, all drawn from the ``users`` stream; the planted truth records them.
"""

from __future__ import annotations

import math

import numpy as np

from personalir.data.sample_world.constructions import CONSTRUCTION_IDS, POS_CLASSES
from personalir.data.sample_world.domains import DomainSpec
from personalir.data.sample_world.mechanisms import MECHANISM_NAMES
from personalir.data.sample_world.model import (
    ALNUM,
    Draw,
    ErrorProfile,
    GeneratorParams,
    User,
    cumulative,
)


def _user_code(draw: Draw, taken: set[str]) -> str:
    """28 characters like the real ids: "A" + mostly letters with a few digits."""
    letters = ALNUM[:26]
    while True:
        chars = ["A"] + [
            draw.pick(ALNUM[26:]) if draw.u() < 0.12 else draw.pick(letters) for _ in range(27)
        ]
        code = "".join(chars)
        if code not in taken:
            taken.add(code)
            return code


def build_users(
    spec: DomainSpec,
    n: int,
    min_sentences: int,
    draw: Draw,
    rng: np.random.Generator,
    brand_weight: dict[str, float],
    params: GeneratorParams,
) -> list[User]:
    taken: set[str] = set()
    users = []
    k = len(CONSTRUCTION_IDS)
    for _ in range(n):
        style = np.round(rng.dirichlet(np.full(k, params.style_alpha)), 6)
        style_weights = dict(zip(CONSTRUCTION_IDS, (float(w) for w in style), strict=True))
        if draw.u() < params.error_free_share:
            rate = 0.0
        else:
            lo, hi = math.log(params.min_error_rate), math.log(params.max_error_rate)
            rate = round(math.exp(draw.uniform(lo, hi)), 4)
        mech = np.round(rng.dirichlet(np.full(len(MECHANISM_NAMES), params.mechanism_alpha)), 4)
        ctx = np.round(
            len(POS_CLASSES) * rng.dirichlet(np.full(len(POS_CLASSES), params.context_alpha)), 3
        )
        profile = ErrorProfile(
            rate=rate,
            mechanism_probs=dict(zip(MECHANISM_NAMES, map(float, mech), strict=True)),
            pos_weights=dict(zip(POS_CLASSES, map(float, ctx), strict=True)),
            long_word_factor=(
                params.long_word_factor if draw.u() < params.long_word_user_share else 1.0
            ),
        )
        brands = list(brand_weight)
        weights = [brand_weight[b] for b in brands]
        pref_brands = []
        for _ in range(2 + (draw.u() < 0.4)):
            i = draw.weighted(cumulative(weights))
            pref_brands.append(brands.pop(i))
            weights.pop(i)
        colors = draw.shuffle(spec.colors)[:2]
        styles = draw.shuffle(spec.styles)[: 1 + (draw.u() < 0.5)]
        extra = int(-math.log(1.0 - draw.u()) * params.extra_sentences_mean)
        users.append(
            User(
                user_id=_user_code(draw, taken),
                style_weights=style_weights,
                error_profile=profile,
                preferred_brands=pref_brands,
                preferred_colors=colors,
                preferred_styles=styles,
                recipient=draw.pick(spec.recipients),
                mean_sentences_per_review=round(draw.uniform(1.6, 4.6), 3),
                rating_bias=round(float(rng.normal(0.0, 0.5)), 3),
                target_sentences=min_sentences + extra,
            )
        )
    return users
