"""The construction grammar keeps every core term exactly once in every construction."""

import itertools

import numpy as np
import pytest

from personalir.queries.grammar import (
    TEMPLATES,
    family_of,
    grammar_candidates,
    realise,
    split_brand,
)
from personalir.queries.terms import count_terms

PRODUCTS = [
    (
        ["Brand", "Color", "Material", "Style Name", "Connectivity Technology"],
        ["Velvet Fret", "Red", "Metal", "Vintage", "USB"],
        "audio interface",
    ),
    (
        ["Brand", "Style", "Color", "Age Range (Description)", "Special Feature"],
        ["Little Lark", "Classic", "Lavender", "6-18 Months", "Waterproof"],
        "baby bib",
    ),
    (
        ["Material", "Brand", "Hardware Platform", "Color", "Edition"],
        ["ABS Plastic", "Arcbolt", "Xbox One", "White", "Deluxe"],
        "console cooling fan",
    ),
]


@pytest.mark.parametrize("keys,values,head", PRODUCTS)
def test_every_template_and_order_keeps_each_core_term_once(keys, values, head):
    brand, attrs = split_brand(keys, values)
    n_texts = 0
    for template in TEMPLATES:
        for order in itertools.permutations(attrs):
            text = realise(template, brand, head, list(order))
            if not text:
                continue
            n_texts += 1
            assert count_terms(text, values) == {v: 1 for v in values}, (template.id, text)
    assert n_texts > 10 * len(TEMPLATES)


def test_families_and_brand():
    assert family_of("Color Name") == "color"
    assert family_of("Tip Material") == "material"
    assert family_of("Hardware Platform") == "purpose"
    assert family_of("Age Range (Description)") == "age"
    assert family_of("Connectivity Technology") == "other"
    assert split_brand(["Color", "Brand"], ["Red", "Kestrel"]) == ("Kestrel", [("Color", "Red")])
    # No brand among the core terms: the first term plays its part.
    assert split_brand(["Color", "Size"], ["Red", "Large"]) == ("Red", [("Size", "Large")])


def test_realise_golden():
    t = next(t for t in TEMPLATES if t.id == "looking_for")
    text = realise(
        t,
        "Velvet Fret",
        "audio interface",
        [
            ("Color", "Red"),
            ("Style Name", "Vintage"),
            ("Material", "Metal"),
            ("Connectivity Technology", "USB"),
        ],
    )
    # Prenominal modifiers in English order (style before colour), the rest as PPs.
    assert text == (
        "looking for a vintage red audio interface from Velvet Fret made of metal and with USB"
    )


def test_candidates_are_distinct_and_seeded():
    keys, values, head = PRODUCTS[0]
    a = grammar_candidates(keys, values, head, 30, np.random.default_rng(3))
    b = grammar_candidates(keys, values, head, 30, np.random.default_rng(3))
    c = grammar_candidates(keys, values, head, 30, np.random.default_rng(4))
    assert a == b and a != c
    assert len(a) == 30 and len({x["text"].lower() for x in a}) == 30
    assert len({x["detail"]["template"] for x in a}) > 10
