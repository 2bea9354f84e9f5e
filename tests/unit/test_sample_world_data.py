"""The sample world's data files: strict typed reading, file:line errors, the shipped domains."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from personalir.common.codedeps import package_data
from personalir.data.sample_world import DOMAINS
from personalir.data.sample_world.constructions import (
    BASE_POS,
    CONSTRUCTIONS,
    PLAIN_SLOTS,
    POLAR_SLOTS,
    PROPER_NOUNS,
)
from personalir.data.sample_world.datafile import DataFileError, read_data_file
from personalir.data.sample_world.domains import (
    UnknownDomain,
    domain_names,
    load_domain,
    read_domain_file,
)

# A domain file of the smallest kind the loader accepts (two types, each the other's accessory).
MINIMAL = """\
main_category: Garden
other_main_categories: [Tools & Home Improvement]
root_category: Patio, Lawn & Garden
brands: [Fernhill, Mossgate, Rootwise]
colors: [Green, Black]
styles: [Classic]
style: {key: Style, phrase: "{style} design", lowercase: true, in_title: suffix}
recipients: [wife]
activities: [gardens]
places: [yard]
persons: [a neighbor]
visitors: [neighbor]
generic_features: ["WHAT YOU GET: 1 {noun}"]
accessories:
  glove: [trowel]
  trowel: [glove]
types:
  - key: trowel
    noun: trowel
    title_noun: Garden Trowel
    categories: [Gardening, Hand Tools]
    price: [5, 2.5e1]
    weight_lb: [0.3, 0.9]
    parts: [blade, grip]
    uses: [planting]
    purposes: [plant bulbs]
    extra: {Blade Width: [2, 3], Rust Resistant: [Yes, No]}
  - key: glove
    noun: glove
    title_noun: Garden Gloves
    categories: [Gardening, Gloves]
    price: [4.0, 15.0]
    weight_lb: [0.1, 0.3]
    parts: [cuff]
    uses: [pruning]
    purposes: [keep hands clean]
    share: 0.5
"""


def _write(tmp_path, text, name="Garden"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_text_is_taken_as_written_and_numbers_parse_as_python_floats(tmp_path):
    spec = read_domain_file(_write(tmp_path, MINIMAL))
    trowel, glove = spec.types
    assert spec.name == "Garden" and spec.root_category == "Patio, Lawn & Garden"
    # YAML 1.1 would read 2, 3 as integers and Yes/No as booleans; 2.5e1 as a string.
    assert trowel.extra == (("Blade Width", ("2", "3")), ("Rust Resistant", ("Yes", "No")))
    assert trowel.price == (5.0, 25.0) and type(trowel.price[0]) is float
    assert glove.share == 0.5 and trowel.share == 1.0
    assert trowel.colors is None and trowel.materials == () and trowel.makers == ()
    assert spec.style_lowercase is True and spec.style_in_title == "suffix"
    assert spec.accessories == (("glove", ("trowel",)), ("trowel", ("glove",)))
    assert spec.type("glove") is glove


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("price: [5, 2.5e1]", 'price: ["5", 25]'), r":22: types\[0\].price\[0\]: .*quoted"),
        (("price: [5, 2.5e1]", "price: [5]"), r":22: types\[0\].price: expected 2 numbers"),
        (("price: [5, 2.5e1]", "price: [30, 5]"), r"types\[0\].price: expected 0 < low"),
        (("lowercase: true", "lowercase: yes"), r":7: style.lowercase: expected true or false"),
        (("in_title: suffix", "in_title: middle"), r":7: style: in_title must be one of"),
        (("places: [yard]", "places: []"), r":10: places: the list is empty"),
        (("places: [yard]", "places: yard"), r":10: places: expected a list, found a single"),
        (("colors: [Green, Black]", "colors: [Green, Black]\ncolors: [Red]"), r"'colors' .*twice"),
        (("visitors: [neighbor]", "visitor: [neighbor]"), r"missing key.*'visitors'.*"),
        (("    share: 0.5", "    shares: 0.5"), r"types\[1\]: unknown key\(s\) \['shares'\]"),
        (
            ('generic_features: ["WHAT YOU GET: 1 {noun}"]', "generic_features: [WHAT: 1]"),
            r":13: generic_features\[0\]: expected a single value, found a mapping",
        ),
        (("  glove: [trowel]\n", ""), r"accessories: at least two accessory types"),
        (("  trowel: [glove]", "  trowel: [rake]"), r"\['rake'\] are not product types"),
        (("brands: [Fernhill, Mossgate, Rootwise]", "brands: [Fernhill]"), r"three brands"),
        (('"{style} design"', '"{style} {look}"'), r":7: style.phrase: a \{placeholder\} other"),
        (("1 {noun}", "1 {size}"), r":13: generic_features\[0\]: a \{placeholder\} other"),
    ],
)
def test_a_bad_value_names_the_file_the_line_and_the_place(tmp_path, change, message):
    old, new = change
    assert old in MINIMAL
    path = _write(tmp_path, MINIMAL.replace(old, new))
    with pytest.raises(DataFileError, match=re.escape(str(path)) + ".*" + message):
        read_domain_file(path)


def test_makers_must_be_brands_and_a_domain_name_must_be_a_config_name(tmp_path):
    text = MINIMAL.replace("    share: 0.5", "    share: 0.5\n    makers: [Acme]")
    with pytest.raises(DataFileError, match=r"makers \['Acme'\] are not among"):
        read_domain_file(_write(tmp_path, text))
    with pytest.raises(DataFileError, match="must be a letter followed by"):
        read_domain_file(_write(tmp_path, MINIMAL, name="2nd_garden"))
    with pytest.raises(DataFileError, match="not valid YAML"):
        read_data_file(_write(tmp_path, "a: [b"))


def test_the_shipped_domains_are_the_files_of_the_package():
    assert DOMAINS == domain_names() == tuple(sorted(DOMAINS))
    assert {"Baby_Products", "Musical_Instruments", "Video_Games"} <= set(DOMAINS)
    baby = load_domain("Baby_Products")
    stroller = baby.type("stroller")
    assert stroller.price == (89.0, 449.0) and stroller.share == 1.3
    assert dict(stroller.extra)["Seating Capacity"] == ("1", "2")
    assert dict(baby.type("high_chair").extra)["Assembly Required"] == ("Yes", "No")
    assert baby.accessories[0] == ("car_seat_cover", ("stroller", "baby_carrier"))
    game = load_domain("Video_Games").type("game")
    assert game.makers[0] == "Moonlit Studios" and game.colors == ()
    assert [len(words) for words in game.name_parts] == [16, 16]
    assert dict(game.slots)["fault"] == ("lag", "crash", "stutter", "freeze")
    with pytest.raises(UnknownDomain, match="unknown domain 'Books'.*domains/Books.yaml"):
        load_domain("Books")


def test_the_shared_tables():
    assert len(CONSTRUCTIONS) == len({c.id for c in CONSTRUCTIONS}) == 47
    assert CONSTRUCTIONS[0].id == "copular_adjective"
    assert POLAR_SLOTS["adj2"] is POLAR_SLOTS["adj"]  # an alias shares its slot's words
    assert PLAIN_SLOTS["month"][0] == "January" and len(PLAIN_SLOTS["month"]) == 12
    # A word listed under two classes takes the first (FUNC before ADV ...).
    assert BASE_POS["the"] == "FUNC" and BASE_POS["really"] == "ADV"
    assert BASE_POS["buy"] == "VERB" and BASE_POS["price"] == "NOUN"
    assert PROPER_NOUNS[0] == "Moonlit Studios" and "Saga" in PROPER_NOUNS


def test_every_data_file_of_the_package_ships_and_is_code_of_the_rule():
    """pyproject's package-data globs match every data file of the package (so a wheel holds
    them, and personalir.common.codedeps counts them as code of the sample_world rule)."""
    repo = Path(__file__).resolve().parents[2]
    folder = repo / "src" / "personalir" / "data" / "sample_world"
    data = {
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    }
    assert {"Baby_Products.yaml", "constructions.yaml", "words.yaml"} <= {p.name for p in data}
    assert set(package_data("personalir.data.sample_world", repo)) == data
