"""The ``symspell`` GEC backend: a spelling corrector for non-words.

symspellpy and its packaged English frequency dictionary. The packaged tagger cannot fix
misspellings at all (its 213 tags only replace words by a fixed list of confusables and verb
forms), so this backend is what makes character-level errors visible; its recall gain is
measured in docs/errors.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from functools import cache

from personalir.errors.gec.base import (
    GEC_BACKENDS,
    GECBackend,
    GECError,
    json_hash,
    match_case,
    package_version,
)
from personalir.errors.lexicon import WORD, Lexicon, normalise_apostrophes, word_usage


@cache
def _symspell(max_edit_distance: int):
    import importlib.resources

    from symspellpy import SymSpell

    sym = SymSpell(max_dictionary_edit_distance=max_edit_distance, prefix_length=7)
    path = importlib.resources.files("symspellpy") / "frequency_dictionary_en_82_765.txt"
    if not sym.load_dictionary(str(path), term_index=0, count_index=1):
        raise GECError(f"symspellpy could not load its dictionary {path}")
    return sym


_INFLECTIONS = ("ing", "ers", "es", "ed", "er", "ly", "s", "d", "r", "y")


#: Web count (symspellpy dictionary) above which a word is function-word frequent ("the",
#: "to", "on", "my", "more"): a run-together pair needs one (compounds such as "soundhole",
#: "stompbox", "flatwound" join two content words and are jargon, not a missing space).
_FUNCTION_WORD_COUNT = 1_000_000_000


def _split_part(part: str, sym) -> bool:
    """A half of a run-together pair: a dictionary word of 3+ letters, or a very frequent
    short one ("a", "on", "to"; not "gr")."""
    count = sym.words.get(part, 0)
    return count > 0 and (len(part) >= 3 or count >= 100_000_000)


@cache
def _strict_lexicon() -> Lexicon:
    return Lexicon.strict()


# A word not glued to digits ("5mm", "mp3" are not misspellings).
_SPELL_TOKEN = re.compile(r"(?<![0-9_])" + WORD.pattern + r"(?![0-9_])")


@GEC_BACKENDS.register("symspell")
class SymSpellBackend(GECBackend):
    """Replace non-words by the most frequent dictionary word within the edit distance.

    A token is left alone when it is in the lexicon or a regular inflection of a lexicon word
    ("preamps"), in the domain vocabulary (see :meth:`prepare`), contains an apostrophe, is an
    acronym (all capitals) or has inner capitals (brand names: "PreSonus", "DiMarzio"), or is
    shorter than ``min_word_length``. Before suggesting a word, two repairs are tried: a
    missing apostrophe ("thats" -> "that's", any form of the strict lexicon) and two words run
    together ("onthe" -> "on the"). A suggestion must be a word this domain's writers use
    at least ``min_corpus_support`` times and at least as often as the token itself: a typo is
    rarer than the word it misspells in the same corpus. On the real reviews this stops most
    "corrections" of jargon and brand names ("xenyx" -> "kenya", "radiused" -> "raised").
    """

    name = "symspell"

    def __init__(self, params: dict, *, threads: int = 1, lexicon: Lexicon | None = None):
        super().__init__(params, threads=threads)
        self.base_lexicon = lexicon or Lexicon.detection()
        self.lexicon = self.base_lexicon
        self.domain_words: set[str] = set()
        self.corpus_counts: dict[str, int] = {}
        self.counters = {
            "tokens_checked": 0,
            "tokens_unknown": 0,
            "tokens_corrected": 0,
            "apostrophes_restored": 0,
            "words_split": 0,
            "domain_vocabulary": 0,
            "domain_forms_judged_typos": 0,
        }

    def prepare(self, corpus: Sequence[tuple[str, str]]) -> None:
        """Domain vocabulary: forms written by >= ``domain_min_users`` users, unless a known
        word one edit away is ``domain_typo_ratio`` times more frequent in the same corpus (a
        misspelling many people make, e.g. "teh", stays a misspelling)."""
        from symspellpy import Verbosity

        usage = word_usage(corpus)
        self.corpus_counts = {w: n for w, (_, n) in usage.items()}
        sym = _symspell(self.params["max_edit_distance"])
        vocab, typos = set(), 0
        for word, (n_users, n_occ) in usage.items():
            if n_users < self.params["domain_min_users"] or word in self.base_lexicon:
                continue
            near = sym.lookup(word, Verbosity.CLOSEST, max_edit_distance=1)
            best = max((usage.get(s.term, (0, 0))[1] for s in near if s.term != word), default=0)
            if best >= self.params["domain_typo_ratio"] * n_occ:
                typos += 1
            else:
                vocab.add(word)
        self.domain_words = vocab
        self.lexicon = self.base_lexicon.with_words(vocab)
        self.counters["domain_vocabulary"] = len(vocab)
        self.counters["domain_forms_judged_typos"] = typos

    def fingerprint(self) -> str:
        counts = hashlib.sha256(json.dumps(sorted(self.corpus_counts.items())).encode()).hexdigest()
        return json_hash(
            {
                "backend": self.name,
                "symspellpy": package_version("symspellpy"),
                "params": self.params,
                "lexicon": self.lexicon.fingerprint(),
                "corpus_counts": counts,
            }
        )

    def _known(self, word: str) -> bool:
        """In the lexicon, or a regular inflection of a lexicon word ("preamps", "phaser",
        "boomy"). A suffix that repeats the stem's last letter ("guitarr", "strapss") is a
        doubled letter, not an inflection."""
        if word in self.lexicon:
            return True
        if word.endswith("in") and word + "g" in self.lexicon:
            return True  # a dropped g ("rockin", "pickin") is register, not a slip
        for suffix in _INFLECTIONS:
            stem = word[: -len(suffix)]
            if (
                word.endswith(suffix)
                and len(stem) >= 3
                and stem[-1] != suffix[0]
                and (suffix not in ("r", "d") or stem.endswith("e"))
                and stem in self.lexicon
            ):
                return True
        return False

    def _fix(self, token: str, sentence_initial: bool = True) -> str | None:
        from symspellpy import Verbosity

        lower = token.lower()
        if (
            len(token) < self.params["min_word_length"]
            or "'" in normalise_apostrophes(token)
            or (len(token) > 1 and token.isupper())
            or any(ch.isupper() for ch in token[1:])
            or self._known(lower)
        ):
            return None
        self.counters["tokens_unknown"] += 1
        # A contraction written without its apostrophe ("dont", "thats", "im").
        for i in range(1, len(lower)):
            form = lower[:i] + "'" + lower[i:]
            if form in _strict_lexicon():
                self.counters["apostrophes_restored"] += 1
                return "I" + form[1:] if lower.startswith("i'") else match_case(token, form)
        support = self.params["min_corpus_support"]
        own = self.corpus_counts.get(lower, 0)

        def supported(term: str) -> bool:
            return support == 0 or self.corpus_counts.get(term, 0) >= max(support, own)

        sym = _symspell(self.params["max_edit_distance"])

        def suggestions(distance: int) -> list:
            return [
                s
                for s in sym.lookup(lower, Verbosity.CLOSEST, max_edit_distance=distance)
                if s.count >= self.params["min_suggestion_count"]
                and s.term != lower
                and supported(s.term)
            ]

        # One edit explains a typo better than a missing space, which explains it better than
        # two edits ("grat" -> "great", "onthe" -> "on the", "beasue" -> "because").
        found = suggestions(1)
        # A capitalised word inside a sentence is a name ("Fishman", "Nickelback"): never split.
        if not found and (sentence_initial or not token[:1].isupper()):
            splits = [
                (lower[:i], lower[i:])
                for i in range(1, len(lower))
                if _split_part(lower[:i], sym)
                and _split_part(lower[i:], sym)
                and max(sym.words[lower[:i]], sym.words[lower[i:]]) >= _FUNCTION_WORD_COUNT
                and supported(lower[:i])
                and supported(lower[i:])
            ]
            if splits:
                left, right = max(
                    splits,
                    key=lambda p: (
                        min(self.corpus_counts.get(p[0], 0), self.corpus_counts.get(p[1], 0)),
                        p,
                    ),
                )
                self.counters["words_split"] += 1
                return match_case(token, left) + " " + right
            if self.params["max_edit_distance"] > 1:
                found = suggestions(self.params["max_edit_distance"])
        if not found:
            return None
        # Among the closest words, the one this domain's writers use most, then the most
        # frequent on the web: "das" is "days" in reviews, not the far more common "as".
        best = max(found, key=lambda s: (self.corpus_counts.get(s.term, 0), s.count, s.term))
        return match_case(token, best.term)

    def correct(self, sentences: list[str]) -> list[str]:
        out = []
        for sentence in sentences:
            pieces, last = [], 0
            for m in _SPELL_TOKEN.finditer(sentence):
                self.counters["tokens_checked"] += 1
                fix = self._fix(
                    m.group(0),
                    sentence_initial=not any(ch.isalpha() for ch in sentence[: m.start()]),
                )
                if fix is not None:
                    self.counters["tokens_corrected"] += 1
                    pieces.append(sentence[last : m.start()])
                    pieces.append(fix)
                    last = m.end()
            pieces.append(sentence[last:])
            out.append("".join(pieces))
        return out
