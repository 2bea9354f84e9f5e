"""The Amazon Reviews 2023 domains the paper studies, with the labels tables and figures print.

A domain is named everywhere by its Amazon Reviews 2023 category (``Baby_Products``); tables
and figures print a display label ("Baby Products") or, where columns are narrow, a short label
("Baby"). Keeping both here means every stage prints the same words for the same domain. A
domain not listed (a test world, a new category) is printed by its own name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Domain:
    name: str  # Amazon Reviews 2023 category, as in config and result paths
    display_label: str
    short_label: str


DOMAINS: dict[str, Domain] = {
    d.name: d
    for d in (
        Domain("Baby_Products", "Baby Products", "Baby"),
        Domain("Musical_Instruments", "Musical Instruments", "Music"),
        Domain("Video_Games", "Video Games", "Games"),
    )
}


def display_label(domain: str) -> str:
    """Full label of a domain; an unknown domain's name with underscores as spaces."""
    known = DOMAINS.get(domain)
    return known.display_label if known else domain.replace("_", " ")


def short_label(domain: str) -> str:
    """Short label of a domain (narrow table columns); an unknown domain's own name."""
    known = DOMAINS.get(domain)
    return known.short_label if known else domain
