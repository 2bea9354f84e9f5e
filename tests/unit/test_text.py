"""Sentence splitting and cleaning (the PQB reference rule: split after . ! ? + space)."""

import pytest

from personalir.data.text import clean_text, count_words, split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Great strings. Would buy again!", ["Great strings.", "Would buy again!"]),
        ("Is it loud? Yes!! Very.", ["Is it loud?", "Yes!!", "Very."]),
        ("No final stop here", ["No final stop here"]),
        ("Version 2.0 works.  Fine", ["Version 2.0 works.", "Fine"]),  # no split inside 2.0
        ("Line one.<br /><br />Line two.", ["Line one.", "Line two."]),
        ("   ", []),
        ("", []),
        ("Wow... really? ok", ["Wow...", "really?", "ok"]),
        ("Tom &amp; Jerry. Fun", ["Tom & Jerry.", "Fun"]),
        ("e.g.this stays", ["e.g.this stays"]),
    ],
)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_clean_text_strips_markup_and_spaces():
    assert clean_text("<p>Hello\n\tworld</p>") == "Hello world"


def test_count_words():
    assert count_words("It's a 10-string guitar!") == 6
