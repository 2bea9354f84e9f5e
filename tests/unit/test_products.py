"""Core-term selection and product documents (rules of the PQB reference, stage 01)."""

import pyarrow as pa

from personalir.data.products import (
    ProductRules,
    ValueAudit,
    build_document,
    build_product_table,
    select_attributes,
    value_rejection,
)

RULES = ProductRules(
    n_core_terms=5,
    min_attributes=5,
    max_value_words=3,
    drop_keys=("Country of Origin", "Item Weight"),
    max_doc_chars=80,
)


def test_value_rejection_reasons():
    assert value_rejection("", 3) == "empty"
    assert value_rejection("12 inch", 3) == "has_digit"
    assert value_rejection("a very long value here", 3) == "too_many_words"
    assert value_rejection("Yes", 3) == "yes_no"
    assert value_rejection("Walnut Brown", 3) is None


def test_brand_first_then_details_then_features_dedup_and_drop():
    details = {
        "Color": "Black",
        "Country of Origin": "China",
        "Brand": "Fender",
        "Material": "black",
        "Item Weight": "2 pounds",
        "Style": "Vintage",
    }
    audit = ValueAudit()
    attrs = select_attributes(
        details, None, ["Nickel Wound", "Fits all guitars and basses"], RULES, audit
    )
    assert attrs == [
        ("Brand", "Fender"),
        ("Color", "Black"),
        ("Style", "Vintage"),
        ("Feature", "Nickel Wound"),
    ]
    assert audit.counts == {"dropped_key": 2, "duplicate": 1, "too_many_words": 1}


def test_store_is_brand_fallback_and_details_shapes():
    as_pairs = [("Color", "Red")]
    assert select_attributes(as_pairs, "Acme", [], RULES)[0] == ("Brand", "Acme")
    as_json = '{"Color": "Red"}'
    assert select_attributes(as_json, None, [], RULES) == [("Color", "Red")]
    as_structs = [{"key": "Color", "value": "Red"}]
    assert select_attributes(as_structs, None, [], RULES) == [("Color", "Red")]


def test_document_dedup_and_cut_at_word():
    doc = build_document(
        "Capo",
        ["Quick-change capo", "Quick-change capo"],
        ["Spring loaded", "Fits electric and acoustic guitars easily"],
        60,
    )
    assert doc.startswith("Capo. Quick-change capo. Spring loaded.")
    assert len(doc) <= 60 and not doc.endswith(" ")
    assert doc.count("Quick-change capo") == 1


def test_product_table_counts_exclusions():
    meta = pa.table(
        {
            "parent_asin": ["A", "B"],
            "title": ["Stroller", "Bib"],
            "main_category": ["Baby", "Baby"],
            "description": [["Light stroller"], []],
            "features": [["Easy Fold"], []],
            "store": ["Joovy", None],
            "details": [
                '{"Color": "Grey", "Material": "Aluminium", "Style": "Compact", '
                '"Age Range (Description)": "Infant"}',
                '{"Color": "Blue"}',
            ],
        }
    )
    table, report = build_product_table(meta, RULES)
    rows = table.to_pylist()
    assert rows[0]["eligible"] and rows[0]["core_terms"] == [
        "Joovy",
        "Grey",
        "Aluminium",
        "Compact",
        "Infant",
    ]
    assert not rows[1]["eligible"] and rows[1]["core_terms"] == []
    assert report["products"] == 2 and report["excluded_too_few_attributes"] == 1


def test_a_null_value_in_the_key_value_shape_is_empty_not_the_string_none():
    audit = ValueAudit()
    as_structs = [{"key": "Brand", "value": "Kestrel"}, {"key": "Color", "value": None}]
    kept = select_attributes(as_structs, None, None, RULES, audit)
    assert kept == [("Brand", "Kestrel")]
    assert audit.counts["empty"] == 1  # the null value is "" (rejected as empty), never "None"
