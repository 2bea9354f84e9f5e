"""Core terms in text: normalisation, occurrence counts, contradictions, the product's head noun.

A query holds the information need fixed when it contains each of the product's five core
terms exactly ``frequency`` times (the *required frequencies*, 1 by default, so the core-term
multiset of every valid query of a product is the same) and names no value that contradicts
the product's attributes.

Matching is on normalised word sequences: lower case, hyphens, slashes, underscores and
apostrophes read as spaces (so ``Arcbolt's`` names ``Arcbolt``), words are ``[a-z0-9]+``. A
term matches a run of words equal to its own words; occurrences are counted without overlap,
longest terms first, so ``Heavy`` is not counted again inside ``Extra Heavy`` when both are
core terms.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9]+")
_SEPARATORS = re.compile(r"[-_/'\u2019]+")


def normalised(text: str) -> str:
    """``text`` lower-cased with separators read as spaces; its words are the ``[a-z0-9]+`` runs."""
    return _SEPARATORS.sub(" ", text.lower())


def words(text: str) -> list[str]:
    """Normalised words of ``text`` (see the module docstring)."""
    return _WORD.findall(normalised(text))


def term_key(term: str) -> tuple[str, ...]:
    return tuple(words(term))


def count_terms(text: str, terms: Sequence[str]) -> dict[str, int]:
    """Non-overlapping occurrences of each term in ``text`` (longest terms claim words first)."""
    toks = words(text)
    taken = [False] * len(toks)
    counts = {t: 0 for t in terms}
    for term in sorted(dict.fromkeys(terms), key=lambda t: (-len(term_key(t)), t)):
        key = term_key(term)
        n = len(key)
        if n == 0:
            continue
        i = 0
        while i <= len(toks) - n:
            if tuple(toks[i : i + n]) == key and not any(taken[i : i + n]):
                for j in range(i, i + n):
                    taken[j] = True
                counts[term] += 1
                i += n
            else:
                i += 1
    return counts


def core_multiset(text: str, terms: Sequence[str]) -> Counter:
    """The core-term multiset of ``text`` (normalised term -> count), zero counts dropped."""
    return Counter({" ".join(term_key(t)): n for t, n in count_terms(text, terms).items() if n})


def mentions(text: str, term: str) -> bool:
    return _occurs(term_key(term), words(text))


@dataclass(frozen=True)
class AttributeVocabulary:
    """Every value each attribute key takes in a domain's catalogue (contradiction check)."""

    values: dict[str, frozenset[tuple[str, ...]]]

    @classmethod
    def from_products(
        cls, keys: Iterable[Sequence[str]], values: Iterable[Sequence[str]]
    ) -> AttributeVocabulary:
        out: dict[str, set[tuple[str, ...]]] = {}
        for ks, vs in zip(keys, values, strict=True):
            for k, v in zip(ks, vs, strict=True):
                key = term_key(v)
                if key:
                    out.setdefault(str(k), set()).add(key)
        return cls({k: frozenset(v) for k, v in sorted(out.items())})

    def contradictions(
        self,
        text: str,
        product_keys: Sequence[str],
        product_values: Sequence[str],
        keys=None,
        title: str = "",
    ) -> list[tuple[str, str]]:
        """``(key, value)`` pairs named in ``text`` that the product does not have.

        A value contradicts when it is a value of attribute ``k`` elsewhere in the catalogue,
        the product has attribute ``k`` with other value(s), the words of the value are not
        part of any of the product's own values (``Red`` is not a contradiction of
        ``Red Velvet``) and the value does not occur in the product's own ``title`` (a
        "baby stroller" whose age range is "Infant" does not contradict itself by "baby");
        ``keys`` limits the check to those attribute keys.
        """
        toks = words(text)
        return [
            (k, " ".join(other))
            for k, other in self.forbidden(product_keys, product_values, keys=keys, title=title)
            if _occurs(other, toks)
        ]

    def forbidden(
        self,
        product_keys: Sequence[str],
        product_values: Sequence[str],
        keys=None,
        title: str = "",
    ) -> list[tuple[str, tuple[str, ...]]]:
        """``(key, value words)`` that would contradict the product if a query named them (the
        rule of :meth:`contradictions`, before looking at any text); constrained decoding
        (:mod:`personalir.queries.constrained`) keeps them out of the LM's candidates."""
        title_toks = words(title)
        own = {term_key(v) for v in product_values}
        own_words = {w for v in own for w in v}
        by_key: dict[str, set[tuple[str, ...]]] = {}
        for k, v in zip(product_keys, product_values, strict=True):
            by_key.setdefault(str(k), set()).add(term_key(v))
        out = []
        for k, mine in sorted(by_key.items()):
            if keys is not None and k not in keys:
                continue
            for other in sorted(self.values.get(k, ())):
                if other in mine or other in own or set(other) <= own_words:
                    continue
                if _occurs(other, title_toks):
                    continue
                out.append((k, other))
        return out


def _occurs(seq: tuple[str, ...], toks: list[str]) -> bool:
    n = len(seq)
    return n > 0 and any(tuple(toks[i : i + n]) == seq for i in range(len(toks) - n + 1))


_TITLE_CUT = re.compile(r"\s+(?:for|with|-|–|—)\s+|,|\(|\||:")


def product_type(title: str, values: Sequence[str], *, max_words: int = 3) -> str:
    """The product's head noun phrase from its title, without brand or attribute values.

    ``Velvet Fret USB Audio Interface for Home Recording, Red`` with values
    ``[Velvet Fret, Red, Metal, Vintage, USB]`` gives ``audio interface``. Falls back to
    ``item`` when nothing is left (e.g. a game title that is all brand).
    """
    head = _TITLE_CUT.split(title, maxsplit=1)[0]
    toks = words(head)
    drop: set[int] = set()
    for v in sorted(values, key=lambda v: -len(term_key(v))):
        key = term_key(v)
        n = len(key)
        for i in range(len(toks) - n + 1):
            if n and tuple(toks[i : i + n]) == key:
                drop.update(range(i, i + n))
    kept = [t for i, t in enumerate(toks) if i not in drop and not t.isdigit()]
    return " ".join(kept[-max_words:]) if kept else "item"
