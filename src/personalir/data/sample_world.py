"""The embedded synthetic sample world: Amazon-Reviews-2023-shaped data with a planted truth.

For one domain, :func:`build_world` draws products with realistic attributes, users with a
planted syntactic style (a sparse mixture over :data:`CONSTRUCTIONS`), planted writing-error
habits (rates of six character-level mechanisms and preferred POS contexts) and planted
brand/colour/style preferences, then a chronological purchase-and-review sequence per user.
:func:`generate_domain` serialises the world as ``<Domain>.jsonl`` and ``meta_<Domain>.jsonl``
(the exact Amazon Reviews 2023 schemas) plus ``planted_truth.json``, which only tests read.

Every draw comes from ``numpy`` generators seeded by
``derive_seed(seed, "sample_world", domain, part)``, one stream per part of the world
(products, users, reviews, errors, catalogue), so changing one part leaves the others' draws
alone; no set order, ``hash()`` or clock is used, so the same arguments give byte-identical
files.

Definitions used in the planted truth:
- a *sentence* is a piece of the review text under the split ``(?<=[.!?])\\s+``; the per-user
  minimum counts only sentences of at least three words (the data stage drops shorter ones);
- ``error.rate`` is the expected number of injected errors per eligible token (a token of
  >= 3 letters, or a homophone); the mechanism of each error is drawn from
  ``error.mechanism_probs`` and the token it lands on, among the sentence's tokens eligible
  for that mechanism, with weight ``pos_weights[pos] * long_word_factor**(len >= 7)``; an
  error that finds no eligible token waits for the user's next sentence;
- ``pos`` is the generator's coarse lexicon class (NOUN, PROPN, VERB, ADJ, ADV, FUNC).
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

import numpy as np

from personalir.common.io import write_json, write_jsonl
from personalir.common.seeding import derive_seed
from personalir.data.sample_world_constructions import (
    BASE_POS,
    CONSTRUCTION_IDS,
    CONSTRUCTIONS,
    PLAIN_SLOTS,
    POLAR_SLOTS,
    POS_CLASSES,
    REVIEW_TITLES,
    TYPE_SLOTS,
)
from personalir.data.sample_world_errors import (
    HOMOPHONES,
    MECHANISM_DESCRIPTIONS,
    MECHANISM_NAMES,
    MECHANISMS,
    eligible,
)
from personalir.data.sample_world_lexicon import (
    DOMAIN_SPECS,
    GAME_PUBLISHERS,
    GAME_TITLE_FIRST,
    GAME_TITLE_SECOND,
    DomainSpec,
    ProductTypeSpec,
)

GENERATOR_NAME = "personalir.data.sample_world"
GENERATOR_VERSION = "1.0.0"
DOMAINS = ("Baby_Products", "Musical_Instruments", "Video_Games")

SENTENCE_BOUNDARY = re.compile(r"(?<=[.!?])\s+")
WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")
_COUNTED_WORD = re.compile(r"\w+")
_SLOT = re.compile(r"\{(\w+)\}")
_ARTICLE = re.compile(r"\b([Aa]) (?=[AEIOUaeiou])(?!(?:[Uu]se|[Uu]ni|[Ee]u|[Oo]ne))")

_MS_PER_DAY = 86_400_000
_T_FIRST = int(datetime(2015, 1, 1, tzinfo=UTC).timestamp() * 1000)
_T_LAST_START = int(datetime(2022, 1, 1, tzinfo=UTC).timestamp() * 1000)
_T_END = int(datetime(2023, 9, 30, tzinfo=UTC).timestamp() * 1000)
_T_CATALOG = int(datetime(2013, 6, 1, tzinfo=UTC).timestamp() * 1000)
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_IMAGE_HOST = "https://m.media-amazon.example.invalid/images/I/"


@dataclass(frozen=True)
class GeneratorParams:
    """Knobs of the generative model (recorded in the planted truth)."""

    style_alpha: float = 0.3  # Dirichlet concentration of a user's construction mixture
    mechanism_alpha: float = 0.6  # Dirichlet concentration of a user's mechanism mixture
    context_alpha: float = 0.7  # Dirichlet concentration of a user's POS preferences
    error_free_share: float = 0.1
    min_error_rate: float = 0.01
    max_error_rate: float = 0.08
    long_word_len: int = 7
    long_word_factor: float = 4.0
    long_word_user_share: float = 0.3
    max_errors_per_sentence: int = 2
    brand_pref_boost: float = 2.2  # log-weight added to a product of a preferred brand
    color_pref_boost: float = 0.8
    style_pref_boost: float = 1.0
    extra_sentences_mean: float = 20.0  # mean of the exponential surplus over the minimum
    max_sentences_per_review: int = 6
    min_counted_words: int = 3
    sparse_product_share: float = 0.06  # products with fewer than five usable attributes
    null_price_share: float = 0.12


PARAMS = GeneratorParams()


# ---------------------------------------------------------------------------- world model
@dataclass
class Product:
    parent_asin: str
    variant_asins: list[str]
    product_type: str
    noun: str
    brand: str
    color: str | None
    material: str | None
    style: str
    size: str | None
    price: float | None
    quality: float  # mean rating the product deserves (1-5)
    popularity: float
    name: str | None  # game title; None for other products
    title: str
    main_category: str
    categories: list[str]
    details: dict[str, str]
    features: list[str]
    description: list[str]
    store: str
    images: list[dict]
    videos: list[dict]
    rating_number: int = 0
    average_rating: float = 0.0


@dataclass
class ErrorProfile:
    rate: float
    mechanism_probs: dict[str, float]
    pos_weights: dict[str, float]
    long_word_factor: float

    @property
    def error_free(self) -> bool:
        return self.rate == 0.0

    @property
    def preferred_contexts(self) -> list[str]:
        """POS classes the user corrupts at least 1.5x more than average, strongest first."""
        ranked = sorted(self.pos_weights.items(), key=lambda kv: (-kv[1], kv[0]))
        return [pos for pos, w in ranked if w >= 1.5]


@dataclass
class InjectedError:
    review_index: int
    sentence_index: int
    token_index: int  # index among the sentence's WORD tokens
    char_start: int  # offset of the erroneous token in the final review text
    original: str
    erroneous: str
    mechanism: str
    pos: str
    long_word: bool


@dataclass
class Review:
    index: int  # line number in <Domain>.jsonl
    user_id: str
    parent_asin: str
    asin: str
    timestamp: int
    rating: float
    title: str
    polarity: str  # pos, neg or mixed
    constructions: list[str]  # one construction id per sentence
    clean_sentences: list[str]
    sentences: list[str]  # after error injection
    helpful_vote: int
    verified_purchase: bool
    images: list[dict]
    errors: list[InjectedError] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


@dataclass
class Purchase:
    parent_asin: str
    asin: str
    timestamp: int
    review_index: int


@dataclass
class User:
    user_id: str
    style_weights: dict[str, float]  # construction id -> weight, sums to 1
    error_profile: ErrorProfile
    preferred_brands: list[str]
    preferred_colors: list[str]
    preferred_styles: list[str]
    recipient: str
    mean_sentences_per_review: float
    rating_bias: float
    target_sentences: int
    purchases: list[Purchase] = field(default_factory=list)  # chronological


@dataclass
class World:
    domain: str
    seed: int
    scale: float
    n_products: int
    n_users: int
    min_sentences_per_user: int
    products: list[Product]
    users: list[User]
    reviews: list[Review]  # grouped by user, chronological within a user

    @cached_property
    def products_by_asin(self) -> dict[str, Product]:
        return {p.parent_asin: p for p in self.products}

    @cached_property
    def users_by_id(self) -> dict[str, User]:
        return {u.user_id: u for u in self.users}


# ------------------------------------------------------------------------ random helpers
class _Draw:
    """Buffered uniforms from one numpy generator: cheap scalar draws in Python loops."""

    def __init__(self, rng: np.random.Generator, block: int = 16384):
        self.rng = rng
        self._block = block
        self._buf = rng.random(block).tolist()
        self._i = 0

    def u(self) -> float:
        if self._i == self._block:
            self._buf = self.rng.random(self._block).tolist()
            self._i = 0
        v = self._buf[self._i]
        self._i += 1
        return v

    def pick(self, seq):
        return seq[int(self.u() * len(seq))]

    def weighted(self, cum: list[float]) -> int:
        """Index drawn with probabilities given by the cumulative weights ``cum``."""
        return min(bisect.bisect_right(cum, self.u() * cum[-1]), len(cum) - 1)

    def uniform(self, lo: float, hi: float) -> float:
        return lo + (hi - lo) * self.u()

    def poisson(self, lam: float) -> int:
        if lam <= 0:
            return 0
        limit, k, prod = math.exp(-lam), 0, self.u()
        while prod > limit:
            k += 1
            prod *= self.u()
        return k

    def shuffle(self, items: list) -> list:
        items = list(items)
        for i in range(len(items) - 1, 0, -1):
            j = int(self.u() * (i + 1))
            items[i], items[j] = items[j], items[i]
        return items


def _cumulative(weights) -> list[float]:
    out, total = [], 0.0
    for w in weights:
        total += float(w)
        out.append(total)
    return out


def _unique_code(draw: _Draw, prefix: str, length: int, taken: set[str]) -> str:
    while True:
        code = prefix + "".join(draw.pick(_ALNUM) for _ in range(length - len(prefix)))
        if code not in taken:
            taken.add(code)
            return code


def _user_code(draw: _Draw, taken: set[str]) -> str:
    """28 characters like the real ids: "A" + mostly letters with a few digits."""
    letters = _ALNUM[:26]
    while True:
        chars = ["A"] + [
            draw.pick(_ALNUM[26:]) if draw.u() < 0.12 else draw.pick(letters) for _ in range(27)
        ]
        code = "".join(chars)
        if code not in taken:
            taken.add(code)
            return code


def _date_text(ms: int) -> str:
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return f"{dt:%B} {dt.day}, {dt.year}"


# ----------------------------------------------------------------------------- products
def _brand_catalogue(spec: DomainSpec, draw: _Draw) -> tuple[dict[str, list[str]], dict]:
    """Which brands make which product types, and each brand's market weight."""
    order = draw.shuffle(spec.brands)
    weight = {b: 1.0 / (rank + 2) ** 0.6 for rank, b in enumerate(order)}
    makers = {}
    for t in spec.types:
        if spec.name == "Video_Games":
            pool = (
                list(GAME_PUBLISHERS)
                if t.key == "game"
                else [b for b in spec.brands if b not in GAME_PUBLISHERS]
            )
        else:
            pool = list(spec.brands)
        chosen = [b for b in pool if draw.u() < 0.5]
        if len(chosen) < 3:
            chosen = draw.shuffle(pool)[:3]
        makers[t.key] = sorted(chosen, key=pool.index)
    return makers, weight


def _details(
    spec: DomainSpec, t: ProductTypeSpec, p: dict, draw: _Draw, params: GeneratorParams
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


def _title(spec: DomainSpec, t: ProductTypeSpec, p: dict, draw: _Draw) -> str:
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
    if spec.name == "Video_Games" and draw.u() < 0.7:
        title += f" for {p['style']}"
    elif draw.u() < 0.3:
        title += f" for {draw.pick(t.uses).title()}"
    if spec.name != "Video_Games" and draw.u() < 0.3:
        title += f" - {p['style']} Style"
    if p["color"]:
        title += f", {p['color']}"
    if p["size"] and draw.u() < 0.4:
        title += f" ({p['size']})"
    return title


def _images(draw: _Draw, n: int) -> list[dict]:
    out = []
    for k in range(n):
        code = "".join(draw.pick(_ALNUM + "abcdefghijklmnopqrstuvwxyz") for _ in range(11))
        base = f"{_IMAGE_HOST}{code}"
        out.append(
            {
                "thumb": f"{base}._AC_US40_.jpg",
                "large": f"{base}._AC_.jpg",
                "variant": "MAIN" if k == 0 else f"PT{k:02d}",
                "hi_res": f"{base}._AC_SL1500_.jpg" if draw.u() < 0.8 else None,
            }
        )
    return out


def _build_products(
    spec: DomainSpec, n: int, draw: _Draw, params: GeneratorParams
) -> tuple[list[Product], dict[str, float]]:
    """The catalogue and each brand's market weight."""
    makers, brand_weight = _brand_catalogue(spec, draw)
    type_cum = _cumulative(t.share for t in spec.types)
    taken: set[str] = set()
    products = []
    for _ in range(n):
        t = spec.types[draw.weighted(type_cum)]
        brands = makers[t.key]
        brand = brands[draw.weighted(_cumulative(brand_weight[b] for b in brands))]
        colors = spec.colors if t.colors is None else t.colors
        p = {
            "brand": brand,
            "color": draw.pick(colors) if colors else None,
            "material": draw.pick(t.materials) if t.materials else None,
            "style": draw.pick(spec.styles),
            "size": draw.pick(t.sizes) if t.sizes else None,
            "name": (
                f"{draw.pick(GAME_TITLE_FIRST)} {draw.pick(GAME_TITLE_SECOND)}"
                if t.key == "game"
                else None
            ),
        }
        p["details"] = _details(spec, t, p, draw, params)
        parent = _unique_code(draw, "B0", 10, taken)
        variants = [parent if draw.u() < 0.5 else _unique_code(draw, "B0", 10, taken)]
        while len(variants) < 3 and draw.u() < 0.3:
            variants.append(_unique_code(draw, "B0", 10, taken))
        fmt = {"brand": brand, "material": (p["material"] or "").lower(), "noun": t.noun}
        fmt["color"] = (p["color"] or "classic").lower()
        bullets = [b.format(**fmt) for b in t.features]
        bullets += [draw.pick(spec.generic_features).format(**fmt)]
        bullets = draw.shuffle(bullets)[: 3 + int(draw.u() * 3)]
        if draw.u() < 0.04:
            bullets = []
        body = ". ".join(b.split(": ", 1)[-1] for b in bullets[:2])
        noun_text = " ".join(w if w.isupper() else w.lower() for w in t.title_noun.split())
        intro = f"Meet the {brand} {noun_text}"
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
        products.append(
            Product(
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
                title=_title(spec, t, p, draw),
                main_category=main,
                categories=categories,
                details=p["details"],
                features=bullets,
                description=description,
                store=store,
                images=_images(draw, 1 + int(draw.u() * 4)),
                videos=videos,
            )
        )
    return products, brand_weight


# -------------------------------------------------------------------------------- users
def _build_users(
    spec: DomainSpec,
    n: int,
    min_sentences: int,
    draw: _Draw,
    rng: np.random.Generator,
    brand_weight: dict[str, float],
    params: GeneratorParams,
) -> list[User]:
    taken: set[str] = set()
    users = []
    k = len(CONSTRUCTION_IDS)
    for _ in range(n):
        style = np.round(rng.dirichlet(np.full(k, params.style_alpha)), 6)
        style_weights = dict(zip(CONSTRUCTION_IDS, (float(w) for w in style), strict=True))
        if draw.u() < params.error_free_share:
            rate = 0.0
        else:
            lo, hi = math.log(params.min_error_rate), math.log(params.max_error_rate)
            rate = round(math.exp(draw.uniform(lo, hi)), 4)
        mech = np.round(rng.dirichlet(np.full(len(MECHANISM_NAMES), params.mechanism_alpha)), 4)
        ctx = np.round(
            len(POS_CLASSES) * rng.dirichlet(np.full(len(POS_CLASSES), params.context_alpha)), 3
        )
        profile = ErrorProfile(
            rate=rate,
            mechanism_probs=dict(zip(MECHANISM_NAMES, map(float, mech), strict=True)),
            pos_weights=dict(zip(POS_CLASSES, map(float, ctx), strict=True)),
            long_word_factor=(
                params.long_word_factor if draw.u() < params.long_word_user_share else 1.0
            ),
        )
        brands = list(brand_weight)
        weights = [brand_weight[b] for b in brands]
        pref_brands = []
        for _ in range(2 + (draw.u() < 0.4)):
            i = draw.weighted(_cumulative(weights))
            pref_brands.append(brands.pop(i))
            weights.pop(i)
        colors = draw.shuffle(spec.colors)[:2]
        styles = draw.shuffle(spec.styles)[: 1 + (draw.u() < 0.5)]
        extra = int(-math.log(1.0 - draw.u()) * params.extra_sentences_mean)
        users.append(
            User(
                user_id=_user_code(draw, taken),
                style_weights=style_weights,
                error_profile=profile,
                preferred_brands=pref_brands,
                preferred_colors=colors,
                preferred_styles=styles,
                recipient=draw.pick(spec.recipients),
                mean_sentences_per_review=round(draw.uniform(1.6, 4.6), 3),
                rating_bias=round(float(rng.normal(0.0, 0.5)), 3),
                target_sentences=min_sentences + extra,
            )
        )
    return users


# ---------------------------------------------------------------------- sentence writing
@dataclass
class _Writer:
    """Renders review sentences for a product and a user from the construction templates."""

    spec: DomainSpec
    draw: _Draw
    # (construction id, polarity, has color, has material) -> usable templates
    table: dict = field(default_factory=dict)

    def __post_init__(self):
        for c in CONSTRUCTIONS:
            for pol in ("pos", "neg"):
                for has_color in (False, True):
                    for has_material in (False, True):
                        usable = tuple(
                            t
                            for t in c.templates(pol)
                            if (has_color or "{color}" not in t)
                            and (has_material or "{material}" not in t)
                        )
                        if not usable:
                            raise ValueError(f"construction {c.id} has no generic template")
                        self.table[c.id, pol, has_color, has_material] = usable
        self.types = {t.key: t for t in self.spec.types}

    def templates(self, cid: str, polarity: str, product: Product) -> tuple[str, ...]:
        return self.table[cid, polarity, product.color is not None, product.material is not None]

    def sentence(self, template: str, polarity: str, product: Product, user: User) -> str:
        return _finish(self.fill(template, polarity, product, user))

    def fill(self, template: str, polarity: str, product: Product, user: User) -> str:
        t = self.types[product.product_type]
        draw, spec = self.draw, self.spec
        chosen: dict[str, str] = {}
        overrides = TYPE_SLOTS.get(product.product_type, {})

        def slot(m: re.Match) -> str:
            name = m.group(1)
            if name in chosen:
                return chosen[name]
            if name in overrides or name in POLAR_SLOTS or name in PLAIN_SLOTS:
                options = overrides.get(name) or POLAR_SLOTS.get(name) or PLAIN_SLOTS[name]
                if isinstance(options, dict):
                    options = options[polarity]
                value = draw.pick(options)
                for _ in range(3):  # "so sturdy and so sturdy" reads like a bug
                    if value not in chosen.values():
                        break
                    value = draw.pick(options)
            elif name == "noun":
                value = product.noun
            elif name == "brand":
                value = product.brand
            elif name == "other_brand":
                value = draw.pick(spec.brands)
                if value == product.brand:
                    value = draw.pick(spec.brands)
            elif name == "color":
                value = (product.color or "").lower()
            elif name == "material":
                value = (product.material or "").lower()
            elif name == "style":
                style = product.style.lower() if spec.style_lowercase else product.style
                value = spec.style_phrase.format(style=style)
            elif name in ("part", "part2"):
                value = draw.pick(t.parts)
                other = chosen.get("part2" if name == "part" else "part")
                if other is not None and value == other:
                    value = t.parts[(t.parts.index(value) + 1) % len(t.parts)]
            elif name == "use":
                value = draw.pick(t.uses)
            elif name == "purpose":
                value = draw.pick(t.purposes)
            elif name == "recipient":
                value = user.recipient
            elif name == "activity":
                value = draw.pick(spec.activities)
            elif name == "place":
                value = draw.pick(spec.places)
            elif name == "person":
                value = draw.pick(spec.persons)
            elif name == "visitor":
                value = draw.pick(spec.visitors)
            else:
                raise KeyError(f"unknown slot {name!r} in {template!r}")
            chosen[name] = value
            return value

        text = _SLOT.sub(slot, template)
        if "{" in text:  # slot values may themselves hold slots ("my {recipient} ...")
            text = _SLOT.sub(slot, text)
        return text


def _finish(text: str) -> str:
    text = _ARTICLE.sub(lambda m: m.group(1) + "n ", text)
    return text[:1].upper() + text[1:]


def _counted(sentence: str, params: GeneratorParams) -> bool:
    return len(_COUNTED_WORD.findall(sentence)) >= params.min_counted_words


# ------------------------------------------------------------------------ error injection
class _ErrorInjector:
    def __init__(self, spec: DomainSpec, draw: _Draw, params: GeneratorParams):
        self.draw = draw
        self.params = params
        self.lexicon, self.proper = _domain_lexicon(spec)
        self.dictionary = set(self.lexicon) | set(HOMOPHONES)
        self._info: dict[str, tuple[bool, bool, str, bool]] = {}
        self._mech_cum: dict[str, list[float]] = {}

    def pos(self, word: str) -> str:
        low = word.lower()
        if word[:1].isupper() and low in self.proper:
            return "PROPN"
        found = self.lexicon.get(low)
        if found:
            return found
        if low.endswith("ly"):
            return "ADV"
        if low.endswith(("ing", "ed")):
            return "VERB"
        return "NOUN"

    def info(self, word: str) -> tuple[bool, bool, str, bool]:
        """(char mechanisms apply, homophone applies, POS, long word), cached per word."""
        got = self._info.get(word)
        if got is None:
            got = (
                eligible("keyboard", word),
                eligible("homophone", word),
                self.pos(word),
                len(word) >= self.params.long_word_len,
            )
            self._info[word] = got
        return got

    def inject(self, sentence: str, user: User, pending: list[str]):
        """Corrupt tokens of one sentence; return the new sentence and (offset, token) edits."""
        prof = user.error_profile
        if prof.error_free:
            return sentence, []
        draw, params = self.draw, self.params
        tokens = [(m.start(), m.group()) for m in WORD.finditer(sentence)]
        infos = [self.info(w) for _, w in tokens]
        n_eligible = sum(1 for char_ok, homo_ok, _, _ in infos if char_ok or homo_ok)
        mech_cum = self._mech_cum.get(user.user_id)
        if mech_cum is None:
            mech_cum = _cumulative(prof.mechanism_probs[m] for m in MECHANISM_NAMES)
            self._mech_cum[user.user_id] = mech_cum
        for _ in range(draw.poisson(prof.rate * n_eligible)):
            pending.append(MECHANISM_NAMES[draw.weighted(mech_cum)])
        if not pending:
            return sentence, []
        changes: dict[int, tuple[str, str, str]] = {}
        waiting = []
        for mech in pending:
            if len(changes) >= params.max_errors_per_sentence:
                waiting.append(mech)
                continue
            slot = 1 if mech == "homophone" else 0
            cands = [i for i, inf in enumerate(infos) if inf[slot] and i not in changes]
            if not cands:
                waiting.append(mech)
                continue
            cum = _cumulative(
                prof.pos_weights[infos[i][2]] * (prof.long_word_factor if infos[i][3] else 1.0)
                + 1e-9
                for i in cands
            )
            i = cands[draw.weighted(cum)]
            word = tokens[i][1]
            for _ in range(4):
                out = MECHANISMS.get(mech)(word, draw)
                if (
                    out
                    and out.lower() != word.lower()
                    and (mech == "homophone" or out.lower() not in self.dictionary)
                ):
                    changes[i] = (out, mech, infos[i][2])
                    break
            else:
                waiting.append(mech)
        pending[:] = waiting[-4:]
        if not changes:
            return sentence, []
        pieces, edits, last = [], [], 0
        length = 0
        for i, (start, word) in enumerate(tokens):
            if i not in changes:
                continue
            out, mech, pos = changes[i]
            head = sentence[last:start]
            pieces.append(head)
            length += len(head)
            edits.append((length, i, word, out, mech, pos))
            pieces.append(out)
            length += len(out)
            last = start + len(word)
        pieces.append(sentence[last:])
        return "".join(pieces), edits


def _domain_lexicon(spec: DomainSpec) -> tuple[dict[str, str], set[str]]:
    """word -> coarse POS for every word the domain's sentences can contain."""
    lex = dict(BASE_POS)
    proper: set[str] = set()

    def add(phrases, pos):
        for phrase in phrases:
            for w in WORD.findall(phrase):
                lex.setdefault(w.lower(), pos)

    for b in (*spec.brands, *GAME_PUBLISHERS, *GAME_TITLE_FIRST, *GAME_TITLE_SECOND):
        proper.update(w.lower() for w in WORD.findall(b))
    add(PLAIN_SLOTS["month"], "PROPN")
    proper.update(m.lower() for m in PLAIN_SLOTS["month"])
    if spec.style_lowercase:
        add(spec.styles, "ADJ")
    else:
        add(spec.styles, "PROPN")
        proper.update(w.lower() for s in spec.styles for w in WORD.findall(s))
    add(spec.colors, "ADJ")
    for t in spec.types:
        add(t.colors or (), "ADJ")
        add(t.materials, "NOUN")
        add(t.parts, "NOUN")
        add((t.noun,), "NOUN")
        for phrase in (*t.uses, *t.purposes):
            for w in WORD.findall(phrase):
                lex.setdefault(w.lower(), "VERB" if w.lower().endswith("ing") else "NOUN")
    add((*spec.recipients, *spec.places, *spec.persons, *spec.visitors), "NOUN")
    for phrase in spec.activities:
        for w in WORD.findall(phrase):
            lex.setdefault(w.lower(), "VERB" if w.endswith("s") else "NOUN")
    for w in proper:
        lex.setdefault(w, "PROPN")
    return lex, proper


# ----------------------------------------------------------------------------- the world
def _choose_rating(product: Product, user: User, draw: _Draw) -> int:
    if draw.u() < 0.05 + 0.04 * (5.0 - product.quality):  # a faulty unit: the J-shape
        return 1
    noise = (draw.u() + draw.u() + draw.u() - 1.5) * 1.8  # roughly N(0, 0.9)
    return int(min(5, max(1, round(product.quality + user.rating_bias + noise))))


def _polarity(rating: int) -> str:
    return "pos" if rating >= 4 else "neg" if rating <= 2 else "mixed"


def _sentence_polarity(review_polarity: str, position: int, n_sent: int, draw: _Draw) -> str:
    """Mostly the review's polarity; longer reviews may concede a point after the opener."""
    if review_polarity == "mixed":
        return "pos" if draw.u() < 0.5 else "neg"
    if position > 0 and n_sent >= 3 and draw.u() < 0.1:
        return "neg" if review_polarity == "pos" else "pos"
    return review_polarity


def _review_title(spec: DomainSpec, rating: int, product: Product, user: User, draw: _Draw):
    if draw.u() < 0.15:  # the stock titles of star-only reviews
        return ("One Star", "Two Stars", "Three Stars", "Four Stars", "Five Stars")[rating - 1]
    kind = "pos" if rating >= 4 else "mid" if rating == 3 else "neg"
    options = [t for t in REVIEW_TITLES[kind] if product.color or "{color}" not in t]
    title = draw.pick(options)
    return title.format(
        noun=product.noun,
        recipient=user.recipient,
        brand=product.brand,
        color=(product.color or "").lower(),
        period=draw.pick(PLAIN_SLOTS["period"]),
    )


def build_world(
    domain: str,
    *,
    seed: int,
    scale: float = 1.0,
    n_products: int = 300,
    n_users: int = 150,
    min_sentences_per_user: int = 50,
    params: GeneratorParams = PARAMS,
) -> World:
    """Draw the in-memory world of one domain (products, users, chronological reviews)."""
    if domain not in DOMAIN_SPECS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {DOMAINS}")
    spec = DOMAIN_SPECS[domain]
    n_p = max(1, int(round(n_products * scale)))
    n_u = max(1, int(round(n_users * scale)))

    def stream(name: str) -> np.random.Generator:
        return np.random.default_rng(derive_seed(seed, "sample_world", domain, name))

    products, brand_weight = _build_products(spec, n_p, _Draw(stream("products")), params)
    user_rng = stream("users")
    users = _build_users(
        spec, n_u, min_sentences_per_user, _Draw(user_rng), user_rng, brand_weight, params
    )

    review_rng = stream("reviews")
    draw = _Draw(review_rng)
    writer = _Writer(spec, draw)
    injector = _ErrorInjector(spec, _Draw(stream("errors")), params)
    brand_arr = np.array([p.brand for p in products])
    color_arr = np.array([p.color or "" for p in products])
    style_arr = np.array([p.style for p in products])
    log_pop = np.log(np.array([p.popularity for p in products]))
    reviews: list[Review] = []
    for user in users:
        # Products in order of preference (Plackett-Luce via Gumbel keys) ...
        logits = (
            log_pop
            + params.brand_pref_boost * np.isin(brand_arr, user.preferred_brands)
            + params.color_pref_boost * np.isin(color_arr, user.preferred_colors)
            + params.style_pref_boost * np.isin(style_arr, user.preferred_styles)
        )
        gumbel = -np.log(-np.log(review_rng.random(n_p) * (1 - 1e-12) + 1e-12))
        ranked = np.argsort(-(logits + gumbel), kind="stable").tolist()
        style_cum = _cumulative(user.style_weights[c] for c in CONSTRUCTION_IDS)
        drafts, counted = [], 0
        while counted < user.target_sentences and len(drafts) < n_p:
            product = products[ranked[len(drafts)]]
            rating = _choose_rating(product, user, draw)
            polarity = _polarity(rating)
            n_sent = 1 + draw.poisson(user.mean_sentences_per_review - 1.0)
            n_sent = min(params.max_sentences_per_review, n_sent)
            cids, sentences, used = [], [], set()
            for k in range(n_sent):
                sent_pol = _sentence_polarity(polarity, k, n_sent, draw)
                # A review does not repeat a template; a user whose favourite constructions
                # are used up in this review falls back to another draw from their mixture.
                for _ in range(6):
                    cid = CONSTRUCTION_IDS[draw.weighted(style_cum)]
                    fresh = [t for t in writer.templates(cid, sent_pol, product) if t not in used]
                    if fresh:
                        break
                template = draw.pick(fresh or writer.templates(cid, sent_pol, product))
                used.add(template)
                sentences.append(writer.sentence(template, sent_pol, product, user))
                cids.append(cid)
            counted += sum(_counted(s, params) for s in sentences)
            drafts.append((product, rating, polarity, cids, sentences))
        # ... bought in a random order over the user's active years (stationary preferences).
        drafts = draw.shuffle(drafts)
        start = int(draw.uniform(_T_FIRST, _T_LAST_START))
        end = min(_T_END, start + int(draw.uniform(1.0, 6.0) * 365 * _MS_PER_DAY))
        times = sorted(int(draw.uniform(start, end)) for _ in drafts)
        for i in range(1, len(times)):
            times[i] = max(times[i], times[i - 1] + 1000)
        pending: list[str] = []
        for (product, rating, polarity, cids, clean), ts in zip(drafts, times, strict=True):
            index = len(reviews)
            final, errors, offset = [], [], 0
            for s_idx, sentence in enumerate(clean):
                new, edits = injector.inject(sentence, user, pending)
                for pos_in_sentence, tok_idx, orig, err, mech, pos in edits:
                    errors.append(
                        InjectedError(
                            review_index=index,
                            sentence_index=s_idx,
                            token_index=tok_idx,
                            char_start=offset + pos_in_sentence,
                            original=orig,
                            erroneous=err,
                            mechanism=mech,
                            pos=pos,
                            long_word=len(orig) >= params.long_word_len,
                        )
                    )
                final.append(new)
                offset += len(new) + 1
            asin = draw.pick(product.variant_asins)
            votes = 0 if draw.u() < 0.7 else int(-math.log(1.0 - draw.u()) * 4) + 1
            images = []
            if draw.u() < 0.05:
                code = "".join(draw.pick(_ALNUM) for _ in range(11))
                images = [
                    {
                        "small_image_url": f"{_IMAGE_HOST}{code}._SL256_.jpg",
                        "medium_image_url": f"{_IMAGE_HOST}{code}._SL800_.jpg",
                        "large_image_url": f"{_IMAGE_HOST}{code}.jpg",
                        "attachment_type": "IMAGE",
                    }
                ]
            review = Review(
                index=index,
                user_id=user.user_id,
                parent_asin=product.parent_asin,
                asin=asin,
                timestamp=ts,
                rating=float(rating),
                title=_review_title(spec, rating, product, user, draw),
                polarity=polarity,
                constructions=cids,
                clean_sentences=clean,
                sentences=final,
                helpful_vote=votes,
                verified_purchase=draw.u() < 0.88,
                images=images,
                errors=errors,
            )
            reviews.append(review)
            user.purchases.append(Purchase(product.parent_asin, asin, ts, index))
    _finish_products(products, reviews, _Draw(stream("catalogue")))
    _check_sentences(reviews)
    return World(
        domain=domain,
        seed=seed,
        scale=scale,
        n_products=n_p,
        n_users=n_u,
        min_sentences_per_user=min_sentences_per_user,
        products=products,
        users=users,
        reviews=reviews,
    )


def _finish_products(products: list[Product], reviews: list[Review], draw: _Draw) -> None:
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
        seen = first.get(p.parent_asin, int(draw.uniform(_T_FIRST, _T_END)))
        available = max(_T_CATALOG, seen - int(draw.uniform(20, 500)) * _MS_PER_DAY)
        p.details["Date First Available"] = _date_text(available)


def _check_sentences(reviews: list[Review]) -> None:
    """The downstream splitter must see exactly the sentences we wrote."""
    for r in reviews:
        if len(SENTENCE_BOUNDARY.split(r.text)) != len(r.sentences):
            raise RuntimeError(f"sentence split mismatch in review {r.index}: {r.text!r}")


# -------------------------------------------------------------------------- serialising
def review_record(review: Review) -> dict:
    return {
        "rating": review.rating,
        "title": review.title,
        "text": review.text,
        "images": review.images,
        "asin": review.asin,
        "parent_asin": review.parent_asin,
        "user_id": review.user_id,
        "timestamp": review.timestamp,
        "helpful_vote": review.helpful_vote,
        "verified_purchase": review.verified_purchase,
    }


def meta_record(product: Product) -> dict:
    return {
        "main_category": product.main_category,
        "title": product.title,
        "average_rating": product.average_rating,
        "rating_number": product.rating_number,
        "features": product.features,
        "description": product.description,
        "price": product.price,
        "images": product.images,
        "videos": product.videos,
        "store": product.store,
        "categories": product.categories,
        "details": product.details,
        "parent_asin": product.parent_asin,
        "bought_together": None,
    }


def planted_truth(world: World, params: GeneratorParams = PARAMS) -> dict:
    """The hidden truth: what later stages should recover (for tests only)."""
    users = {}
    for u in world.users:
        reviews = [world.reviews[p.review_index] for p in u.purchases]
        counts: dict[str, int] = {}
        for r in reviews:
            for cid in r.constructions:
                counts[cid] = counts.get(cid, 0) + 1
        prof = u.error_profile
        users[u.user_id] = {
            "style_weights": u.style_weights,
            "construction_counts": counts,
            "error": {
                "error_free": prof.error_free,
                "rate": prof.rate,
                "mechanism_probs": prof.mechanism_probs,
                "pos_weights": prof.pos_weights,
                "long_word_factor": prof.long_word_factor,
                "preferred_contexts": prof.preferred_contexts,
            },
            "preferences": {
                "brands": u.preferred_brands,
                "colors": u.preferred_colors,
                "styles": u.preferred_styles,
            },
            "recipient": u.recipient,
            "review_indices": [p.review_index for p in u.purchases],
            "n_reviews": len(reviews),
            "n_sentences": sum(len(r.sentences) for r in reviews),
            "errors": [asdict(e) for r in reviews for e in r.errors],
        }
    spec = DOMAIN_SPECS[world.domain]
    return {
        "generator": {"name": GENERATOR_NAME, "version": GENERATOR_VERSION},
        "domain": world.domain,
        "seed": world.seed,
        "derived_seed": derive_seed(world.seed, "sample_world", world.domain),
        "parameters": {
            "scale": world.scale,
            "n_products": world.n_products,
            "n_users": world.n_users,
            "min_sentences_per_user": world.min_sentences_per_user,
            "model": asdict(params),
        },
        "definitions": {
            "sentence_split": SENTENCE_BOUNDARY.pattern,
            "token": WORD.pattern,
            "error_rate": "expected injected errors per eligible token (>= 3 letters or a "
            "homophone); mechanism ~ mechanism_probs; token ~ pos_weights[pos] * "
            "long_word_factor if len >= long_word_len",
            "pos": "coarse lexicon class of the generator: " + ", ".join(POS_CLASSES),
            "char_start": "offset of the erroneous token in the review text",
            "style_key": spec.style_key,
        },
        "counts": {
            "products": len(world.products),
            "users": len(world.users),
            "reviews": len(world.reviews),
            "sentences": sum(len(r.sentences) for r in world.reviews),
            "errors": sum(len(r.errors) for r in world.reviews),
        },
        "constructions": [
            {"id": c.id, "description": c.description, "templates": {"pos": c.pos, "neg": c.neg}}
            for c in CONSTRUCTIONS
        ],
        "mechanisms": [
            {"id": m, "description": MECHANISM_DESCRIPTIONS[m]} for m in MECHANISM_NAMES
        ],
        "pos_classes": list(POS_CLASSES),
        "products": {
            p.parent_asin: {
                "product_type": p.product_type,
                "brand": p.brand,
                "color": p.color,
                "material": p.material,
                "style": p.style,
                "quality": p.quality,
                "variant_asins": p.variant_asins,
            }
            for p in world.products
        },
        "users": users,
        "reviews": [
            {
                "review_index": r.index,
                "user_id": r.user_id,
                "parent_asin": r.parent_asin,
                "polarity": r.polarity,
                "constructions": r.constructions,
                "clean_text": " ".join(r.clean_sentences),
                "n_errors": len(r.errors),
            }
            for r in world.reviews
        ],
    }


def generate_domain(
    out_dir: str | Path,
    domain: str,
    *,
    seed: int,
    scale: float = 1.0,
    n_products: int = 300,
    n_users: int = 150,
    min_sentences_per_user: int = 50,
) -> dict:
    """Write <Domain>.jsonl, meta_<Domain>.jsonl, planted_truth.json into out_dir; return counts."""
    world = build_world(
        domain,
        seed=seed,
        scale=scale,
        n_products=n_products,
        n_users=n_users,
        min_sentences_per_user=min_sentences_per_user,
    )
    out = Path(out_dir)
    write_jsonl(out / f"{domain}.jsonl", (review_record(r) for r in world.reviews))
    write_jsonl(out / f"meta_{domain}.jsonl", (meta_record(p) for p in world.products))
    truth = planted_truth(world)
    write_json(out / "planted_truth.json", truth)
    return {"domain": domain, **truth["counts"]}
