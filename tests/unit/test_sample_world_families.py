"""The sample world's confusable catalogue: families, lookalikes, accessories and their knobs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from personalir.data.sample_world import build_world, meta_record
from personalir.data.sample_world.confusability import (
    OFF,
    ConfusabilityError,
    ConfusabilityParams,
)

SEED = 20251129
KNOBS = ConfusabilityParams(family_share=0.6, family_size=4)
IDENTIFIERS = {"Item model number", "Date First Available", "Unit Count"}
AXIS_KEYS = {"color": {"Color", "Color Name"}, "material": {"Material"}, "size": {"Size"}}


def _world(knobs=KNOBS, domain="Baby_Products", seed=SEED):
    return build_world(domain, seed=seed, scale=0.5, confusability=knobs)


def _families(world):
    out: dict[str, list] = {}
    for p in world.products:
        if p.family:
            out.setdefault(p.family, []).append(p)
    return out


@pytest.fixture(scope="module", params=["Baby_Products", "Musical_Instruments", "Video_Games"])
def world(request):
    return _world(domain=request.param)


def test_family_share_sets_the_number_of_family_products_and_size_is_kept(world):
    n = len(world.products)
    assert n == 150
    families = _families(world)
    assert len(families) == KNOBS.n_families(n) == int(150 * 0.6) // 6
    assert sum(len(m) for m in families.values()) <= len(families) * KNOBS.products_per_family
    roles = [p.family_role for m in families.values() for p in m]
    assert roles.count("founder") == len(families)
    assert roles.count("lookalike") == roles.count("accessory") == len(families)


def test_variants_share_brand_type_and_differ_only_in_the_configured_attributes(world):
    n_variants = 0
    for members in _families(world).values():
        founder = members[0]
        assert founder.family_role == "founder"
        combos = set()
        for v in (m for m in members if m.family_role == "variant"):
            n_variants += 1
            assert (v.brand, v.product_type, v.style) == (
                founder.brand,
                founder.product_type,
                founder.style,
            )
            differing = {
                a
                for a in ("color", "material", "size", "pack_count")
                if getattr(v, a) != getattr(founder, a)
            }
            assert 1 <= len(differing) <= 2
            assert differing <= set(KNOBS.differing_attributes)
            combos.add(tuple(getattr(v, a) for a in ("color", "material", "size", "pack_count")))
            allowed = IDENTIFIERS.union(*(AXIS_KEYS.get(a, set()) for a in differing))
            for key in v.details:  # a sparse copy lists fewer attributes
                if key not in allowed:
                    assert v.details.get(key) == founder.details.get(key), key
        assert len(combos) == sum(m.family_role == "variant" for m in members)  # no twins
    assert n_variants > 0


def test_only_the_listed_attributes_differ():
    world = _world(replace(KNOBS, differing_attributes=("pack_count",), max_differing=1))
    for members in _families(world).values():
        founder = members[0]
        for v in (m for m in members if m.family_role == "variant"):
            assert (v.color, v.material, v.size) == (founder.color, founder.material, founder.size)
            assert v.pack_count != founder.pack_count == 1
            assert v.details["Unit Count"] == f"{v.pack_count}.0 Count"


def test_variant_titles_are_near_duplicates_of_the_founders(world):
    for members in _families(world).values():
        founder = members[0]
        for v in (m for m in members if m.family_role == "variant"):
            title = founder.title
            for a in ("color", "material", "size"):
                if getattr(v, a) != getattr(founder, a) and getattr(founder, a) in title:
                    title = title.replace(getattr(founder, a), getattr(v, a))
            if v.pack_count and v.pack_count > 1:
                title += f", Pack of {v.pack_count}"
            assert v.title == title


def test_titles_are_drawn_afresh_without_near_duplicates():
    world = _world(replace(KNOBS, near_duplicate_titles=False))
    variants = [p for p in world.products if p.family_role == "variant"]
    founders = {p.parent_asin: p for p in world.products if p.family_role == "founder"}
    assert any(not v.title.startswith(founders[v.family].title) for v in variants)


def test_lookalikes_swap_the_brand_and_accessories_name_their_main_product(world):
    for members in _families(world).values():
        founder = members[0]
        for p in members:
            if p.family_role == "lookalike":
                assert p.brand != founder.brand and p.product_type == founder.product_type
                assert p.title == founder.title.replace(founder.brand, p.brand)
                assert founder.brand not in meta_record(p)["store"]
            if p.family_role == "accessory":
                assert p.accessory_for == founder.parent_asin
                assert p.product_type != founder.product_type
                assert f" for {founder.brand} " in p.title
                assert founder.brand in p.description[0] and founder.brand in p.features[0]
                assert p.details["Compatible Devices"].startswith(founder.brand)
                assert p.style == founder.style


def test_option_lists_name_every_colour_of_the_model(world):
    for members in _families(world).values():
        model = [m for m in members if m.family_role in ("founder", "variant")]
        if len(model) < 2 or not any(m.color or m.material or m.size for m in model):
            continue  # e.g. a game, whose variants differ in pack count only
        for m in model:
            assert m.features[-1].startswith("MORE OPTIONS:")
            for other in model:
                if other.color:
                    assert other.color in m.features[-1]


def test_family_members_get_reviewers_and_can_be_query_targets(world):
    reviewers: dict[str, set] = {}
    for r in world.reviews:
        reviewers.setdefault(r.parent_asin, set()).add(r.user_id)
    family = [p for p in world.products if p.family_role in ("founder", "variant")]
    assert sum(len(reviewers.get(p.parent_asin, ())) >= 2 for p in family) >= 0.6 * len(family)


def test_knob_off_gives_the_family_free_catalogue_whose_draws_families_keep():
    off, on = _world(OFF), _world(KNOBS)
    assert not any(p.family or p.family_role for p in off.products)
    assert len(off.products) == len(on.products)
    independent = [p for p in on.products if p.family is None]
    n = len(independent)
    assert n == len(on.products) - len(_families(on)) * KNOBS.products_per_family
    for a, b in zip(independent, off.products[:n], strict=True):
        rec_a, rec_b = meta_record(a), meta_record(b)
        for key in ("title", "features", "description", "store", "categories", "price"):
            assert rec_a[key] == rec_b[key]


def test_same_seed_same_catalogue_other_seed_differs():
    a, b, c = _world(), _world(), _world(seed=SEED + 1)
    assert [meta_record(p) for p in a.products] == [meta_record(p) for p in b.products]
    assert [p.title for p in a.products] != [p.title for p in c.products]


@pytest.mark.parametrize(
    ("section", "match"),
    [
        ({"differing_attributes": ["weight"]}, "unknown"),
        ({"family_share": 1.5}, r"\[0, 1\]"),
        ({"max_differing": 3}, "1 or 2"),
        ({"families": 3}, "unknown key"),
    ],
)
def test_bad_settings_are_rejected_naming_the_key(section, match):
    with pytest.raises(ConfusabilityError, match=match):
        ConfusabilityParams.from_config(section)


def test_library_default_is_the_configured_and_the_schema_default():
    from pathlib import Path

    from personalir.common.config import load_config, validate_config
    from personalir.data.sample_world import CONFUSABILITY

    root = Path(__file__).resolve().parents[2]
    configured = load_config(root / "config" / "config.yaml")["sample"]["confusability"]
    schema_default = validate_config({})["sample"]["confusability"]
    assert ConfusabilityParams.from_config(configured) == CONFUSABILITY
    assert ConfusabilityParams.from_config(schema_default) == CONFUSABILITY
