"""Sentence constructions of the sample world and the word lists that fill their slots.

Each construction is one syntactic pattern (passive, cleft, conditional, ...) with a few
lexical templates per polarity; all templates of a construction share its dependency shape, so
a user's mixture over constructions is a planted syntactic style that dependency/POS rules can
recover. Slots (``{part}``, ``{brand}``, ...) are filled from the reviewed product, so reviewers
of the same product share topic words while their syntax differs.

The tables are shared by every domain and live as package data: ``tables/constructions.yaml``
(the constructions) and ``tables/words.yaml`` (slot word lists, review titles, the coarse
part-of-speech lexicon the error injector uses to decide the context of a corrupted token,
and the names read as proper nouns). This module reads them once, when it is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files

from personalir.data.sample_world.datafile import Value, read_data_file

TABLES = files(__package__).joinpath("tables")


@dataclass(frozen=True)
class Construction:
    id: str
    description: str
    pos: tuple[str, ...]  # templates for positive sentences
    neg: tuple[str, ...]  # templates for negative sentences

    def templates(self, polarity: str) -> tuple[str, ...]:
        return self.pos if polarity == "pos" else self.neg


def _construction(value: Value) -> Construction:
    f = value.fields(("id", "description", "pos"), ("neg",))
    pos = f["pos"].texts(nonempty=True)
    neg = f["neg"].texts(nonempty=True) if "neg" in f else pos
    return Construction(f["id"].text(), f["description"].text(), pos, neg)


def _polar(value: Value) -> dict[str, tuple[str, ...]]:
    f = value.fields(("pos", "neg"))
    return {k: f[k].texts(nonempty=True) for k in ("pos", "neg")}


def _constructions(value: Value) -> tuple[Construction, ...]:
    out: list[Construction] = []
    for item in value.items(nonempty=True):
        construction = _construction(item)
        if construction.id in {c.id for c in out}:
            item.fail(f"construction {construction.id!r} appears twice")
        out.append(construction)
    return tuple(out)


_CONSTRUCTIONS = read_data_file(TABLES.joinpath("constructions.yaml")).fields(("constructions",))
CONSTRUCTIONS: tuple[Construction, ...] = _constructions(_CONSTRUCTIONS["constructions"])
CONSTRUCTION_IDS: tuple[str, ...] = tuple(c.id for c in CONSTRUCTIONS)

_WORDS = read_data_file(TABLES.joinpath("words.yaml")).fields(
    (
        "polar_slots",
        "plain_slots",
        "slot_aliases",
        "review_titles",
        "pos_classes",
        "base_pos",
        "proper_nouns",
    )
)
# Slot vocabularies. Keys "pos"/"neg" give polarity-dependent lists.
POLAR_SLOTS: dict[str, dict[str, tuple[str, ...]]] = {
    k: _polar(v) for k, v in _WORDS["polar_slots"].mapping().items()
}
PLAIN_SLOTS: dict[str, tuple[str, ...]] = dict(_WORDS["plain_slots"].text_lists(nonempty=True))
if set(POLAR_SLOTS) & set(PLAIN_SLOTS):
    _WORDS["plain_slots"].fail(
        f"{sorted(set(POLAR_SLOTS) & set(PLAIN_SLOTS))} are polar slots too; a slot is one or "
        "the other"
    )
# Slots that draw from another slot's words ("adj2" -> "adj").
SLOT_ALIASES: dict[str, str] = {k: v.text() for k, v in _WORDS["slot_aliases"].mapping().items()}


def with_aliases(slots: Mapping[str, object]) -> dict:
    """``slots`` plus each alias of a slot it holds (an alias it holds itself is kept)."""
    out = dict(slots)
    for alias, target in SLOT_ALIASES.items():
        if target in out and alias not in out:
            out[alias] = out[target]
    return out


POLAR_SLOTS = with_aliases(POLAR_SLOTS)
_TITLES = _WORDS["review_titles"].fields(("pos", "mid", "neg"))
# Review titles by rating (pos: 4-5 stars, mid: 3, neg: 1-2).
REVIEW_TITLES: dict[str, tuple[str, ...]] = {k: v.texts(nonempty=True) for k, v in _TITLES.items()}
POS_CLASSES: tuple[str, ...] = _WORDS["pos_classes"].texts(nonempty=True)


def _base_pos(value: Value) -> dict[str, str]:
    """word -> coarse POS; a word listed under two classes takes the first."""
    out: dict[str, str] = {}
    for pos, words in value.mapping().items():
        if pos not in POS_CLASSES:
            words.fail(f"{pos!r} is not one of pos_classes {list(POS_CLASSES)}")
        for word in words.text().split():
            out.setdefault(word, pos)
    return out


# Coarse POS of every literal word in the templates and slot lists (dominant reading).
BASE_POS: dict[str, str] = _base_pos(_WORDS["base_pos"])
# Names every domain's error injector reads as proper nouns, besides its own brands and names.
PROPER_NOUNS: tuple[str, ...] = _WORDS["proper_nouns"].texts()
