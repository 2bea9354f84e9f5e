"""The sample world's catalogue: brands per product type, details, titles, whole products.

Draws every product of one domain from its domain spec
(:class:`~personalir.data.sample_world.domains.DomainSpec`) on the ``products`` stream and,
once the reviews exist, fills what depends on them (rating summary and first-available date)
from the ``catalogue`` stream.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from personalir.data.sample_world.domains import DomainSpec, ProductTypeSpec
from personalir.data.sample_world.model import (
    ALNUM,
    IMAGE_HOST,
    MS_PER_DAY,
    T_CATALOG,
    T_END,
    T_FIRST,
    Draw,
    GeneratorParams,
    Product,
    Review,
    cumulative,
)


def unique_code(draw: Draw, prefix: str, length: int, taken: set[str]) -> str:
    """A code of ``length`` characters starting with ``prefix``, not in ``taken`` (added)."""
    while True:
        code = prefix + "".join(draw.pick(ALNUM) for _ in range(length - len(prefix)))
        if code not in taken:
            taken.add(code)
            return code


def _date_text(ms: int) -> str:
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return f"{dt:%B} {dt.day}, {dt.year}"


def _brand_catalogue(spec: DomainSpec, draw: Draw) -> tuple[dict[str, list[str]], dict]:
    """Which brands make which product types, and each brand's market weight.

    A type that lists its ``makers`` draws them from that list; every other type draws from
    the domain's brands that no type reserves that way."""
    order = draw.shuffle(spec.brands)
    weight = {b: 1.0 / (rank + 2) ** 0.6 for rank, b in enumerate(order)}
    reserved = {b for t in spec.types for b in t.makers}
    makers = {}
    for t in spec.types:
        pool = list(t.makers) if t.makers else [b for b in spec.brands if b not in reserved]
        chosen = [b for b in pool if draw.u() < 0.5]
        if len(chosen) < 3:
            chosen = draw.shuffle(pool)[:3]
        makers[t.key] = sorted(chosen, key=pool.index)
    return makers, weight


def _details(
    spec: DomainSpec, t: ProductTypeSpec, p: dict, draw: Draw, params: GeneratorParams
) -> dict[str, str]:
    core: list[tuple[str, str]] = [("Brand", p["brand"])]
    if p["color"]:
        core.append(("Color", p["color"]))
    if p["material"]:
        material = p["material"]
        if draw.u() < 0.05:  # a long value the core-term rule must drop
            material = f"{material} and Polyester Blend Fabric"
        core.append(("Material", material))
    core.append((spec.style_key, p["style"]))
    keys = {k for k, _ in t.extra}
    extra = t.extra + tuple(kv for kv in spec.common_extra if kv[0] not in keys)
    for key, values in extra:
        if draw.u() < 0.9:
            core.append((key, draw.pick(values)))
    if p["size"]:
        core.append(("Size", p["size"]))
    if p["color"] and draw.u() < 0.1:  # duplicate value under another key
        core.append(("Color Name", p["color"]))
    if draw.u() < params.sparse_product_share:
        core = core[:1] + ([core[1]] if len(core) > 1 and draw.u() < 0.5 else [])
    core = draw.shuffle(core) if draw.u() < 0.6 else core
    details = dict(core)
    weight = draw.uniform(*t.weight_lb)
    details["Item Weight"] = f"{weight * 16:.1f} ounces" if weight < 1 else f"{weight:.1f} pounds"
    if draw.u() < 0.7:
        side = 3.0 + 7.0 * weight ** (1 / 3)  # bigger for heavier products
        dims = sorted((round(side * draw.uniform(0.3, 1.6), 1) for _ in range(3)), reverse=True)
        details["Product Dimensions"] = " x ".join(f"{d:g}" for d in dims) + " inches"
    if draw.u() < 0.6:
        initials = "".join(w[0] for w in p["brand"].split()).upper()
        details["Item model number"] = f"{initials}-{int(draw.uniform(100, 9999))}"
    details["Manufacturer"] = p["brand"]
    if draw.u() < 0.5:
        details["Is Discontinued By Manufacturer"] = "No"
    details["Date First Available"] = ""  # filled once review times are known
    return details


def product_title(spec: DomainSpec, t: ProductTypeSpec, p: dict, draw: Draw) -> str:
    if p["name"]:
        edition = p["details"].get("Edition", "Standard")
        if edition != "Standard" and draw.u() < 0.6:
            return f"{p['name']}: {edition} Edition - {p['style']}"
        return f"{p['name']} - {p['style']}"
    words = [p["brand"]]
    if p["material"] and draw.u() < 0.4:
        words.append(p["material"])
    words.append(t.title_noun)
    title = " ".join(words)
    if spec.style_in_title == "for" and draw.u() < 0.7:
        title += f" for {p['style']}"
    elif draw.u() < 0.3:
        title += f" for {draw.pick(t.uses).title()}"
    if spec.style_in_title == "suffix" and draw.u() < 0.3:
        title += f" - {p['style']} Style"
    if p["color"]:
        title += f", {p['color']}"
    if p["size"] and draw.u() < 0.4:
        title += f" ({p['size']})"
    return title


def draw_images(draw: Draw, n: int) -> list[dict]:
    """``n`` product images (main image first) under invented image codes."""
    out = []
    for k in range(n):
        code = "".join(draw.pick(ALNUM + "abcdefghijklmnopqrstuvwxyz") for _ in range(11))
        base = f"{IMAGE_HOST}{code}"
        out.append(
            {
                "thumb": f"{base}._AC_US40_.jpg",
                "large": f"{base}._AC_.jpg",
                "variant": "MAIN" if k == 0 else f"PT{k:02d}",
                "hi_res": f"{base}._AC_SL1500_.jpg" if draw.u() < 0.8 else None,
            }
        )
    return out


def build_products(
    spec: DomainSpec, n: int, draw: Draw, params: GeneratorParams
) -> tuple[list[Product], dict[str, float], dict[str, list[str]]]:
    """The catalogue, each brand's market weight and the brands that make each product type."""
    makers, brand_weight = _brand_catalogue(spec, draw)
    taken: set[str] = set()
    products = [draw_product(spec, draw, params, makers, brand_weight, taken) for _ in range(n)]
    return products, brand_weight, makers


def draw_type_and_brand(
    spec: DomainSpec, draw: Draw, makers: dict[str, list[str]], brand_weight: dict[str, float]
) -> tuple[ProductTypeSpec, str]:
    """A product type by its share, then one of its makers by market weight."""
    t = spec.types[draw.weighted(cumulative(t.share for t in spec.types))]
    brands = makers[t.key]
    return t, brands[draw.weighted(cumulative(brand_weight[b] for b in brands))]


def draw_product(
    spec: DomainSpec,
    draw: Draw,
    params: GeneratorParams,
    makers: dict[str, list[str]],
    brand_weight: dict[str, float],
    taken: set[str],
    *,
    type_key: str | None = None,
    fixed: dict | None = None,
) -> Product:
    """One product; ``type_key`` forces its type (its brand is then one of the type's makers)
    and ``fixed`` forces drawn attribute values (``color``, ``style``) after they are drawn."""
    if type_key is None:
        t, brand = draw_type_and_brand(spec, draw, makers, brand_weight)
    else:
        t = spec.type(type_key)
        brands = makers[t.key]
        brand = brands[draw.weighted(cumulative(brand_weight[b] for b in brands))]
    colors = spec.colors if t.colors is None else t.colors
    p = {
        "brand": brand,
        "color": draw.pick(colors) if colors else None,
        "material": draw.pick(t.materials) if t.materials else None,
        "style": draw.pick(spec.styles),
        "size": draw.pick(t.sizes) if t.sizes else None,
        "name": " ".join(draw.pick(words) for words in t.name_parts) if t.name_parts else None,
    }
    p.update(fixed or {})
    p["details"] = _details(spec, t, p, draw, params)
    parent = unique_code(draw, "B0", 10, taken)
    variants = [parent if draw.u() < 0.5 else unique_code(draw, "B0", 10, taken)]
    while len(variants) < 3 and draw.u() < 0.3:
        variants.append(unique_code(draw, "B0", 10, taken))
    fmt = {"brand": brand, "material": (p["material"] or "").lower(), "noun": t.noun}
    fmt["color"] = (p["color"] or "classic").lower()
    bullets = [b.format(**fmt) for b in t.features]
    bullets += [draw.pick(spec.generic_features).format(**fmt)]
    bullets = draw.shuffle(bullets)[: 3 + int(draw.u() * 3)]
    if draw.u() < 0.04:
        bullets = []
    body = ". ".join(b.split(": ", 1)[-1] for b in bullets[:2])
    intro = f"Meet the {brand} {noun_text(t)}"
    r = draw.u()
    description = (
        [f"{intro}. {body}."]
        if r < 0.65 and body
        else ["Product Description", f"{intro}."]
        if r < 0.85
        else []
    )
    price = None
    if draw.u() >= params.null_price_share:
        price = round(max(1.0, round(draw.uniform(*t.price))) - 0.01, 2)
    main = spec.main_category
    if draw.u() < 0.06:
        main = draw.pick(spec.other_main_categories)
    categories = [spec.root_category, *t.categories] if draw.u() >= 0.04 else []
    store = brand if draw.u() >= 0.05 else f"{brand} Store"
    videos = []
    if draw.u() < 0.1:
        vid = "".join(draw.pick("0123456789abcdef") for _ in range(16))
        videos = [
            {
                "title": f"{brand} {t.title_noun} overview",
                "url": f"https://www.amazon.example.invalid/vdp/{vid}",
                "user_id": "",
            }
        ]
    return Product(
        parent_asin=parent,
        variant_asins=variants,
        product_type=t.key,
        noun=t.noun,
        brand=brand,
        color=p["color"],
        material=p["material"],
        style=p["style"],
        size=p["size"],
        price=price,
        quality=round(2.6 + 2.3 * float(draw.rng.beta(4.0, 1.6)), 3),
        popularity=round(float(draw.rng.lognormal(0.0, 0.6)), 4),
        name=p["name"],
        title=product_title(spec, t, p, draw),
        main_category=main,
        categories=categories,
        details=p["details"],
        features=bullets,
        description=description,
        store=store,
        images=draw_images(draw, 1 + int(draw.u() * 4)),
        videos=videos,
    )


def noun_text(t: ProductTypeSpec) -> str:
    """The type's title noun as running text ("Baby Stroller" -> "baby stroller", "USB" kept)."""
    return " ".join(w if w.isupper() else w.lower() for w in t.title_noun.split())


def finish_products(products: list[Product], reviews: list[Review], draw: Draw) -> None:
    """Fill what depends on the reviews: rating summary and first-available date."""
    ratings: dict[str, list[float]] = {}
    first: dict[str, int] = {}
    for r in reviews:
        ratings.setdefault(r.parent_asin, []).append(r.rating)
        first[r.parent_asin] = min(first.get(r.parent_asin, r.timestamp), r.timestamp)
    for p in products:
        got = ratings.get(p.parent_asin, [])
        prior = 4
        p.average_rating = round((sum(got) + prior * p.quality) / (len(got) + prior), 1)
        p.rating_number = len(got) + int(-math.log(1.0 - draw.u()) * 40 * p.popularity)
        seen = first.get(p.parent_asin, int(draw.uniform(T_FIRST, T_END)))
        available = max(T_CATALOG, seen - int(draw.uniform(20, 500)) * MS_PER_DAY)
        p.details["Date First Available"] = _date_text(available)
