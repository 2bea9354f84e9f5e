"""Error-sampling evaluation: are generated errors attributable to the user they were made for?

Five samplers, each a registered class that turns (user, profiles) into an injection policy:
``global`` (the domain's profile), ``uniform`` (uniform word, uniform applicable mechanism),
``character_random`` (uniform word, a uniformly random valid one-letter change),
``wrong_user`` (another user's profile, a seeded derangement) and ``personalised`` (the user's
own profile). All go through the same constrained injector, on the same clean texts.

Protocol (docs/errors.md has the full version)
1. Split each user's sentences by position: the first half (``position < n_u // 2``) builds
   the *generation* profiles, the second half the *attribution* profiles (with
   ``attribution: held_out``; ``same`` uses all sentences for both, which only tests the
   sampler's consistency with its own profile).
2. Clean texts: ``texts_per_user`` texts per user drawn (seeded, without replacement) from a
   shared pool, identical for all samplers: eligible product titles with their core terms, or
   (``text_source: corrected_sentences``) sentences of 5-25 words that the correction left
   unchanged. Each text gets ``n_edits`` edits.
3. Candidates per user: the user and ``n_candidates - 1`` other users drawn (seeded) from the
   domain (all users when ``n_candidates`` is null); the same for all samplers.
4. Score: the log-likelihood of each generated edit under each candidate's attribution
   profile is the probability that the personalised injector with that profile makes exactly
   this edit on this text (word choice x mechanism-or-own-form x uniform variant choice, see
   :func:`edit_log_likelihoods`). A user's evidence is the sum over their texts.
5. Metrics, averaged over users: Top-1 (true user ranked first on all their texts' evidence),
   MRR, and single-query Top-1 (each text on its own, averaged over texts). Ties are broken
   uniformly at random in expectation: with ``g`` candidates scoring higher and ``e`` others
   scoring equal, Top-1 = 1/(e+1) if g = 0, and RR = mean over k = 0..e of 1/(g+1+k).
   Texts on which no edit could be made are counted (``texts_without_edit``) and left out.
   Each user's own outcomes are returned as well (``user_outcomes``), so the tables can
   resample users for confidence intervals.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from personalir.common.bootstrap import bootstrap_summary
from personalir.common.registry import Registry
from personalir.common.seeding import derive_seed, rng
from personalir.errors.inject import (
    CharacterRandomPolicy,
    InjectionResult,
    Injector,
    Policy,
    ProfilePolicy,
    UniformPolicy,
)
from personalir.errors.mechanisms import classify
from personalir.errors.profiles import ProfileParams, ProfileSet, build_profiles

SAMPLERS: Registry[type[Sampler]] = Registry(
    "error sampler",
    required=("label", "order"),
    package="personalir.errors",
    symbol="SAMPLERS",
)


@dataclass
class SamplingContext:
    profiles: ProfileSet
    partner: dict[str, str]


class Sampler(ABC):
    """A policy per user. Subclasses set ``name`` (the registered name), ``label`` (its row
    in the tables) and ``order`` (rows sorted by it: baselines first, then personalised)."""

    name: ClassVar[str]
    label: ClassVar[str]
    order: ClassVar[int]
    #: Keys of ``errors.sampling`` the sampler reads itself (the evaluation reads the rest).
    config_keys: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def policy(self, user_id: str, ctx: SamplingContext) -> Policy: ...


@SAMPLERS.register("global")
class GlobalSampler(Sampler):
    name, label, order = "global", "Global", 10

    def policy(self, user_id, ctx):
        return ProfilePolicy(ctx.profiles.global_profile, "global")


@SAMPLERS.register("uniform")
class UniformSampler(Sampler):
    name, label, order = "uniform", "Uniform", 20

    def policy(self, user_id, ctx):
        return UniformPolicy()


@SAMPLERS.register("character_random")
class CharacterRandomSampler(Sampler):
    name, label, order = "character_random", "Character-random", 30

    def policy(self, user_id, ctx):
        return CharacterRandomPolicy()


@SAMPLERS.register("wrong_user")
class WrongUserSampler(Sampler):
    name, label, order = "wrong_user", "Wrong user", 40

    def policy(self, user_id, ctx):
        return ProfilePolicy(ctx.profiles[ctx.partner[user_id]], "wrong_user")


@SAMPLERS.register("personalised")
class PersonalisedSampler(Sampler):
    name, label, order = "personalised", "Personalised", 50

    def policy(self, user_id, ctx):
        return ProfilePolicy(ctx.profiles[user_id], "personalised")


#: Per user and sampler (users with at least one scored text): Top-1 and reciprocal rank of
#: the true user on all their texts' evidence, and the sum of the single-query Top-1 over
#: their scored texts. Averaged over users (Top-1, MRR) or summed over texts and divided by
#: the texts scored (single-query Top-1) they give the sampler's row of the table.
USER_OUTCOME_COLUMNS = [
    "domain",
    "sampler",
    "user_id",
    "top1",
    "rr",
    "single_query_top1_sum",
    "texts_scored",
]


#: Table metric -> (numerator, denominator) columns of the user outcomes; no denominator: a
#: mean over users.
USER_METRICS = {
    "top1": ("top1", None),
    "mrr": ("rr", None),
    "single_query_top1": ("single_query_top1_sum", "texts_scored"),
}


def user_intervals(
    outcomes: pd.DataFrame,
    domains: Sequence[str],
    *,
    samples: int,
    confidence: float,
    seed: int,
    average_label: str = "Average",
) -> pd.DataFrame:
    """Percentile-bootstrap intervals of each metric over the users of each domain.

    A user's texts share the profile that generated (and attributes) them, so users, not
    texts, are the resampling unit (``personalir.common.bootstrap``); the average over domains
    is the mean of per-domain replicates (with one domain, that domain's). One row per
    (domain or ``average_label``, sampler): ``<metric>``, ``<metric>_ci_low``,
    ``<metric>_ci_high`` and ``users`` for each metric of :data:`USER_METRICS`.
    """
    rows: dict[tuple[str, str], dict] = {}
    for sampler in dict.fromkeys(outcomes["sampler"]):
        of = outcomes[outcomes["sampler"] == sampler]
        for metric, (num, den) in USER_METRICS.items():
            units = {}
            for d in domains:
                u = of[of["domain"] == d]
                units[d] = pd.DataFrame(
                    {
                        "num": u[num].to_numpy(dtype=float),
                        "den": u[den].to_numpy(dtype=float) if den else np.ones(len(u)),
                    }
                )
            found = bootstrap_summary(
                units,
                samples=samples,
                confidence=confidence,
                seed=seed,
                names=(sampler, metric),
                average_label=average_label,
                unit="users",
            )
            if len(domains) == 1:
                found.append({**found[0], "domain": average_label})
            for r in found:
                row = rows.setdefault(
                    (r["domain"], sampler),
                    {"domain": r["domain"], "sampler": sampler, "users": r["users"]},
                )
                row[metric] = r["value"]
                row[f"{metric}_ci_low"] = r["ci_low"]
                row[f"{metric}_ci_high"] = r["ci_high"]
    return pd.DataFrame(list(rows.values()))


def sampler_order() -> list[str]:
    """Every registered sampler in table order (baselines first)."""
    return SAMPLERS.ordered()


def derangement(users: Sequence[str], seed: int) -> dict[str, str]:
    """Each user -> a different user (a seeded random cyclic shift of a shuffled order)."""
    users = sorted(users)
    if len(users) < 2:
        raise ValueError("the wrong-user sampler needs at least two users")
    order = list(rng(seed, "derangement").permutation(len(users)))
    return {users[order[i]]: users[order[(i + 1) % len(users)]] for i in range(len(users))}


def edit_log_likelihoods(
    injector: Injector,
    result: InjectionResult,
    core_terms: Sequence[str],
    policies: Sequence[ProfilePolicy],
) -> np.ndarray:
    """For each policy, log P(the personalised injector with it makes exactly these edits).

    Follows :meth:`Injector.inject` step by step: the word is drawn with weight
    ``P(err | context)`` among the eligible words, then the form either from the profile's own
    misspellings of that word (probability ``reuse_misspelling_prob`` when it has any) or from
    a mechanism drawn from ``P(m | context)`` (renormalised over the word's applicable
    mechanisms) and a uniform variant of it.
    """
    words = injector.analyse(result.clean)
    by_index = {w.index: w for w in words}
    out = np.zeros(len(policies))
    done: set[int] = set()
    for e in result.edits:
        pool = injector.eligible(words, core_terms, done)
        done.add(e.word_index)
        if e.word_index not in {w.index for w in pool}:
            return np.full(len(policies), -math.inf)
        word = by_index[e.word_index]
        lower = word.text.lower().replace("\u2019", "'")
        form = e.replacement.lower().replace("\u2019", "'")
        by_mech = injector.variants(lower)
        mech = classify(form, lower)
        uniform_variant = (
            1 / len(by_mech[mech]) if mech in by_mech and form in by_mech[mech] else 0.0
        )
        for j, policy in enumerate(policies):
            fields = policy.profile.params.context_fields
            keys = [injector.ctx_key(w.context, fields) for w in pool]
            weights = [policy.word_weight(k) for k in keys]
            z = sum(weights)
            key = injector.ctx_key(word.context, fields)
            p_word = policy.word_weight(key) / z if z > 0 else 0.0
            probs = policy.mechanism_probs(key)
            zm = sum(probs[m] for m in by_mech)
            p_mech = probs[mech] / zm * uniform_variant if zm > 0 and uniform_variant else 0.0
            own = injector.own_forms(lower, policy)
            if own:
                p_own = sum(n for f, n in own if f == form) / sum(n for _, n in own)
                p_form = injector.reuse_prob * p_own + (1 - injector.reuse_prob) * p_mech
            else:
                p_form = p_mech
            if p_word <= 0 or p_form <= 0:
                out[j] = -math.inf
            else:
                out[j] += math.log(p_word) + math.log(p_form)
    return out


def _expected_rank_metrics(scores: np.ndarray, true_idx: int) -> tuple[float, float]:
    """(Top-1, reciprocal rank) of ``true_idx`` with ties broken uniformly at random."""
    t = scores[true_idx]
    others = np.delete(scores, true_idx)
    if not np.isfinite(t):
        greater = int(np.sum(np.isfinite(others)))
        equal = len(others) - greater
    else:
        tol = 1e-9 * max(1.0, abs(t))
        greater = int(np.sum(others > t + tol))
        equal = int(np.sum(np.abs(others - t) <= tol))
    rr = float(np.mean([1.0 / (greater + 1 + k) for k in range(equal + 1)]))
    top1 = 1.0 / (equal + 1) if greater == 0 else 0.0
    return top1, rr


def clean_texts(
    source: str,
    *,
    products: pd.DataFrame | None = None,
    sentences: pd.DataFrame | None = None,
) -> list[tuple[str, tuple[str, ...]]]:
    """The shared pool of (clean text, core terms), in a fixed order."""
    if source == "product_titles":
        if products is None:
            raise ValueError(
                "errors.sampling_eval.text_source product_titles needs the product catalogue "
                "(products table); without one set errors.sampling_eval.text_source: "
                "corrected_sentences"
            )
        p = products[products["eligible"]] if "eligible" in products else products
        pool = [(t, tuple(c)) for t, c in zip(p["title"], p["core_terms"], strict=True) if t]
    elif source == "corrected_sentences":
        if sentences is None:
            raise ValueError("text_source corrected_sentences needs the corrections table")
        s = sentences[sentences["text"] == sentences["corrected"]]
        n = s["text"].str.split().str.len()
        pool = [(t, ()) for t in s.loc[(n >= 5) & (n <= 25), "text"]]
    else:
        raise ValueError(f"unknown text_source {source!r}")
    pool = sorted(dict.fromkeys(pool))
    if not pool:
        hint = (
            "no product has a title"
            if source == "product_titles"
            else "no sentence of 5-25 words was left unchanged by the correction"
        )
        raise ValueError(f"no clean texts from text_source {source}: {hint}")
    return pool


def split_profiles(
    edits: pd.DataFrame,
    words: pd.DataFrame,
    n_sentences: dict[str, int],
    params: ProfileParams,
    attribution: str,
) -> tuple[ProfileSet, ProfileSet]:
    """(generation profiles, attribution profiles) as the protocol's step 1 defines them."""
    users = sorted(n_sentences)
    if attribution == "same":
        full = build_profiles(edits, words, users, params, n_sentences=n_sentences)
        return full, full
    if attribution != "held_out":
        raise ValueError(f"attribution must be held_out or same, got {attribution!r}")
    half = {u: n // 2 for u, n in n_sentences.items()}

    def part(df: pd.DataFrame, first: bool) -> pd.DataFrame:
        cut = df["user_id"].map(half)
        return df[(df["position"] < cut) == first]

    gen = build_profiles(
        part(edits, True), part(words, True), users, params, n_sentences={u: half[u] for u in users}
    )
    att = build_profiles(
        part(edits, False),
        part(words, False),
        users,
        params,
        n_sentences={u: n_sentences[u] - half[u] for u in users},
    )
    return gen, att


def evaluate_sampling(
    generation: ProfileSet,
    attribution: ProfileSet,
    texts: list[tuple[str, tuple[str, ...]]],
    injector: Injector,
    *,
    samplers: Sequence[str],
    texts_per_user: int,
    n_edits: int,
    n_candidates: int | None,
    seed: int,
    domain: str,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(one row per sampler, :func:`user_outcomes` of every sampler, run facts)."""
    users = sorted(generation.users)
    if len(users) < 2:
        raise ValueError("the sampling evaluation needs at least two users")
    ctx = SamplingContext(generation, derangement(users, derive_seed(seed, domain)))
    n_texts = min(texts_per_user, len(texts))
    user_texts = {
        u: [
            texts[i]
            for i in sorted(
                rng(seed, domain, "texts", u).choice(len(texts), size=n_texts, replace=False)
            )
        ]
        for u in users
    }
    injector.analyse_many([t for u in users for t, _ in user_texts[u]])
    cands = {}
    for u in users:
        others = [v for v in users if v != u]
        if n_candidates is not None and n_candidates - 1 < len(others):
            pick = rng(seed, domain, "candidates", u).choice(
                len(others), size=n_candidates - 1, replace=False
            )
            others = [others[i] for i in sorted(pick)]
        cands[u] = [u, *others]
    att_policy = {u: ProfilePolicy(attribution[u], "attribution") for u in users}
    rows, detail, outcomes = [], {}, []
    for name in samplers:
        sampler = SAMPLERS.get(name)()
        top1s, rrs, single, n_without, n_edits_made = [], [], [], 0, 0
        mech_counts: dict[str, int] = {}
        for u in users:
            policy = sampler.policy(u, ctx)
            evidence = np.zeros(len(cands[u]))
            used, single_sum = 0, 0.0
            for k, (text, core) in enumerate(user_texts[u]):
                result = injector.inject(
                    text, core, policy, n_edits=n_edits, seed=derive_seed(seed, domain, name, u, k)
                )
                if not result.edits:
                    n_without += 1
                    continue
                used += 1
                n_edits_made += len(result.edits)
                for e in result.edits:
                    mech_counts[e.mechanism] = mech_counts.get(e.mechanism, 0) + 1
                scores = edit_log_likelihoods(
                    injector, result, core, [att_policy[v] for v in cands[u]]
                )
                evidence += scores
                single.append(_expected_rank_metrics(scores, 0)[0])
                single_sum += single[-1]
            if used:
                t1, rr = _expected_rank_metrics(evidence, 0)
                top1s.append(t1)
                rrs.append(rr)
                outcomes.append(
                    {
                        "domain": domain,
                        "sampler": name,
                        "user_id": u,
                        "top1": t1,
                        "rr": rr,
                        "single_query_top1_sum": single_sum,
                        "texts_scored": used,
                    }
                )
        rows.append(
            {
                "domain": domain,
                "sampler": name,
                "top1": float(np.mean(top1s)) if top1s else float("nan"),
                "mrr": float(np.mean(rrs)) if rrs else float("nan"),
                "single_query_top1": float(np.mean(single)) if single else float("nan"),
                "users": len(top1s),
                "texts_scored": len(single),
                "texts_without_edit": n_without,
                "edits": n_edits_made,
            }
        )
        detail[name] = {"mechanisms": dict(sorted(mech_counts.items()))}
    table = pd.DataFrame(rows)
    n_c = len(cands[users[0]])
    info = {
        "domain": domain,
        "users": len(users),
        "candidates_per_user": n_c,
        "chance_top1": 1 / n_c,
        "chance_mrr": float(np.mean([1 / k for k in range(1, n_c + 1)])),
        "texts_per_user": n_texts,
        "text_pool": len(texts),
        "n_edits": n_edits,
        "generation_users_fallback": generation.summary()["users_fallback_global"],
        "attribution_users_fallback": attribution.summary()["users_fallback_global"],
        # Users whose generating and attributing profiles both rest on their own edits: for
        # the others the personalised sampler draws from (or is scored by) the domain's.
        "users_observed_in_both": len(
            set(users)
            - set(generation.summary()["users_fallback_ids"])
            - set(attribution.summary()["users_fallback_ids"])
        ),
        "samplers": detail,
    }
    return table, pd.DataFrame(outcomes, columns=USER_OUTCOME_COLUMNS), info
