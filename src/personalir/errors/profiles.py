"""Per-user writing-error profiles: which mechanisms a user uses, where, how often, which words.

Counts come from the character-level edits of a user's sentences
(:mod:`personalir.errors.edits`) and the words those sentences hold. With ``M`` mechanisms,
``alpha`` the Laplace pseudo-count, ``kappa`` the shrinkage strength in pseudo-edits and
``kappa_words`` the one of error rates in pseudo-words, a user ``u`` in context ``c`` (the
configured fields of the word and its head, e.g. ``NOUN`` or ``nsubj|NOUN|VERB``):

Mechanisms
  ``Lap_u(m)     = (n_u(m) + alpha) / (N_u + alpha M)``            (Laplace, user's edits)
  ``P_g(m)       = Lap_g(m)``                                       (domain, all users pooled)
  ``P_g(m|c)     = l_gc Lap_g(m|c) + (1 - l_gc) P_g(m)``,  ``l_gc = n_g(c) / (n_g(c) + kappa)``
  ``P_u(m)       = l_u Lap_u(m) + (1 - l_u) P_g(m)``,      ``l_u = N_u / (N_u + kappa)``
  ``P_u(m|c)     = l_uc Lap_u(m|c) + (1 - l_uc) [l_u Lap_u(m) + (1 - l_u) P_g(m|c)]``,
  ``l_uc = n_u(c) / (n_u(c) + kappa)``: a sparse user leans on their own overall habit, and
  where they have little evidence overall, on the domain's distribution in that context.
Error rates (edits per injectable word)
  ``P_g(err)     = (K_g + alpha) / (W_g + 2 alpha)``
  ``P_g(err|c)   = (k_g(c) + kappa_words P_g(err)) / (w_g(c) + kappa_words)``
  ``P_u(err)     = (K_u + kappa_words P_g(err)) / (W_u + kappa_words)``
  ``P_u(err|c)   = (k_u(c) + kappa_words r_uc) / (w_u(c) + kappa_words)``, with the prior
  ``r_uc = min(1, P_u(err) P_g(err|c) / P_g(err))``: the user's rate, shaped by the domain's
  context effect.
Misspellings: every character-level edit's (correct word -> written word), counted.

Fallback. A user with no character-level edit gets ``status = "fallback_global"``: with
``N_u = 0`` the formulas above give exactly the domain's mechanism distributions (``P_g(m)``,
``P_g(m|c)``), the error rate shrinks from zero towards the domain's, and there are no
misspellings to reuse. The status is stored in the profile and counted in the report, so no
user silently borrows the domain's habits.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from personalir.errors.mechanisms import MECHANISM_NAMES

GLOBAL_ID = "__global__"
STATUS_OBSERVED = "observed"
STATUS_FALLBACK = "fallback_global"
STATUS_GLOBAL = "global"
FALLBACK_POLICY = (
    "users without character-level edits use the domain's mechanism distributions "
    "(P_g(m), P_g(m|c)), an error rate shrunk from 0 towards the domain's, no misspellings"
)


@dataclass(frozen=True)
class ProfileParams:
    alpha: float = 0.1
    kappa: float = 5.0
    kappa_words: float = 200.0
    context_fields: tuple[str, ...] = ("pos",)

    @classmethod
    def from_config(cls, section: dict) -> ProfileParams:
        return cls(
            section["alpha"],
            section["kappa"],
            section["kappa_words"],
            tuple(section["context_fields"]),
        )


def context_key(ctx: dict, fields: tuple[str, ...]) -> str:
    return "|".join(str(ctx.get(f, "")) for f in fields)


def laplace_smoothed(counts: dict[str, float], alpha: float) -> dict[str, float]:
    total = sum(counts.get(m, 0) for m in MECHANISM_NAMES)
    denom = total + alpha * len(MECHANISM_NAMES)
    return {m: (counts.get(m, 0) + alpha) / denom for m in MECHANISM_NAMES}


def _mix(weight: float, a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {m: weight * a[m] + (1 - weight) * b[m] for m in MECHANISM_NAMES}


class ErrorProfile:
    """Counts of one user (or of the whole domain) and the smoothed probabilities from them."""

    def __init__(
        self,
        user_id: str,
        params: ProfileParams,
        *,
        mechanism_counts: dict[str, int],
        context_mechanism_counts: dict[str, dict[str, int]],
        context_word_counts: dict[str, int],
        misspellings: dict[str, dict[str, int]],
        n_sentences: int = 0,
        n_edits: int = 0,
        errant_type_counts: dict[str, int] | None = None,
        parent: ErrorProfile | None = None,
    ):
        self.user_id = user_id
        self.params = params
        self.mechanism_counts = {m: int(mechanism_counts.get(m, 0)) for m in MECHANISM_NAMES}
        self.context_mechanism_counts = {
            c: {m: int(v.get(m, 0)) for m in MECHANISM_NAMES}
            for c, v in context_mechanism_counts.items()
        }
        self.context_word_counts = {c: int(n) for c, n in context_word_counts.items()}
        self.misspellings = {c: dict(v) for c, v in misspellings.items()}
        self.n_sentences = int(n_sentences)
        self.n_edits = int(n_edits)
        self.errant_type_counts = dict(errant_type_counts or {})
        self.parent = parent
        if parent is None:
            self.status = STATUS_GLOBAL
        else:
            self.status = STATUS_OBSERVED if self.n_char_edits > 0 else STATUS_FALLBACK
        self._cache: dict[Any, Any] = {}

    # -- counts
    @property
    def n_char_edits(self) -> int:
        return sum(self.mechanism_counts.values())

    @property
    def n_words(self) -> int:
        return sum(self.context_word_counts.values())

    def _edits_in(self, ctx: str) -> int:
        return sum(self.context_mechanism_counts.get(ctx, {}).values())

    @property
    def shrinkage_weight(self) -> float:
        """``l_u``: the weight of the user's own mechanism counts (0 for the fallback)."""
        if self.parent is None:
            return 1.0
        n = self.n_char_edits
        return n / (n + self.params.kappa) if n else 0.0

    # -- mechanisms
    def p_mechanisms(self) -> dict[str, float]:
        key = "p_m"
        if key not in self._cache:
            lap = laplace_smoothed(self.mechanism_counts, self.params.alpha)
            if self.parent is None:
                self._cache[key] = lap
            else:
                self._cache[key] = _mix(self.shrinkage_weight, lap, self.parent.p_mechanisms())
        return self._cache[key]

    def p_mechanisms_given(self, ctx: str) -> dict[str, float]:
        key = ("p_mc", ctx)
        if key in self._cache:
            return self._cache[key]
        n_c = self._edits_in(ctx)
        local = laplace_smoothed(self.context_mechanism_counts.get(ctx, {}), self.params.alpha)
        w_c = n_c / (n_c + self.params.kappa) if n_c else 0.0
        if self.parent is None:
            backoff = self.p_mechanisms()
        else:
            own = laplace_smoothed(self.mechanism_counts, self.params.alpha)
            backoff = _mix(self.shrinkage_weight, own, self.parent.p_mechanisms_given(ctx))
        out = _mix(w_c, local, backoff)
        self._cache[key] = out
        return out

    # -- error rates
    def error_rate(self) -> float:
        """Character-level edits per injectable word (smoothed)."""
        key = "rate"
        if key not in self._cache:
            p = self.params
            if self.parent is None:
                r = (self.n_char_edits + p.alpha) / (self.n_words + 2 * p.alpha)
            else:
                r = (self.n_char_edits + p.kappa_words * self.parent.error_rate()) / (
                    self.n_words + p.kappa_words
                )
            self._cache[key] = r
        return self._cache[key]

    def p_error_given(self, ctx: str) -> float:
        key = ("p_ec", ctx)
        if key in self._cache:
            return self._cache[key]
        p = self.params
        k, w = self._edits_in(ctx), self.context_word_counts.get(ctx, 0)
        if self.parent is None:
            prior = self.error_rate()
        else:
            g = self.parent
            prior = min(1.0, self.error_rate() * g.p_error_given(ctx) / g.error_rate())
        out = (k + p.kappa_words * prior) / (w + p.kappa_words)
        self._cache[key] = out
        return out

    # -- serialisation
    def to_json(self) -> dict:
        return {
            "user_id": self.user_id,
            "status": self.status,
            "n_sentences": self.n_sentences,
            "n_words": self.n_words,
            "n_edits": self.n_edits,
            "n_char_edits": self.n_char_edits,
            "shrinkage_weight": round(self.shrinkage_weight, 6),
            "error_rate": round(self.error_rate(), 8),
            "mechanism_probs": {m: round(v, 6) for m, v in self.p_mechanisms().items()},
            "mechanism_counts": self.mechanism_counts,
            "context_mechanism_counts": dict(sorted(self.context_mechanism_counts.items())),
            "context_word_counts": dict(sorted(self.context_word_counts.items())),
            "misspellings": {
                c: dict(sorted(v.items())) for c, v in sorted(self.misspellings.items())
            },
            "errant_type_counts": dict(sorted(self.errant_type_counts.items())),
        }

    @classmethod
    def from_json(
        cls, obj: dict, params: ProfileParams, parent: ErrorProfile | None = None
    ) -> ErrorProfile:
        prof = cls(
            obj["user_id"],
            params,
            mechanism_counts=obj["mechanism_counts"],
            context_mechanism_counts=obj["context_mechanism_counts"],
            context_word_counts=obj["context_word_counts"],
            misspellings=obj["misspellings"],
            n_sentences=obj["n_sentences"],
            n_edits=obj["n_edits"],
            errant_type_counts=obj.get("errant_type_counts", {}),
            parent=parent,
        )
        if obj.get("status") and obj["status"] != prof.status:
            raise ValueError(
                f"profile {obj['user_id']}: stored status {obj['status']!r} does not "
                f"match its counts ({prof.status!r})"
            )
        return prof


@dataclass
class ProfileSet:
    params: ProfileParams
    global_profile: ErrorProfile
    users: dict[str, ErrorProfile]

    def __getitem__(self, user_id: str) -> ErrorProfile:
        return self.users[user_id]

    def summary(self) -> dict:
        statuses = Counter(p.status for p in self.users.values())
        return {
            "users": len(self.users),
            "users_observed": statuses.get(STATUS_OBSERVED, 0),
            "users_fallback_global": statuses.get(STATUS_FALLBACK, 0),
            "users_fallback_ids": sorted(
                u for u, p in self.users.items() if p.status == STATUS_FALLBACK
            ),
            "fallback_policy": FALLBACK_POLICY,
            "char_edits": self.global_profile.n_char_edits,
            "words": self.global_profile.n_words,
            "global_error_rate": round(self.global_profile.error_rate(), 8),
            "global_mechanism_probs": {
                m: round(v, 6) for m, v in self.global_profile.p_mechanisms().items()
            },
        }

    def to_json(self) -> dict:
        return {
            "params": {**asdict(self.params), "context_fields": list(self.params.context_fields)},
            "mechanisms": list(MECHANISM_NAMES),
            "summary": self.summary(),
            "global": self.global_profile.to_json(),
            "users": {u: p.to_json() for u, p in sorted(self.users.items())},
        }

    @classmethod
    def from_json(cls, obj: dict) -> ProfileSet:
        raw = obj["params"]
        params = ProfileParams(
            raw["alpha"], raw["kappa"], raw["kappa_words"], tuple(raw["context_fields"])
        )
        if list(obj["mechanisms"]) != list(MECHANISM_NAMES):
            raise ValueError(
                f"profiles use mechanisms {obj['mechanisms']}, this code {list(MECHANISM_NAMES)}"
            )
        g = ErrorProfile.from_json(obj["global"], params)
        users = {u: ErrorProfile.from_json(p, params, g) for u, p in obj["users"].items()}
        return cls(params, g, users)


def build_profiles(
    edits: pd.DataFrame,
    words: pd.DataFrame,
    users: list[str],
    params: ProfileParams,
    *,
    n_sentences: dict[str, int] | None = None,
) -> ProfileSet:
    """Profiles of ``users`` (every one gets a profile, fallback or not) and the domain's.

    ``edits`` and ``words`` are the tables of :mod:`personalir.errors.edits` (as DataFrames),
    already restricted to the sentences to learn from. Users outside ``users`` are ignored.
    """
    fields = params.context_fields
    user_set = set(users)
    edits = edits[edits["user_id"].isin(user_set)]
    words = words[words["user_id"].isin(user_set)]
    char = edits[edits["char_level"]]

    def ctx_series(df: pd.DataFrame) -> pd.Series:
        if df.empty:
            return pd.Series([], dtype=str, index=df.index)
        out = df[fields[0]].astype(str)
        for f in fields[1:]:
            out = out + "|" + df[f].astype(str)
        return out

    char = char.assign(ctx=ctx_series(char))
    words = words.assign(ctx=ctx_series(words))

    mech = defaultdict(Counter)
    ctx_mech: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    miss: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for u, m, c, cw, ww in zip(
        char["user_id"],
        char["mechanism"],
        char["ctx"],
        char["correct_word"],
        char["written_word"],
        strict=True,
    ):
        mech[u][m] += 1
        ctx_mech[u][c][m] += 1
        miss[u][cw][ww] += 1
    word_counts: dict[str, Counter] = defaultdict(Counter)
    if not words.empty:
        for (u, c), n in words.groupby(["user_id", "ctx"]).size().items():
            word_counts[u][c] = int(n)
    n_edits = Counter(edits["user_id"])
    types: dict[str, Counter] = defaultdict(Counter)
    for u, t in zip(edits["user_id"], edits["errant_type"], strict=True):
        types[u][t] += 1

    def pooled(per_user: dict) -> Counter:
        total: Counter = Counter()
        for v in per_user.values():
            total.update(v)
        return total

    g_ctx_mech: dict[str, Counter] = defaultdict(Counter)
    for per in ctx_mech.values():
        for c, v in per.items():
            g_ctx_mech[c].update(v)
    g_miss: dict[str, Counter] = defaultdict(Counter)
    for per in miss.values():
        for c, v in per.items():
            g_miss[c].update(v)
    n_sent = n_sentences or {}
    g = ErrorProfile(
        GLOBAL_ID,
        params,
        mechanism_counts=pooled(mech),
        context_mechanism_counts={c: dict(v) for c, v in g_ctx_mech.items()},
        context_word_counts=dict(pooled(word_counts)),
        misspellings={c: dict(v) for c, v in g_miss.items()},
        n_sentences=sum(n_sent.get(u, 0) for u in users),
        n_edits=int(sum(n_edits.values())),
        errant_type_counts=dict(pooled(types)),
    )
    profiles = {
        u: ErrorProfile(
            u,
            params,
            mechanism_counts=dict(mech.get(u, {})),
            context_mechanism_counts={c: dict(v) for c, v in ctx_mech.get(u, {}).items()},
            context_word_counts=dict(word_counts.get(u, {})),
            misspellings={c: dict(v) for c, v in miss.get(u, {}).items()},
            n_sentences=n_sent.get(u, 0),
            n_edits=n_edits.get(u, 0),
            errant_type_counts=dict(types.get(u, {})),
            parent=g,
        )
        for u in sorted(user_set)
    }
    return ProfileSet(params, g, profiles)


def jensen_shannon(p: dict[str, float], q: dict[str, float]) -> float:
    """Jensen-Shannon divergence in bits (0 = identical, 1 = disjoint)."""
    keys = sorted(set(p) | set(q))
    zp, zq = sum(p.values()), sum(q.values())
    out = 0.0
    for k in keys:
        a, b = p.get(k, 0.0) / zp, q.get(k, 0.0) / zq
        m = (a + b) / 2
        if a > 0:
            out += 0.5 * a * math.log2(a / m)
        if b > 0:
            out += 0.5 * b * math.log2(b / m)
    return max(0.0, out)
