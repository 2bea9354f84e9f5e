"""Constrained injection: the minimality constraints on thousands of variants, determinism."""

from __future__ import annotations

import pandas as pd
import pytest
from rapidfuzz.distance import Levenshtein

from personalir.errors.inject import (
    CharacterRandomPolicy,
    Constraints,
    Injector,
    UniformPolicy,
    inject,
)
from personalir.errors.lexicon import HOMOPHONES, WORD, Lexicon
from personalir.errors.mechanisms import classify
from personalir.errors.profiles import ProfileParams, build_profiles
from tests.fixtures.edit_tables import edit_columns, word_columns

QUERIES = [
    ("Fender electric guitar with a maple neck and their gig bag", ["Fender", "maple"]),
    ("quiet studio microphone stand for podcasts", ["studio"]),
    ("Black nylon guitar strap that is comfortable", ["Black", "nylon"]),
    ("USB audio interface with two inputs", ["USB"]),
    ("Its a durable drum throne", []),
    ("cheap ukulele strings", ["ukulele", "strings", "cheap"]),
]


@pytest.fixture(scope="module")
def profiles():
    cols = edit_columns()
    rows = [
        ("swapper", i, True, "swap", "NOUN", "", "", "", "gutiar", "guitar", "R:SPELL")
        for i in range(6)
    ]
    rows += [
        ("typist", i, True, "keyboard", "ADJ", "", "", "", "quiwt", "quiet", "R:SPELL")
        for i in range(4)
    ]
    rows += [("typist", 9, True, "homophone", "PRON", "", "", "", "there", "their", "R:DET")]
    edits = pd.DataFrame(rows, columns=cols)
    words = pd.DataFrame(
        [
            (u, 0, "w", p, "", "", "")
            for u in ("swapper", "typist", "clean")
            for p in ("NOUN", "ADJ", "PRON", "VERB")
            for _ in range(20)
        ],
        columns=word_columns(),
    )
    return build_profiles(
        edits, words, ["swapper", "typist", "clean"], ProfileParams(0.1, 2.0, 50.0, ("pos",))
    )


@pytest.fixture(scope="module")
def injector():
    return Injector(reuse_misspelling_prob=0.8, core_terms="protect")


def _check(result, core, injector):
    strict = injector.lexicon
    core_words = {m.group(0).lower() for t in core for m in WORD.finditer(t)}
    assert result.clean != result.text or not result.edits
    touched = set()
    for e in result.edits:
        w, v = e.original.lower(), e.replacement.lower()
        assert len(e.original) >= 3
        assert Levenshtein.distance(w, v) <= 2
        assert abs(len(v) - len(w)) <= 1
        if e.mechanism == "homophone":
            assert v in HOMOPHONES[w]
        else:
            assert v not in strict, (w, v)
        assert classify(v, w) == e.mechanism
        assert w not in core_words
        assert e.word_index not in touched
        touched.add(e.word_index)
    # only the edited words changed
    rebuilt = result.clean
    for e in sorted(result.edits, key=lambda e: e.start, reverse=True):
        assert result.clean[e.start : e.end] == e.original
        rebuilt = rebuilt[: e.start] + e.replacement + rebuilt[e.end :]
    assert rebuilt == result.text


def test_constraints_hold_on_thousands_of_variants(profiles, injector):
    policies = [
        profiles["swapper"],
        profiles["typist"],
        profiles["clean"],
        profiles.global_profile,
        UniformPolicy(),
        CharacterRandomPolicy(),
    ]
    n = 0
    for qi, (q, core) in enumerate(QUERIES):
        for pol in policies:
            for seed in range(60):
                r = injector.inject(q, core, pol, n_edits=1 + seed % 2, seed=1000 * qi + seed)
                _check(r, core, injector)
                n += 1
    assert n == 2160  # thousands of variants, every constraint checked on each


def test_same_seed_same_variant_and_seeds_vary(profiles, injector):
    q, core = QUERIES[0]
    a = [injector.inject(q, core, profiles["typist"], n_edits=2, seed=s) for s in range(50)]
    b = [injector.inject(q, core, profiles["typist"], n_edits=2, seed=s) for s in range(50)]
    assert a == b
    assert len({r.text for r in a}) > 10
    fresh = Injector(reuse_misspelling_prob=0.8)
    assert [fresh.inject(q, core, profiles["typist"], n_edits=2, seed=s) for s in range(50)] == a


def test_profile_shapes_the_errors(profiles, injector):
    q, core = "guitar with a gig bag for travel", []
    swaps = [injector.inject(q, core, profiles["swapper"], n_edits=1, seed=s) for s in range(200)]
    mech = [r.edits[0].mechanism for r in swaps]
    assert mech.count("swap") > 150  # the swapper's habit
    own = [r.edits[0].replacement for r in swaps if r.edits[0].source == "misspelling"]
    assert own and set(own) == {"gutiar"}  # their own historical misspelling of "guitar"


def test_core_terms_policies_and_shortfall():
    q, core = "cheap ukulele strings", ["ukulele", "strings", "cheap"]
    prof = UniformPolicy()
    protect = Injector(core_terms="protect").inject(q, core, prof, n_edits=1, seed=1)
    assert protect.edits == () and protect.text == q and "no further word" in protect.shortfall
    prefer = Injector(core_terms="prefer_other").inject(q, core, prof, n_edits=2, seed=1)
    assert len(prefer.edits) == 2 and prefer.shortfall is None
    short = Injector().inject("an ox", [], prof, n_edits=1, seed=3)
    assert short.edits == () and short.shortfall


def test_module_level_inject_and_validation(profiles):
    r = inject("quiet studio microphone", [], profiles["typist"], n_edits=1, seed=7)
    assert r.to_json()["applied"] == 1
    with pytest.raises(ValueError, match="core_terms"):
        Injector(core_terms="sometimes")
    inj = Injector(
        constraints=Constraints(max_edit_distance=1, max_length_change=0, min_token_length=4),
        lexicon=Lexicon.strict(),
    )
    for s in range(100):
        for e in inj.inject(
            "quiet studio microphone", [], UniformPolicy(), n_edits=2, seed=s
        ).edits:
            assert Levenshtein.distance(e.original.lower(), e.replacement.lower()) <= 1
            assert len(e.original) == len(e.replacement) >= 4
