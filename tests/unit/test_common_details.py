"""The one parser of a product's ``details``: every shape it arrives in, and null values."""

import json

import pytest

from personalir.common.details import details_pairs

PAIRS = [("Brand", "Kestrel"), ("Color", "Black"), ("Material", "Maple")]


@pytest.mark.parametrize(
    "details",
    [
        dict(PAIRS),  # the meta record's JSON object
        PAIRS,  # to_pylist() of a Parquet map column
        [list(p) for p in PAIRS],  # pairs as two-element lists (a JSON round trip)
        [{"key": k, "value": v} for k, v in PAIRS],  # a map column seen through JSON
        json.dumps(dict(PAIRS)),  # a JSON string of the object ...
        json.dumps([{"key": k, "value": v} for k, v in PAIRS]),  # ... or of the entries
    ],
    ids=["dict", "pairs", "list_pairs", "key_value", "json_object", "json_key_value"],
)
def test_every_shape_gives_the_pairs_in_input_order(details):
    assert details_pairs(details) == PAIRS


def test_order_is_the_input_order_not_sorted():
    assert details_pairs({"b": "2", "a": "1"}) == [("b", "2"), ("a", "1")]
    assert details_pairs([("b", "2"), ("a", "1")]) == [("b", "2"), ("a", "1")]


@pytest.mark.parametrize("details", [None, "not json {", "null", "", [], {}])
def test_missing_or_unreadable_details_hold_no_pairs(details):
    assert details_pairs(details) == []


@pytest.mark.parametrize(
    "details",
    [
        {"Brand": "Kestrel", "Color": None},
        [("Brand", "Kestrel"), ("Color", None)],
        [{"key": "Brand", "value": "Kestrel"}, {"key": "Color", "value": None}],
        [{"key": "Brand", "value": "Kestrel"}, {"key": "Color"}],  # value absent
        '{"Brand": "Kestrel", "Color": null}',
    ],
    ids=["dict", "pairs", "key_value", "key_value_absent", "json"],
)
def test_a_null_value_becomes_the_empty_string_in_every_shape(details):
    assert details_pairs(details) == [("Brand", "Kestrel"), ("Color", "")]


def test_empty_values_are_kept_and_non_strings_are_stringified():
    assert details_pairs({"Size": "", "Count": 12, "Wireless": True}) == [
        ("Size", ""),
        ("Count", "12"),
        ("Wireless", "True"),
    ]
