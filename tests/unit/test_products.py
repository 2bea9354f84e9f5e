"""Core-term selection and product documents (rules of the PQB reference, stage 01)."""

import re

import pyarrow as pa
import pytest

from personalir.data.products import (
    DocumentTemplate,
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


# --- the document template ------------------------------------------------------------------

RECORD = {
    "title": "Capo",
    "store": "Kyser",
    "main_category": "Musical Instruments",
    "description": ["Quick-change capo"],
    "features": ["Spring loaded", "capo"],
    "categories": ["Accessories", "Capos"],
    "details": {"Brand": "Kyser", "Color": "Black", "Size": None},
}


def test_default_template_is_title_description_features_as_before():
    from personalir.common.config import validate_config

    rules = ProductRules.from_config(validate_config({})["data"]["products"])
    assert rules.document == DocumentTemplate()
    assert rules.document.as_dict() == {
        "fields": ["title", "description", "features"],
        "details": "{key}: {value}",
        "separator": " ",
        "terminator": ".",
    }
    # "capo" repeats the title (case-insensitive): dropped; details and store are not used
    expected = "Capo. Quick-change capo. Spring loaded."
    assert rules.document.render(RECORD, 2000) == expected
    assert build_document("Capo", ["Quick-change capo"], ["Spring loaded", "capo"], 2000) == (
        expected
    )
    assert rules.document.describe() == (
        "title + description + features (details are not part of the document), "
        "pieces joined by ' '"
    )


def test_template_with_details_lines_in_the_order_given():
    template = DocumentTemplate(
        fields=("details", "title", "categories"), separator="\n", terminator=""
    )
    # one line per details pair with a value (Size is null: no line), then title, categories
    assert template.render(RECORD, 2000) == ("Brand: Kyser\nColor: Black\nCapo\nAccessories\nCapos")
    custom = DocumentTemplate(fields=("title", "details"), details="{key} = {value}")
    assert custom.render(RECORD, 2000) == "Capo. Brand = Kyser. Color = Black."
    assert custom.describe() == (
        "title + details (details as '{key} = {value}'), pieces joined by ' '"
    )
    # cut at the last whitespace before the limit, a newline included
    assert template.render(RECORD, 20) == "Brand: Kyser\nColor:"


def test_product_table_uses_and_reports_the_template():
    meta = pa.table(
        {
            "parent_asin": ["A"],
            "title": ["Stroller"],
            "description": [["Light stroller"]],
            "features": [["Easy Fold"]],
            "store": ["Joovy"],
            "details": ['{"Color": "Grey"}'],
        }
    )
    template = DocumentTemplate(fields=("title", "store", "details"))
    table, report = build_product_table(meta, ProductRules(document=template))
    assert table.column("document").to_pylist() == ["Stroller. Joovy. Color: Grey."]
    assert report["document"] == template.as_dict()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fields": ("title", "reviews")}, "unknown field 'reviews'"),
        ({"fields": ()}, "none given"),
        ({"fields": ("title", "title")}, "a field is listed twice"),
        ({"details": "{name}: {value}"}, "use the placeholders {key} and {value} only"),
        ({"details": "{key"}, "use the placeholders {key} and {value} only"),
    ],
)
def test_bad_template_is_refused_with_what_is_allowed(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        DocumentTemplate(**kwargs)
