"""Mechanism classification and the variants injection draws from (inline golden cases)."""

from __future__ import annotations

import pytest

from personalir.errors.lexicon import (
    HOMOPHONES,
    QWERTY_NEIGHBOURS,
    Lexicon,
    are_homophones,
    word_usage,
)
from personalir.errors.mechanisms import MECHANISM_NAMES, MECHANISMS, classify, mechanism


@pytest.mark.parametrize(
    ("written", "correct", "expected"),
    [
        ("guitsr", "guitar", "keyboard"),  # s is next to a
        ("gxitar", "guitar", "other"),  # x is not next to u
        ("teh", "the", "swap"),
        ("tonne", "tone", "repetition"),
        ("soound", "sound", "repetition"),
        ("strasp", "strap", "insertion"),
        ("sond", "sound", "deletion"),
        ("there", "their", "homophone"),
        ("It's", "its", "homophone"),
        ("dont", "don't", "other"),  # a missing apostrophe is not a letter deletion
        ("gitr", "guitar", "other"),  # two deletions
        ("The", "the", None),  # case only
    ],
)
def test_classify_golden(written, correct, expected):
    assert classify(written, correct) == expected


def test_qwerty_neighbours_are_symmetric_and_staggered():
    assert QWERTY_NEIGHBOURS["g"] == frozenset("fhtybv")
    assert QWERTY_NEIGHBOURS["q"] == frozenset("wa")  # half-key stagger: q sits over a
    for key, near in QWERTY_NEIGHBOURS.items():
        for other in near:
            assert key in QWERTY_NEIGHBOURS[other]


def test_homophones_are_symmetric():
    for word, others in HOMOPHONES.items():
        for o in others:
            assert word in HOMOPHONES[o]
    assert are_homophones("Their", "they're")
    assert not are_homophones("guitar", "guitsr")


def test_registry_holds_the_seven_mechanisms():
    assert sorted(MECHANISM_NAMES) == MECHANISMS.names()
    with pytest.raises(KeyError, match="unknown error mechanism"):
        mechanism("teleport")


@pytest.mark.parametrize("word", ["guitar", "sound", "the", "strap", "their", "committee", "amp"])
def test_every_non_word_variant_is_classified_as_its_mechanism(word):
    """Injection and profiles speak the same language: classify(variant) == its mechanism."""
    strict = Lexicon.strict()
    for name in MECHANISM_NAMES:
        for v in mechanism(name).variants(word):
            if name == "homophone" or v not in strict:
                assert classify(v, word) == name, (name, word, v)


def test_lexicons_nest_and_domain_usage_counts_users():
    detection, strict = Lexicon.detection(), Lexicon.strict()
    assert "guitar" in detection and "guitsr" not in strict
    assert "th" in strict and "th" not in detection  # Hunspell's two-letter forms
    assert len(detection) < len(strict)
    usage = word_usage([("u1", "A fretboard."), ("u2", "the Fretboard"), ("u2", "fretboard")])
    assert usage["fretboard"] == (2, 3)
