"""Character-level error mechanisms: how a writer turns a correct word into the written one.

Each mechanism is a small registered class with two faces that must agree:
:meth:`Mechanism.variants` enumerates every form the mechanism can make from a word (injection
draws from it) and :func:`classify` names the mechanism that explains an observed
(written, correct) pair (profiles count it). For every mechanism ``m`` and every variant ``v``
of a word ``w`` produced by ``m``, ``classify(v, w) == m`` (tested), so the profile learned from
a user's writing and the errors injected from it speak the same language.

Mechanisms (ids as in the planted truth of the sample world):
- ``keyboard``: one letter replaced by a QWERTY neighbour (``guitar`` -> ``guitsr``);
- ``swap``: two adjacent, different letters transposed (``the`` -> ``teh``);
- ``repetition``: one letter doubled (``tone`` -> ``tonne``);
- ``insertion``: one letter inserted that equals neither neighbour (``strap`` -> ``strasp``);
- ``deletion``: one letter deleted (``sound`` -> ``sond``);
- ``homophone``: a word replaced by one that sounds alike (``their`` -> ``there``);
- ``other``: any other single-word change (a substitution by a non-neighbouring key, a missing
  apostrophe ``dont``, two unrelated changes, ...). Its injected form is a one-letter
  substitution by a key that is not a neighbour.

All comparisons are case-insensitive; injection re-applies the original capitalisation.
"""

from __future__ import annotations

import string
from abc import ABC, abstractmethod

from personalir.common.registry import Registry
from personalir.errors.lexicon import HOMOPHONES, QWERTY_NEIGHBOURS, normalise_apostrophes

LETTERS = string.ascii_lowercase

#: Registered mechanism classes; :data:`MECHANISM_NAMES` fixes the order of probability vectors.
MECHANISMS: Registry[type[Mechanism]] = Registry("error mechanism")


class Mechanism(ABC):
    name: str
    description: str

    @abstractmethod
    def variants(self, word: str) -> set[str]:
        """Every lower-case form this mechanism makes from the lower-case ``word``."""


def _letters_only(word: str) -> bool:
    return word.isascii() and word.isalpha()


@MECHANISMS.register("keyboard")
class Keyboard(Mechanism):
    name = "keyboard"
    description = "one letter replaced by a QWERTY neighbour"

    def variants(self, word: str) -> set[str]:
        out = set()
        for i, ch in enumerate(word):
            for near in sorted(QWERTY_NEIGHBOURS.get(ch, ())):
                out.add(word[:i] + near + word[i + 1 :])
        return out


@MECHANISMS.register("swap")
class Swap(Mechanism):
    name = "swap"
    description = "two adjacent different letters transposed"

    def variants(self, word: str) -> set[str]:
        return {
            word[:i] + word[i + 1] + word[i] + word[i + 2 :]
            for i in range(len(word) - 1)
            if word[i] != word[i + 1] and word[i].isalpha() and word[i + 1].isalpha()
        }


@MECHANISMS.register("repetition")
class Repetition(Mechanism):
    name = "repetition"
    description = "one letter doubled"

    def variants(self, word: str) -> set[str]:
        return {word[: i + 1] + ch + word[i + 1 :] for i, ch in enumerate(word) if ch.isalpha()}


@MECHANISMS.register("insertion")
class Insertion(Mechanism):
    name = "insertion"
    description = "one letter inserted that equals neither neighbour"

    def variants(self, word: str) -> set[str]:
        out = set()
        for i in range(len(word) + 1):
            left = word[i - 1] if i > 0 else ""
            right = word[i] if i < len(word) else ""
            for ch in LETTERS:
                if ch != left and ch != right:
                    out.add(word[:i] + ch + word[i:])
        return out


@MECHANISMS.register("deletion")
class Deletion(Mechanism):
    name = "deletion"
    description = "one letter deleted"

    def variants(self, word: str) -> set[str]:
        return {word[:i] + word[i + 1 :] for i, ch in enumerate(word) if ch.isalpha()}


@MECHANISMS.register("homophone")
class Homophone(Mechanism):
    name = "homophone"
    description = "word replaced by a homophone"

    def variants(self, word: str) -> set[str]:
        return set(HOMOPHONES.get(normalise_apostrophes(word), ()))


@MECHANISMS.register("other")
class Other(Mechanism):
    name = "other"
    description = "any other single-word change (injected as a non-neighbour substitution)"

    def variants(self, word: str) -> set[str]:
        out = set()
        for i, ch in enumerate(word):
            if not ch.isalpha():
                continue
            near = QWERTY_NEIGHBOURS.get(ch, frozenset())
            for new in LETTERS:
                if new != ch and new not in near:
                    out.add(word[:i] + new + word[i + 1 :])
        return out


MECHANISM_NAMES: tuple[str, ...] = (
    "keyboard",
    "swap",
    "repetition",
    "insertion",
    "deletion",
    "homophone",
    "other",
)
assert set(MECHANISM_NAMES) == set(MECHANISMS.names())
#: Mechanisms whose injected form must not be a dictionary word.
NON_WORD_MECHANISMS = frozenset(MECHANISM_NAMES) - {"homophone"}

_INSTANCES = {name: MECHANISMS.get(name)() for name in MECHANISM_NAMES}


def mechanism(name: str) -> Mechanism:
    try:
        return _INSTANCES[name]
    except KeyError:
        raise KeyError(f"unknown error mechanism {name!r}; known: {MECHANISM_NAMES}") from None


def classify(written: str, correct: str) -> str | None:
    """The mechanism that turns ``correct`` into ``written``; None if they differ only in case.

    Checked in a fixed order: homophone, then the one-letter mechanisms; a change none of
    them explains is ``other``. Only letters count as inserted, deleted or doubled: a missing
    apostrophe (``dont``) is ``other``.
    """
    w = normalise_apostrophes(written.lower())
    c = normalise_apostrophes(correct.lower())
    if w == c:
        return None
    if w in HOMOPHONES.get(c, ()):
        return "homophone"
    if len(w) == len(c):
        diff = [i for i in range(len(w)) if w[i] != c[i]]
        if len(diff) == 1:
            i = diff[0]
            return "keyboard" if w[i] in QWERTY_NEIGHBOURS.get(c[i], ()) else "other"
        if (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and w[diff[0]] == c[diff[1]]
            and w[diff[1]] == c[diff[0]]
            and w[diff[0]].isalpha()
            and w[diff[1]].isalpha()
        ):
            return "swap"
        return "other"
    if len(w) == len(c) + 1:
        spots = [i for i in range(len(w)) if w[:i] + w[i + 1 :] == c]
        if not spots or not any(w[i].isalpha() for i in spots):
            return "other"

        def doubled(i: int) -> bool:
            return (i > 0 and w[i - 1] == w[i]) or (i + 1 < len(w) and w[i + 1] == w[i])

        if any(w[i].isalpha() and doubled(i) for i in spots):
            return "repetition"
        return "insertion"
    if len(w) + 1 == len(c):
        spots = [i for i in range(len(c)) if c[:i] + c[i + 1 :] == w]
        if spots and any(c[i].isalpha() for i in spots):
            return "deletion"
        return "other"
    return "other"
