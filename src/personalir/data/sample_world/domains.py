"""The sample world's domains, read from their data files: product types, brands, colours, styles.

A domain is one YAML file, ``domains/<Domain>.yaml`` in this package (shipped as package
data); its name is the file's. The file says which products the domain sells (each product
type with the attribute keys it carries, so the generated ``details`` look like the Amazon
Reviews 2023 meta records of that category, and the parts, uses and purposes its reviews talk
about), its brands, colours and styles, the words reviews fill in (recipients, activities,
places, ...) and which product types are accessories of which. Brands, product names and
stores are invented (no real trademarks). docs/extending.md ("A new domain") describes every
key; :mod:`~personalir.data.sample_world.datafile` reads the file strictly.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from personalir.data.sample_world.datafile import DataFileError, Value, read_data_file

DOMAIN_DIR = "domains"
DOMAIN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")  # as config/schema's `domains` items
# How a product title mentions the style: "for": "... for PlayStation 5" (seven titles in ten);
# "suffix": "... - Modern Style" (three in ten, after the optional "for <use>").
STYLE_IN_TITLE = ("for", "suffix")
# What a feature bullet may name (filled from the product by the catalogue).
FEATURE_PLACEHOLDERS = ("brand", "material", "noun", "color")


@dataclass(frozen=True)
class ProductTypeSpec:
    """One kind of product (a stroller, a capo, a racing game)."""

    key: str
    noun: str  # singular count noun used in review sentences
    title_noun: str  # noun phrase used in product titles
    categories: tuple[str, ...]  # category path below the domain root
    price: tuple[float, float]
    weight_lb: tuple[float, float]
    materials: tuple[str, ...]  # empty: the product has no Material
    parts: tuple[str, ...]  # singular nouns reviewers comment on
    uses: tuple[str, ...]  # noun phrases: "for {use}"
    purposes: tuple[str, ...]  # base-form verb phrases: "to {purpose}"
    features: tuple[str, ...]  # feature bullets; may use {brand} {material} {color} {noun}
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()  # type-specific details keys
    sizes: tuple[str, ...] = ()
    colors: tuple[str, ...] | None = None  # None: the domain colours; (): no Color
    share: float = 1.0  # relative frequency among the domain's products
    # The brands that alone make this type (and make no other type); (): any brand of the
    # domain not reserved by another type.
    makers: tuple[str, ...] = ()
    # Word lists whose picks, joined by spaces, name each product ("Shadow Kingdom"); ():
    # the products have no name.
    name_parts: tuple[tuple[str, ...], ...] = ()
    # Review-sentence slots whose words differ for this type (a game is not "sturdy"): slot ->
    # words, or slot -> {"pos": words, "neg": words} for a polar slot.
    slots: tuple[tuple[str, tuple[str, ...] | dict[str, tuple[str, ...]]], ...] = ()


@dataclass(frozen=True)
class DomainSpec:
    name: str
    main_category: str
    other_main_categories: tuple[str, ...]  # a few records carry another main category
    root_category: str
    brands: tuple[str, ...]
    colors: tuple[str, ...]
    styles: tuple[str, ...]
    style_key: str  # details key of the style axis users have preferences on
    style_phrase: str  # how reviews mention the style: "the {style} design"
    style_lowercase: bool
    recipients: tuple[str, ...]  # singular: "my {recipient}"
    activities: tuple[str, ...]  # third-person singular verb phrases
    places: tuple[str, ...]
    persons: tuple[str, ...]  # agents of "was recommended by {person}"
    visitors: tuple[str, ...]
    generic_features: tuple[str, ...]
    types: tuple[ProductTypeSpec, ...]
    common_extra: tuple[tuple[str, tuple[str, ...]], ...] = ()  # details keys of every type
    style_in_title: str = "suffix"  # one of STYLE_IN_TITLE
    # Accessory product types and the product types each fits, in the file's order (an
    # accessory of a founder whose type none fits is drawn from the other accessory types).
    accessories: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def type(self, key: str) -> ProductTypeSpec:
        return next(t for t in self.types if t.key == key)


# ------------------------------------------------------------------------- reading a file
_TYPE_REQUIRED = (
    "key",
    "noun",
    "title_noun",
    "categories",
    "price",
    "weight_lb",
    "parts",
    "uses",
    "purposes",
)
_TYPE_OPTIONAL = (
    "materials",
    "features",
    "extra",
    "sizes",
    "colors",
    "share",
    "makers",
    "name_parts",
    "slots",
)
_DOMAIN_REQUIRED = (
    "main_category",
    "other_main_categories",
    "root_category",
    "brands",
    "colors",
    "styles",
    "style",
    "recipients",
    "activities",
    "places",
    "persons",
    "visitors",
    "generic_features",
    "types",
    "accessories",
)
_STYLE_KEYS = ("key", "phrase", "lowercase", "in_title")


def _range(value: Value) -> tuple[float, float]:
    lo, hi = value.numbers(2)
    if not 0 < lo <= hi:
        value.fail(f"expected 0 < low <= high, found [{lo}, {hi}]")
    return lo, hi


def _slot_words(value: Value) -> tuple[str, ...] | dict[str, tuple[str, ...]]:
    if value.is_mapping:
        polar = value.fields(("pos", "neg"))
        return {k: polar[k].texts(nonempty=True) for k in ("pos", "neg")}
    return value.texts(nonempty=True)


def _product_type(value: Value) -> ProductTypeSpec:
    f = value.fields(_TYPE_REQUIRED, _TYPE_OPTIONAL)
    get = f.get
    share = get("share")
    share_value = share.number() if share else 1.0
    if share and share_value <= 0:
        share.fail(f"expected a positive share, found {share_value}")
    return ProductTypeSpec(
        key=f["key"].text(),
        noun=f["noun"].text(),
        title_noun=f["title_noun"].text(),
        categories=f["categories"].texts(nonempty=True),
        price=_range(f["price"]),
        weight_lb=_range(f["weight_lb"]),
        materials=get("materials").texts() if get("materials") else (),
        parts=f["parts"].texts(nonempty=True),
        uses=f["uses"].texts(nonempty=True),
        purposes=f["purposes"].texts(nonempty=True),
        features=get("features").texts() if get("features") else (),
        extra=get("extra").text_lists(nonempty=True) if get("extra") else (),
        sizes=get("sizes").texts() if get("sizes") else (),
        colors=get("colors").texts() if get("colors") else None,
        share=share_value,
        makers=get("makers").texts(nonempty=True) if get("makers") else (),
        name_parts=(
            tuple(v.texts(nonempty=True) for v in get("name_parts").items(nonempty=True))
            if get("name_parts")
            else ()
        ),
        slots=(
            tuple((k, _slot_words(v)) for k, v in get("slots").mapping().items())
            if get("slots")
            else ()
        ),
    )


def _formats(value: Value, names: tuple[str, ...]) -> None:
    """Each text of ``value`` (one text or a list) names only the ``{placeholders}`` given."""
    for item in value.items() if value.is_list else [value]:
        try:
            item.text().format(**{n: "" for n in names})
        except (KeyError, IndexError, ValueError) as exc:
            item.fail(f"a {{placeholder}} other than {list(names)}: {exc!r}")


def _check(f: dict[str, Value], spec: DomainSpec) -> None:
    """What the generator relies on beyond each value's shape."""
    keys = [t.key for t in spec.types]
    types = f["types"].items()
    for i, t in enumerate(spec.types):
        if keys.index(t.key) != i:
            types[i].fail(f"product type {t.key!r} appears twice")
        stray = [b for b in t.makers if b not in spec.brands]
        if stray:
            types[i].fail(f"makers {stray} are not among the domain's brands")
        if "features" in types[i].mapping():
            _formats(types[i].mapping()["features"], FEATURE_PLACEHOLDERS)
    _formats(f["generic_features"], FEATURE_PLACEHOLDERS)
    _formats(f["style"].mapping()["phrase"], ("style",))
    if len(spec.brands) < 3:
        f["brands"].fail("a domain needs at least three brands (users prefer two or three)")
    reserved = {b for t in spec.types for b in t.makers}
    if any(not t.makers for t in spec.types) and not set(spec.brands) - reserved:
        f["brands"].fail("every brand is reserved by a type's makers; the other types have none")
    accessories = f["accessories"]
    if len(spec.accessories) < 2:
        accessories.fail(
            "at least two accessory types are needed: every product family draws accessories, "
            "and a family of an accessory type takes one of another type"
        )
    for (acc, fits), (name, value) in zip(
        spec.accessories, accessories.mapping().items(), strict=True
    ):
        unknown = [k for k in (acc, *fits) if k not in keys]
        if unknown:
            value.fail(f"{unknown} are not product types of this domain ({name})")
    if spec.style_in_title not in STYLE_IN_TITLE:
        f["style"].fail(f"in_title must be one of {list(STYLE_IN_TITLE)}")


def read_domain_file(source: str | Path | Traversable, name: str | None = None) -> DomainSpec:
    """The domain spec of one file; its name is the file's stem unless ``name`` is given."""
    name = name or Path(str(source)).stem
    if not DOMAIN_NAME.fullmatch(name):
        raise DataFileError(
            f"{source}: domain name {name!r} must be a letter followed by up to 63 letters, "
            "digits or underscores"
        )
    root = read_data_file(source)
    f = root.fields(_DOMAIN_REQUIRED, ("common_extra",))
    style = f["style"].fields(_STYLE_KEYS)
    spec = DomainSpec(
        name=name,
        main_category=f["main_category"].text(),
        other_main_categories=f["other_main_categories"].texts(nonempty=True),
        root_category=f["root_category"].text(),
        brands=f["brands"].texts(nonempty=True),
        colors=f["colors"].texts(),
        styles=f["styles"].texts(nonempty=True),
        style_key=style["key"].text(),
        style_phrase=style["phrase"].text(),
        style_lowercase=style["lowercase"].flag(),
        recipients=f["recipients"].texts(nonempty=True),
        activities=f["activities"].texts(nonempty=True),
        places=f["places"].texts(nonempty=True),
        persons=f["persons"].texts(nonempty=True),
        visitors=f["visitors"].texts(nonempty=True),
        generic_features=f["generic_features"].texts(nonempty=True),
        types=tuple(_product_type(v) for v in f["types"].items(nonempty=True)),
        common_extra=(f["common_extra"].text_lists(nonempty=True) if "common_extra" in f else ()),
        style_in_title=style["in_title"].text(),
        accessories=f["accessories"].text_lists(nonempty=True),
    )
    _check(f, spec)
    return spec


# ------------------------------------------------------------------ the package's domains
def domain_folder() -> Traversable:
    """The folder of the domain files this package ships."""
    return files(__package__).joinpath(DOMAIN_DIR)


def domain_names() -> tuple[str, ...]:
    """The domains this package ships, sorted (one ``domains/<Domain>.yaml`` each)."""
    return tuple(
        sorted(
            p.name.removesuffix(".yaml")
            for p in domain_folder().iterdir()
            if p.name.endswith(".yaml") and p.is_file()
        )
    )


class UnknownDomain(ValueError):
    """A domain the sample world has no file for."""


@functools.cache
def load_domain(name: str) -> DomainSpec:
    """The spec of a shipped domain, read once per process."""
    source = domain_folder().joinpath(f"{name}.yaml")
    if not DOMAIN_NAME.fullmatch(name) or not source.is_file():
        raise UnknownDomain(
            f"unknown domain {name!r}: the sample world has {', '.join(domain_names())}; a "
            f"domain of your own is a file {DOMAIN_DIR}/{name}.yaml in the package "
            "personalir.data.sample_world (docs/extending.md, 'A new domain') or its own "
            "files (data.source: local) and, for TTP, ttp.source: personalwab"
        )
    return read_domain_file(source, name)
