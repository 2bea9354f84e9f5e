"""Word lists shared by correction, classification and injection.

Two word lists that ship inside installed packages (no network) decide what a word is:
- the *detection* lexicon, symspellpy's English frequency dictionary (82,765 words, also the
  source of suggestions) plus the lower-case entries of the Hunspell en_GB-large list ERRANT
  uses: the spelling backend corrects only tokens outside it (and outside the domain's own
  vocabulary), and the classifier calls a single-word change a misspelling only when the
  written form is outside it;
- the *strict* lexicon, that dictionary plus the Hunspell en_GB-large list ERRANT uses
  (170,565 forms): injection only produces forms outside it (homophones excepted).
Strict contains detection, so every injected error is a non-word for the detector too.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

#: A word token: letters with internal apostrophes ("it's", "don't"). Digits never count.
WORD = re.compile(r"[A-Za-z]+(?:['\u2019][A-Za-z]+)*")

QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _qwerty_neighbours() -> dict[str, frozenset[str]]:
    """Keys that touch each letter on a QWERTY keyboard (rows staggered by half a key)."""
    pos = {ch: (r, c) for r, row in enumerate(QWERTY_ROWS) for c, ch in enumerate(row)}
    out: dict[str, frozenset[str]] = {}
    for ch, (r, c) in pos.items():
        near = set()
        for other, (r2, c2) in pos.items():
            if other == ch:
                continue
            same_row = r2 == r and abs(c2 - c) == 1
            above = r2 == r - 1 and c2 in (c, c + 1)
            below = r2 == r + 1 and c2 in (c - 1, c)
            if same_row or above or below:
                near.add(other)
        out[ch] = frozenset(near)
    return out


QWERTY_NEIGHBOURS: dict[str, frozenset[str]] = _qwerty_neighbours()

# Groups of words that sound alike (or are commonly confused for one another in writing).
# Used to classify a real-word substitution as `homophone` and to inject one.
HOMOPHONE_GROUPS: tuple[tuple[str, ...], ...] = (
    ("their", "there", "they're"),
    ("your", "you're"),
    ("its", "it's"),
    ("to", "too", "two"),
    ("then", "than"),
    ("lose", "loose"),
    ("were", "we're"),
    ("whose", "who's"),
    ("brake", "break"),
    ("piece", "peace"),
    ("weather", "whether"),
    ("know", "no"),
    ("hear", "here"),
    ("buy", "by", "bye"),
    ("right", "write"),
    ("new", "knew"),
    ("wear", "where"),
    ("weight", "wait"),
    ("whole", "hole"),
    ("accept", "except"),
    ("affect", "effect"),
    ("lead", "led"),
    ("passed", "past"),
    ("sight", "site", "cite"),
    ("principal", "principle"),
    ("plain", "plane"),
    ("peak", "peek"),
    ("role", "roll"),
    ("sole", "soul"),
    ("threw", "through"),
    ("allowed", "aloud"),
    ("bare", "bear"),
    ("week", "weak"),
    ("meet", "meat"),
    ("pair", "pear"),
    ("waste", "waist"),
    ("hour", "our"),
    ("one", "won"),
    ("for", "four"),
    ("see", "sea"),
    ("which", "witch"),
    ("would", "wood"),
    ("cord", "chord"),
    ("complement", "compliment"),
    ("stationary", "stationery"),
    ("quiet", "quite"),
    ("breath", "breathe"),
)


def _homophone_map(groups: Iterable[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for group in groups:
        for word in group:
            out.setdefault(word, [])
            out[word].extend(o for o in group if o != word and o not in out[word])
    return {w: tuple(v) for w, v in out.items()}


HOMOPHONES: dict[str, tuple[str, ...]] = _homophone_map(HOMOPHONE_GROUPS)


#: Informal words and abbreviations of online reviews that neither word list holds; writing
#: them is a register, not a slip.
INFORMAL_WORDS = frozenset(
    [
        "ok",
        "okay",
        "btw",
        "lol",
        "imo",
        "imho",
        "fyi",
        "asap",
        "bc",
        "cuz",
        "ya",
        "yeah",
        "yep",
        "yup",
        "nope",
        "gonna",
        "wanna",
        "gotta",
        "kinda",
        "sorta",
        "dunno",
        "lotta",
        "outta",
        "alright",
        "ish",
        "uke",
        "wah",
        "diy",
        "pic",
        "pics",
        "vid",
        "vids",
        "info",
    ]
)


def normalise_apostrophes(word: str) -> str:
    return word.replace("\u2019", "'")


def are_homophones(a: str, b: str) -> bool:
    a, b = normalise_apostrophes(a.lower()), normalise_apostrophes(b.lower())
    return b in HOMOPHONES.get(a, ())


@cache
def _symspell_words() -> frozenset[str]:
    words = set()
    path = importlib.resources.files("symspellpy") / "frequency_dictionary_en_82_765.txt"
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            term = line.split(" ", 1)[0].strip()
            if term:
                words.add(term.lower())
    return frozenset(words)


@cache
def _hunspell_words(lowercase_only: bool = False) -> frozenset[str]:
    """Hunspell en_GB-large forms (lower-cased); ``lowercase_only`` keeps only entries that
    are lower case in the list (drops proper nouns and acronyms such as "Kenya", "CPO")."""
    words = set()
    # Located without importing errant (its import loads spaCy: seconds).
    spec = importlib.util.find_spec("errant")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("errant is not installed (its Hunspell word list is needed)")
    path = Path(spec.submodule_search_locations[0]) / "en" / "resources" / "en_GB-large.txt"
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            term = line.strip()
            if term and (not lowercase_only or term.islower()):
                words.add(normalise_apostrophes(term.lower()))
    return frozenset(words)


class Lexicon:
    """A set of known (lower-case) word forms with a stable fingerprint."""

    def __init__(self, words: Iterable[str], *, extra: Iterable[str] = ()):
        base = frozenset(normalise_apostrophes(w.lower()) for w in words)
        self._extra = frozenset(normalise_apostrophes(w.lower()) for w in extra)
        self._words = base | self._extra if self._extra else base

    @classmethod
    def detection(cls) -> Lexicon:
        """What the spelling backend and the classifier call a word: symspellpy's dictionary
        plus the Hunspell entries that are lower case there ("oh", "mm", "unboxed").

        Hunspell's capitalised entries are left out: lower-cased they turn typos into words
        ("Th", "Nd", "Ot" would hide "the" -> "th"), and proper nouns are not what a typo of a
        common word looks like.
        """
        return cls(_symspell_words() | _hunspell_words(lowercase_only=True) | INFORMAL_WORDS)

    @classmethod
    def strict(cls) -> Lexicon:
        """symspellpy's dictionary plus Hunspell en_GB-large: an injected error must be in
        neither, so it is a non-word for any reader (and for the detection lexicon)."""
        return cls(_symspell_words() | _hunspell_words())

    def with_words(self, words: Iterable[str]) -> Lexicon:
        """A copy that also knows ``words`` (e.g. a domain's vocabulary)."""
        new = Lexicon.__new__(Lexicon)
        new._extra = self._extra | frozenset(normalise_apostrophes(w.lower()) for w in words)
        new._words = self._words | new._extra
        return new

    def __contains__(self, word: str) -> bool:
        return normalise_apostrophes(word.lower()) in self._words

    def __len__(self) -> int:
        return len(self._words)

    @property
    def extra_words(self) -> frozenset[str]:
        return self._extra

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for w in sorted(self._words):
            h.update(w.encode() + b"\n")
        return h.hexdigest()[:16]


def word_usage(user_texts: Iterable[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """Lower-case word form -> (distinct users who wrote it, occurrences)."""
    users_of: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for user_id, text in user_texts:
        for m in WORD.finditer(text):
            w = normalise_apostrophes(m.group(0).lower())
            users_of.setdefault(w, set()).add(user_id)
            counts[w] = counts.get(w, 0) + 1
    return {w: (len(users_of[w]), counts[w]) for w in users_of}
