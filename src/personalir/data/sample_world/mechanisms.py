"""Character-level writing errors the sample world plants in review text.

Six mechanisms, each a small function ``(word, draw) -> str | None`` registered by name
(None: the mechanism does not apply to this word). They follow the PQB minimality rules:
tokens of at least three letters (homophones excepted), edit distance at most two and a
length change of at most one. Case is preserved: an edit on a capitalised word stays
capitalised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from personalir.common.registry import Registry


class Draw(Protocol):
    def u(self) -> float: ...

    def pick(self, seq): ...


Mechanism = Callable[[str, Draw], "str | None"]
MECHANISMS: Registry[Mechanism] = Registry("sample-world error mechanism")

MECHANISM_DESCRIPTIONS = {
    "keyboard": "one letter replaced by a QWERTY neighbour",
    "swap": "two adjacent letters transposed",
    "repetition": "one letter doubled",
    "insertion": "one random letter inserted inside the word",
    "deletion": "one letter deleted",
    "homophone": "word replaced by a homophone (their/there, its/it's, to/too, ...)",
}
# Stable order used for probability vectors and the planted truth.
MECHANISM_NAMES: tuple[str, ...] = tuple(MECHANISM_DESCRIPTIONS)

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _qwerty_neighbours() -> dict[str, str]:
    pos = {ch: (r, c) for r, row in enumerate(_ROWS) for c, ch in enumerate(row)}
    out = {}
    for ch, (r, c) in pos.items():
        near = []
        for other, (r2, c2) in pos.items():
            # Rows are staggered by half a key: a key touches c, c+1 above and c-1, c below.
            if other != ch and (
                (r2 == r and abs(c2 - c) == 1)
                or (r2 == r - 1 and c2 in (c, c + 1))
                or (r2 == r + 1 and c2 in (c - 1, c))
            ):
                near.append(other)
        out[ch] = "".join(sorted(near))
    return out


QWERTY_NEIGHBOURS: dict[str, str] = _qwerty_neighbours()

_HOMOPHONE_GROUPS = (
    ("their", "there", "they're"),
    ("your", "you're"),
    ("its", "it's"),
    ("to", "too"),
    ("then", "than"),
    ("lose", "loose"),
    ("were", "we're"),
    ("whose", "who's"),
    ("brake", "break"),
    ("piece", "peace"),
    ("weather", "whether"),
    ("know", "no"),
)
HOMOPHONES: dict[str, tuple[str, ...]] = {
    w: tuple(o for o in group if o != w) for group in _HOMOPHONE_GROUPS for w in group
}
# "no" is far more common as a determiner than as a misspelt "know"; never corrupt it.
HOMOPHONES.pop("no")

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _with_case(template: str, new: str) -> str:
    """Give ``new`` the capitalisation pattern of ``template`` (lower, Title or UPPER)."""
    if template.isupper() and len(template) > 1:
        return new.upper()
    if template[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def _case_edit(word: str, edit: Callable[[str], str | None]) -> str | None:
    """Apply a lowercase edit to a lower, Title or UPPER word; mixed case is edited as is."""
    if word.islower() or word.isupper() or (word[0].isupper() and word[1:].islower()):
        out = edit(word.lower())
        return None if out is None else _with_case(word, out)
    return edit(word)


def char_eligible(word: str) -> bool:
    return len(word) >= 3 and word.isalpha()


@MECHANISMS.register("keyboard")
def keyboard(word: str, draw: Draw) -> str | None:
    def edit(w: str) -> str | None:
        idx = [i for i, ch in enumerate(w) if ch.lower() in QWERTY_NEIGHBOURS]
        if not idx:
            return None
        i = draw.pick(idx)
        new = draw.pick(QWERTY_NEIGHBOURS[w[i].lower()])
        return w[:i] + (new.upper() if w[i].isupper() else new) + w[i + 1 :]

    return _case_edit(word, edit) if char_eligible(word) else None


@MECHANISMS.register("swap")
def swap(word: str, draw: Draw) -> str | None:
    def edit(w: str) -> str | None:
        idx = [i for i in range(len(w) - 1) if w[i].lower() != w[i + 1].lower()]
        if not idx:
            return None
        i = draw.pick(idx)
        return w[:i] + w[i + 1] + w[i] + w[i + 2 :]

    return _case_edit(word, edit) if char_eligible(word) else None


@MECHANISMS.register("repetition")
def repetition(word: str, draw: Draw) -> str | None:
    def edit(w: str) -> str:
        i = int(draw.u() * len(w))
        return w[: i + 1] + w[i].lower() + w[i + 1 :]

    return _case_edit(word, edit) if char_eligible(word) else None


@MECHANISMS.register("insertion")
def insertion(word: str, draw: Draw) -> str | None:
    def edit(w: str) -> str | None:
        i = 1 + int(draw.u() * (len(w) - 1))  # inside the word, never before the first letter
        options = [c for c in LETTERS if c not in (w[i - 1].lower(), w[i].lower())]
        return w[:i] + draw.pick(options) + w[i:]

    return _case_edit(word, edit) if char_eligible(word) else None


@MECHANISMS.register("deletion")
def deletion(word: str, draw: Draw) -> str | None:
    def edit(w: str) -> str:
        i = int(draw.u() * len(w))
        return w[:i] + w[i + 1 :]

    return _case_edit(word, edit) if char_eligible(word) else None


@MECHANISMS.register("homophone")
def homophone(word: str, draw: Draw) -> str | None:
    options = HOMOPHONES.get(word.lower())
    if not options:
        return None
    return _with_case(word, draw.pick(options))


def eligible(mechanism: str, word: str) -> bool:
    if mechanism == "homophone":
        return word.lower() in HOMOPHONES
    return char_eligible(word)
