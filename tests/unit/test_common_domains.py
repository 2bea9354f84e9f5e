"""Domain labels: the three paper domains print their fixed labels, others their own name."""

from __future__ import annotations

from personalir.common.domains import DOMAINS, display_label, short_label


def test_paper_domains_have_their_table_labels():
    assert list(DOMAINS) == ["Baby_Products", "Musical_Instruments", "Video_Games"]
    assert [short_label(d) for d in DOMAINS] == ["Baby", "Music", "Games"]
    assert [display_label(d) for d in DOMAINS] == [
        "Baby Products",
        "Musical Instruments",
        "Video Games",
    ]


def test_unknown_domains_fall_back_to_their_name():
    assert short_label("Sample_World") == "Sample_World"
    assert short_label("Average") == "Average"
    assert display_label("Sample_World") == "Sample World"


def test_a_config_domain_of_ones_own_gets_readable_labels():
    from personalir.common.config import validate_config

    (name,) = validate_config({"domains": ["My_Split"]})["domains"]
    assert display_label(name) == "My Split"  # captions and table blocks
    assert short_label(name) == "My_Split"  # narrow columns: the name itself
