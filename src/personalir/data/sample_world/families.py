"""Confusable catalogue structure: product families, other-brand lookalikes and accessories.

Real catalogues hold families of near-identical products: one model in several colours, sizes,
materials or pack counts, the same design sold under another brand, and accessories whose
titles name the product they fit ("Car Seat Cover for Graco Baby Stroller"). A query that names
a product's core terms therefore does not single it out. :func:`build_families` draws such
families on the world's ``families`` stream:

- a *founder*, drawn like any catalogue product;
- ``family_size - 1`` *variants*: copies of the founder that differ in one to
  ``max_differing`` of ``differing_attributes`` (``color``, ``size``, ``material``,
  ``pack_count``) and nowhere else but their identifiers (ASINs, model number), price,
  images and popularity; with ``near_duplicate_titles`` their title is the founder's with
  the differing values swapped, otherwise a freshly drawn title; with ``option_lists``
  the founder's and every variant's features end in one bullet naming every colour,
  material and size the model comes in (as real variant listings do);
- ``distractors_per_family`` *lookalikes*: the founder's design under another maker of its
  type (brand, store and manufacturer swapped everywhere);
- ``accessories`` *accessories*: products of an accessory type (the domain file's
  ``accessories``) in the founder's colour and style whose title, description, first feature and
  ``Compatible Devices`` detail name the founder's brand and product.

``family_share`` is the share of a domain's products that belong to families; they replace
independent products, so the catalogue keeps its size. With ``family_share: 0`` no family is
drawn and the catalogue is exactly the family-free one (the ``products`` stream is untouched).
The knobs are :class:`~personalir.data.sample_world.confusability.ConfusabilityParams`.
"""

from __future__ import annotations

import copy
import re
from dataclasses import replace

from personalir.data.sample_world.catalogue import (
    draw_images,
    draw_product,
    noun_text,
    product_title,
    unique_code,
)
from personalir.data.sample_world.confusability import ConfusabilityParams
from personalir.data.sample_world.domains import DomainSpec, ProductTypeSpec
from personalir.data.sample_world.model import Draw, GeneratorParams, Product

PACK_COUNTS = (2, 3, 4, 6, 12)


# Details keys every listing has beside its attributes (kept when a listing is sparse).
LISTING_KEYS = {
    "Item Weight",
    "Product Dimensions",
    "Item model number",
    "Manufacturer",
    "Is Discontinued By Manufacturer",
    "Date First Available",
    "Unit Count",
}


def _swap(text: str, old: str, new: str) -> str:
    """``old`` -> ``new`` as a whole word, in its written and its lower-case form."""
    for o, n in ((old, new), (old.lower(), new.lower())):
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(o)}(?![A-Za-z0-9])", lambda _m, n=n: n, text)
    return text


DETAIL_KEYS = {
    "brand": ("Brand", "Manufacturer"),
    "color": ("Color", "Color Name"),
    "material": ("Material",),
    "size": ("Size",),
}


def _swap_all(product: Product, attribute: str, old: str, new: str) -> None:
    """Swap a value in the texts and in the attribute's own details keys only."""
    product.title = _swap(product.title, old, new)
    product.features = [_swap(f, old, new) for f in product.features]
    product.description = [_swap(d, old, new) for d in product.description]
    keys = DETAIL_KEYS[attribute]
    product.details = {
        k: _swap(v, old, new) if k in keys else v for k, v in product.details.items()
    }
    product.store = _swap(product.store, old, new)
    product.videos = [{**v, "title": _swap(v["title"], old, new)} for v in product.videos]


def _model_number(brand: str, draw: Draw) -> str:
    initials = "".join(w[0] for w in brand.split()).upper()
    return f"{initials}-{int(draw.uniform(100, 9999))}"


def _pool(spec: DomainSpec, t: ProductTypeSpec, attribute: str) -> tuple:
    if attribute == "color":
        return spec.colors if t.colors is None else t.colors
    if attribute == "material":
        return t.materials
    if attribute == "size":
        return t.sizes
    return PACK_COUNTS


def _clone(
    founder: Product, role: str, draw: Draw, taken: set[str], params: GeneratorParams
) -> Product:
    """A copy of the founder with its own identifiers, images, popularity and price; as often
    as an independent product it lists only one attribute beside its brand (sparse)."""
    p = copy.deepcopy(founder)
    p.parent_asin = unique_code(draw, "B0", 10, taken)
    p.variant_asins = [p.parent_asin if draw.u() < 0.5 else unique_code(draw, "B0", 10, taken)]
    while len(p.variant_asins) < 3 and draw.u() < 0.3:
        p.variant_asins.append(unique_code(draw, "B0", 10, taken))
    p.family_role = role
    if "Item model number" in p.details:
        p.details["Item model number"] = _model_number(p.brand, draw)
    if p.price is not None:
        p.price = round(max(1.0, round(p.price * draw.uniform(0.85, 1.2))) - 0.01, 2)
    p.quality = round(min(4.9, max(2.6, p.quality + draw.uniform(-0.2, 0.2))), 3)
    p.popularity = round(float(draw.rng.lognormal(0.0, 0.6)), 4)
    p.images = draw_images(draw, 1 + int(draw.u() * 4))
    if draw.u() < params.sparse_product_share:  # as sparse as independent products
        attributes = [k for k in p.details if k not in LISTING_KEYS and k != "Brand"]
        drop = set(attributes[1:] if draw.u() < 0.5 else attributes)
        p.details = {k: v for k, v in p.details.items() if k not in drop}
    return p


def _variant_changes(
    spec: DomainSpec,
    t: ProductTypeSpec,
    founder: Product,
    knobs: ConfusabilityParams,
    draw: Draw,
    seen: set[tuple],
) -> dict:
    """Which attributes a variant changes and their new values (a combination not yet used)."""
    current = {
        "color": founder.color,
        "size": founder.size,
        "material": founder.material,
        "pack_count": founder.pack_count,
    }
    usable = [
        a
        for a in knobs.differing_attributes
        if current[a] is not None and len(_pool(spec, t, a)) >= 2
    ]
    changes: dict = {}
    for _ in range(12):
        if not usable:
            return {}
        k = min(len(usable), 1 + (knobs.max_differing == 2 and draw.u() < 0.5))
        changes = {}
        for a in draw.shuffle(usable)[:k]:
            options = [v for v in _pool(spec, t, a) if v != current[a]]
            changes[a] = draw.pick(options)
        key = tuple(sorted((a, str(v)) for a, v in changes.items()))
        if key not in seen:
            seen.add(key)
            return changes
    return changes


def _variant(
    spec: DomainSpec,
    t: ProductTypeSpec,
    founder: Product,
    changes: dict,
    knobs: ConfusabilityParams,
    draw: Draw,
    taken: set[str],
    params: GeneratorParams,
) -> Product:
    p = _clone(founder, "variant", draw, taken, params)
    for attribute in ("color", "material", "size"):
        if attribute in changes:
            _swap_all(p, attribute, getattr(founder, attribute), changes[attribute])
            setattr(p, attribute, changes[attribute])
    if "pack_count" in changes:
        n = changes["pack_count"]
        p.pack_count = n
        p.details["Unit Count"] = f"{n}.0 Count"
        p.title = f"{p.title}, Pack of {n}"
        if p.price is not None:
            p.price = round(max(1.0, round(p.price * 0.85 * n)) - 0.01, 2)
    if not knobs.near_duplicate_titles:
        attrs = {
            "brand": p.brand,
            "color": p.color,
            "material": p.material,
            "style": p.style,
            "size": p.size,
            "name": p.name,
            "details": p.details,
        }
        p.title = product_title(spec, t, attrs, draw)
        if p.pack_count and p.pack_count > 1:
            p.title = f"{p.title}, Pack of {p.pack_count}"
    return p


def _lookalike(
    founder: Product, brand: str, draw: Draw, taken: set[str], params: GeneratorParams
) -> Product:
    p = _clone(founder, "lookalike", draw, taken, params)
    _swap_all(p, "brand", founder.brand, brand)
    p.brand = brand
    if "Item model number" in p.details:
        p.details["Item model number"] = _model_number(brand, draw)
    return p


def _accessory(
    spec: DomainSpec,
    founder: Product,
    founder_t: ProductTypeSpec,
    draw: Draw,
    params: GeneratorParams,
    makers: dict[str, list[str]],
    brand_weight: dict[str, float],
    taken: set[str],
) -> Product:
    table = spec.accessories
    keys = [k for k, fits in table if founder.product_type in fits] or [
        k for k, _ in table if k != founder.product_type
    ]
    acc_t = spec.type(draw.pick(keys))
    colors = spec.colors if acc_t.colors is None else acc_t.colors
    fixed: dict = {"style": founder.style}
    if colors and founder.color:
        fixed["color"] = founder.color
    p = draw_product(
        spec, draw, params, makers, brand_weight, taken, type_key=acc_t.key, fixed=fixed
    )
    target = founder.name or founder_t.title_noun
    p.title = f"{p.brand} {acc_t.title_noun} for {founder.brand} {target}"
    if p.color:
        p.title += f", {p.color}"
    fit = f"Made for the {founder.brand} {founder.name or noun_text(founder_t)}"
    if founder.material:
        fit += f" in {founder.material.lower()}"
    p.description = [f"{fit}, {founder.style} {spec.style_key.lower()}.", *p.description]
    p.features = [f"PERFECT FIT: {fit}", *p.features]
    details = {}
    for key, value in p.details.items():
        if key == "Item Weight":
            details["Compatible Devices"] = f"{founder.brand} {noun_text(founder_t).title()}"
        details[key] = value
    p.details = details
    p.family_role = "accessory"
    p.accessory_for = founder.parent_asin
    return p


def _list_options(members: list[Product]) -> None:
    """Every model's feature list names the colours, materials and sizes the family comes in."""
    model = [m for m in members if m.family_role in ("founder", "variant")]
    options: list[str] = []
    for attribute in ("color", "material", "size"):
        for m in model:
            value = getattr(m, attribute)
            if value and value not in options:
                options.append(value)
    if len(model) < 2 or not options:
        return
    bullet = "MORE OPTIONS: Also available in " + ", ".join(options)
    for m in model:
        m.features = [*m.features, bullet]


def build_families(
    spec: DomainSpec,
    n_families: int,
    knobs: ConfusabilityParams,
    draw: Draw,
    params: GeneratorParams,
    makers: dict[str, list[str]],
    brand_weight: dict[str, float],
    taken: set[str],
) -> list[Product]:
    """``n_families`` families, each founder followed by its variants, lookalikes, accessories."""
    out: list[Product] = []
    types = {t.key: t for t in spec.types}
    for _ in range(n_families):
        # The founder is never sparse: each copy is, on its own draw (see ``_clone``).
        dense = replace(params, sparse_product_share=0.0)
        founder = draw_product(spec, draw, dense, makers, brand_weight, taken)
        t = types[founder.product_type]
        founder.family = founder.parent_asin
        founder.family_role = "founder"
        if "pack_count" in knobs.differing_attributes:
            founder.pack_count = 1
        members = [founder]
        seen: set[tuple] = set()
        for _ in range(knobs.family_size - 1):
            changes = _variant_changes(spec, t, founder, knobs, draw, seen)
            if changes:
                members.append(_variant(spec, t, founder, changes, knobs, draw, taken, params))
        rivals = [b for b in makers[t.key] if b != founder.brand] or [
            b for b in spec.brands if b != founder.brand
        ]
        for _ in range(knobs.distractors_per_family):
            members.append(_lookalike(founder, draw.pick(rivals), draw, taken, params))
        for _ in range(knobs.accessories):
            members.append(_accessory(spec, founder, t, draw, params, makers, brand_weight, taken))
        if knobs.option_lists:
            _list_options(members)
        for m in members:
            m.family = founder.parent_asin
        out.extend(members)
    return out
