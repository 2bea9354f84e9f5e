"""Core-term counting, contradictions and the head noun (tiny inline data, golden values)."""

from personalir.queries.terms import (
    AttributeVocabulary,
    core_multiset,
    count_terms,
    product_type,
    words,
)

CORE = ["Velvet Fret", "Red", "Metal", "Vintage", "USB"]


def test_words_normalise_case_hyphens_and_apostrophes():
    assert words("Velvet-Fret's RED, usb/XLR!") == ["velvet", "fret", "s", "red", "usb", "xlr"]


def test_count_terms_exact_once():
    text = "looking for a vintage red metal audio interface from Velvet Fret with USB"
    assert count_terms(text, CORE) == {t: 1 for t in CORE}


def test_count_terms_repeats_and_partial_matches():
    # "velvet" alone is not "Velvet Fret"; "red" twice is counted twice.
    text = "red velvet red metal usb vintage"
    counts = count_terms(text, CORE)
    assert counts == {"Velvet Fret": 0, "Red": 2, "Metal": 1, "Vintage": 1, "USB": 1}


def test_longest_term_claims_words_first():
    # "Heavy" inside "Extra Heavy" is not counted again when both are core terms.
    counts = count_terms("extra heavy picks, heavy duty", ["Heavy", "Extra Heavy"])
    assert counts == {"Extra Heavy": 1, "Heavy": 1}
    assert count_terms("extra heavy picks", ["Heavy", "Extra Heavy"]) == {
        "Heavy": 0,
        "Extra Heavy": 1,
    }


def test_core_multiset_is_order_free():
    a = core_multiset("Velvet Fret red metal vintage USB interface", CORE)
    b = core_multiset("a USB interface by velvet fret, metal, red and vintage", CORE)
    assert a == b and sum(a.values()) == 5


def test_contradictions_name_other_values_of_the_products_keys():
    vocab = AttributeVocabulary.from_products(
        [["Brand", "Color"], ["Brand", "Color"], ["Brand", "Color", "Size"]],
        [["Velvet Fret", "Red"], ["Kestrel", "Blue"], ["Harbor Tone", "Red Velvet", "Large"]],
    )
    keys, values = ["Brand", "Color"], ["Velvet Fret", "Red"]
    assert vocab.contradictions("velvet fret red strap", keys, values) == []
    found = vocab.contradictions("velvet fret blue strap like kestrel", keys, values)
    assert found == [("Brand", "kestrel"), ("Color", "blue")]
    # "Red Velvet" is another product's colour, but its words are this product's own values.
    assert vocab.contradictions("red velvet fret", keys, values) == []
    # Keys the product does not have are not checked ("Large" is a Size elsewhere).
    assert vocab.contradictions("large red velvet fret", keys, values) == []
    assert vocab.contradictions("blue", keys, values, keys=["Brand"]) == []
    # A value the product's own title names is not a contradiction of it.
    assert vocab.contradictions("blue velvet fret", keys, values, title="Blue Stage Strap") == []


def test_product_type_strips_brand_values_and_tail():
    values = ["Velvet Fret", "Red", "Metal", "Vintage", "USB", "XLR"]
    assert product_type("Velvet Fret USB Audio Interface for Home Recording, Red", values) == (
        "audio interface"
    )
    assert product_type("Kestrel Drumsticks, Black", ["Kestrel", "Black"]) == "drumsticks"
    assert product_type("Ember Empire - Xbox Series X", ["Ember Empire"]) == "item"
