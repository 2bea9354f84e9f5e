"""A product-search log for the synthetic sample world: every search ends in a purchase.

The world of :func:`personalir.data.sample_world.world.build_world` gives each user a chronological
purchase history (the reviews the data stage ingests). This module appends
``searches_per_user`` later searches per user; each names the product the user then bought
(the *target*, never one already bought) and carries the history up to that moment (earlier
searches' purchases included). Nothing here changes the world: the ``sample_world`` rule
writes the log (``search_log.jsonl``) and its report beside the world's files, from the
world it has just built, and TTP reads its examples from it.

Three kinds of query, labelled like the test sets of the TTP paper:

``General``   the target's brand and product noun plus one or two of its attributes
              ("Kestrel black drumsticks"): the query alone identifies a handful of products.
``Broad``     only the product noun ("guitar capo"), matching at least ``broad_min_matches``
              products of at least ``broad_min_brands`` brands. By construction the user has
              bought this product type before, and the target is made by the brand of that
              earlier purchase: the query is ambiguous, the history is what tells the brand.
``LongTail``  a less popular target (popularity below the ``longtail_quantile`` of the
              catalogue) described by its two rarest attribute values within its type and
              the noun ("satin finish concert ukulele"), without the brand.

A share ``misspell_share`` of all queries gets one character-level error (a mechanism of
:mod:`personalir.data.sample_world.mechanisms`) in a word of at least four letters; the record
keeps the clean text and ``misspelled: true``.

Targets are drawn with the world's own preference model (log popularity plus the brand,
colour and style boosts of :class:`~personalir.data.sample_world.model.GeneratorParams`, Gumbel
sampling), so searches look like the purchases that made the reviews. Each draw comes from
``derive_seed(seed, "search_log", domain)``; the same arguments give identical records.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from personalir.common.io import write_json, write_jsonl
from personalir.common.seeding import derive_seed
from personalir.data.sample_world.catalogue import noun_text
from personalir.data.sample_world.mechanisms import MECHANISM_NAMES, MECHANISMS
from personalir.data.sample_world.model import PARAMS, Product, User, World

LABELS = ("General", "Broad", "LongTail")
_MS_PER_DAY = 86_400_000
# Detail keys that never describe what a shopper asks for.
_NON_DESCRIPTIVE = {
    "brand",
    "manufacturer",
    "item weight",
    "product dimensions",
    "item model number",
    "is discontinued by manufacturer",
    "date first available",
    "color name",
}
_WORD = re.compile(r"[A-Za-z]{4,}")


@dataclass(frozen=True)
class SearchLogParams:
    searches_per_user: int = 2
    label_shares: dict = field(
        default_factory=lambda: {"General": 0.35, "Broad": 0.35, "LongTail": 0.30}
    )
    misspell_share: float = 0.15
    broad_min_matches: int = 6
    broad_min_brands: int = 3
    longtail_quantile: float = 0.5
    max_gap_days: float = 90.0

    @classmethod
    def from_config(cls, section: dict) -> SearchLogParams:
        return cls(
            searches_per_user=int(section["searches_per_user"]),
            label_shares=dict(section["label_shares"]),
            misspell_share=float(section["misspell_share"]),
            broad_min_matches=int(section["broad_min_matches"]),
            broad_min_brands=int(section["broad_min_brands"]),
            longtail_quantile=float(section["longtail_quantile"]),
            max_gap_days=float(section["max_gap_days"]),
        )

    def __post_init__(self):
        unknown = set(self.label_shares) - set(LABELS)
        if unknown or not self.label_shares:
            raise ValueError(f"label_shares keys must be among {LABELS}, got {self.label_shares}")
        if any(v < 0 for v in self.label_shares.values()) or sum(self.label_shares.values()) <= 0:
            raise ValueError("label_shares must be non-negative with a positive sum")


class _NumpyDraw:
    """The ``Draw`` protocol of the error mechanisms over a numpy generator."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def u(self) -> float:
        return float(self.rng.random())

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]


def _noun(world: World, product: Product) -> str:
    return noun_text(world.spec.type(product.product_type))


def _descriptive_values(product: Product) -> list[tuple[str, str]]:
    out = []
    for key, value in product.details.items():
        if key.lower() in _NON_DESCRIPTIVE or not value or any(c.isdigit() for c in value):
            continue
        if len(value.split()) > 3 or value.lower() in {"yes", "no"}:
            continue
        out.append((key, value))
    return out


class _Catalogue:
    """Indexes of the world's products used to build and check queries."""

    def __init__(self, world: World):
        self.world = world
        self.products = world.products
        self.by_asin = world.products_by_asin
        self.by_type: dict[str, list[Product]] = {}
        for p in self.products:
            self.by_type.setdefault(p.product_type, []).append(p)
        pops = np.array([p.popularity for p in self.products])
        self.log_pop = np.log(pops)
        self.popularity = dict(zip((p.parent_asin for p in self.products), pops, strict=True))
        self.value_count: Counter = Counter()
        for p in self.products:
            for _, v in _descriptive_values(p):
                self.value_count[p.product_type, v.lower()] += 1
        self.brand = np.array([p.brand for p in self.products])
        self.color = np.array([p.color or "" for p in self.products])
        self.style = np.array([p.style for p in self.products])

    def preference_logits(self, user: User) -> np.ndarray:
        return (
            self.log_pop
            + PARAMS.brand_pref_boost * np.isin(self.brand, user.preferred_brands)
            + PARAMS.color_pref_boost * np.isin(self.color, user.preferred_colors)
            + PARAMS.style_pref_boost * np.isin(self.style, user.preferred_styles)
        )


def _draw_by_preference(
    candidates: list[int], logits: np.ndarray, rng: np.random.Generator
) -> int | None:
    if not candidates:
        return None
    idx = np.asarray(candidates)
    gumbel = -np.log(-np.log(rng.random(len(idx)) * (1 - 1e-12) + 1e-12))
    return int(idx[int(np.argmax(logits[idx] + gumbel))])


def _general(cat: _Catalogue, target: Product, rng: np.random.Generator) -> tuple[str, str]:
    noun = _noun(cat.world, target)
    options = [("brand_noun", f"{target.brand} {noun}")]
    if target.color:
        options.append(("brand_color_noun", f"{target.brand} {target.color.lower()} {noun}"))
    options.append(("brand_noun_style", f"{target.brand} {noun} {target.style}"))
    template, text = options[int(rng.integers(len(options)))]
    return template, text


def _broad_matches(cat: _Catalogue, product_type: str) -> tuple[int, int]:
    same = cat.by_type[product_type]
    return len(same), len({p.brand for p in same})


def _longtail(cat: _Catalogue, target: Product) -> tuple[str, str] | None:
    values = _descriptive_values(target)
    ranked = sorted(
        {
            v.lower(): (cat.value_count[target.product_type, v.lower()], k, v) for k, v in values
        }.values()
    )
    if len(ranked) < 2:
        return None
    noun = _noun(cat.world, target)
    words = [v if v[:1].isupper() and v.isupper() else v.lower() for _, _, v in ranked[:2]]
    return "rare_values_noun", f"{words[0]} {words[1]} {noun}"


def _misspell(text: str, rng: np.random.Generator) -> tuple[str, str] | None:
    words = [(m.start(), m.group()) for m in _WORD.finditer(text)]
    if not words:
        return None
    draw = _NumpyDraw(rng)
    order = rng.permutation(len(words))
    for i in order:
        start, word = words[int(i)]
        mechs = [m for m in MECHANISM_NAMES if m != "homophone"]
        for j in rng.permutation(len(mechs)):
            out = MECHANISMS.get(mechs[int(j)])(word, draw)
            if out and out.lower() != word.lower():
                return text[:start] + out + text[start + len(word) :], mechs[int(j)]
    return None


def _choose_label(params: SearchLogParams, rng: np.random.Generator) -> str:
    labels = [lab for lab in LABELS if params.label_shares.get(lab, 0) > 0]
    weights = np.array([params.label_shares[lab] for lab in labels], dtype=float)
    return labels[int(rng.choice(len(labels), p=weights / weights.sum()))]


def build_search_log(world: World, params: SearchLogParams, seed: int) -> list[dict]:
    """The search records of one world (see the module docstring)."""
    rng = np.random.default_rng(derive_seed(seed, "search_log", world.domain))
    cat = _Catalogue(world)
    position = {p.parent_asin: i for i, p in enumerate(cat.products)}
    quantile = float(np.quantile([p.popularity for p in cat.products], params.longtail_quantile))
    records = []
    for user in world.users:
        history = [
            {"item_id": pur.parent_asin, "timestamp": pur.timestamp} for pur in user.purchases
        ]
        logits = cat.preference_logits(user)
        for s in range(params.searches_per_user):
            bought = {h["item_id"] for h in history}
            unbought = [i for i, p in enumerate(cat.products) if p.parent_asin not in bought]
            wanted = _choose_label(params, rng)
            # Try the drawn label first, then the others in a fixed order (General last: it
            # is always possible while something is left to buy).
            order = [wanted] + [lab for lab in ("Broad", "LongTail", "General") if lab != wanted]
            made = None
            for label in order:
                made = _make(
                    label, cat, user, history, unbought, logits, position, quantile, params, rng
                )
                if made is not None:
                    break
            if made is None:
                break  # the user has bought the whole catalogue
            target_idx, template, text, extra = made
            target = cat.products[target_idx]
            clean = text
            misspelled, mechanism = False, None
            if rng.random() < params.misspell_share:
                typo = _misspell(text, rng)
                if typo is not None:
                    text, mechanism = typo
                    misspelled = True
            last = history[-1]["timestamp"] if history else 0
            ts = last + int((1.0 + rng.random() * (params.max_gap_days - 1.0)) * _MS_PER_DAY)
            records.append(
                {
                    "search_id": f"{world.domain}-{user.user_id}-{s}",
                    "domain": world.domain,
                    "user_id": user.user_id,
                    "timestamp": ts,
                    "query": text,
                    "clean_query": clean,
                    "label": label,
                    "requested_label": wanted,
                    "misspelled": misspelled,
                    "target": target.parent_asin,
                    "history": [dict(h) for h in history],
                    "provenance": {"template": template, "typo": mechanism, **extra},
                }
            )
            history.append({"item_id": target.parent_asin, "timestamp": ts})
    return records


def _make(label, cat, user, history, unbought, logits, position, quantile, params, rng):
    """(target index, template, query, provenance) for ``label``, or None if impossible."""
    if not unbought:
        return None
    if label == "General":
        idx = _draw_by_preference(unbought, logits, rng)
        template, text = _general(cat, cat.products[idx], rng)
        return idx, template, text, {}
    if label == "Broad":
        # (type, brand) of earlier purchases, weighted by how often they were bought.
        seen = Counter(
            (cat.by_asin[h["item_id"]].product_type, cat.by_asin[h["item_id"]].brand)
            for h in history
        )
        unbought_set = set(unbought)
        options = []
        for (ptype, brand), count in sorted(seen.items()):
            n_match, n_brands = _broad_matches(cat, ptype)
            if n_match < params.broad_min_matches or n_brands < params.broad_min_brands:
                continue
            cands = [
                position[p.parent_asin]
                for p in cat.by_type[ptype]
                if p.brand == brand and position[p.parent_asin] in unbought_set
            ]
            if cands:
                options.append((ptype, brand, count, cands, n_match, n_brands))
        if not options:
            return None
        weights = np.array([o[2] for o in options], dtype=float)
        ptype, brand, count, cands, n_match, n_brands = options[
            int(rng.choice(len(options), p=weights / weights.sum()))
        ]
        idx = _draw_by_preference(cands, logits, rng)
        text = _noun(cat.world, cat.products[idx])
        return (
            idx,
            "noun",
            text,
            {
                "matching_products": n_match,
                "matching_brands": n_brands,
                "history_brand_count": count,
            },
        )
    if label == "LongTail":
        cands = [i for i in unbought if cat.products[i].popularity <= quantile]
        cands = [i for i in cands if len(_descriptive_values(cat.products[i])) >= 2]
        idx = _draw_by_preference(cands, logits, rng)
        if idx is None:
            return None
        made = _longtail(cat, cat.products[idx])
        if made is None:
            return None
        template, text = made
        return idx, template, text, {"popularity": round(cat.products[idx].popularity, 4)}
    raise ValueError(f"unknown label {label!r}")


def search_log_report(domain: str, records: list[dict]) -> dict:
    """Counts of a search log: searches, searches per label, misspelled ones, mean history."""
    labels = Counter(r["label"] for r in records)
    return {
        "domain": domain,
        "searches": len(records),
        "labels": dict(sorted(labels.items())),
        "misspelled": sum(r["misspelled"] for r in records),
        "mean_history": (
            sum(len(r["history"]) for r in records) / len(records) if records else math.nan
        ),
    }


def write_search_log(
    world: World,
    params: SearchLogParams,
    seed: int,
    *,
    log_path: str | Path,
    report_path: str | Path,
) -> dict:
    """Write the search log of ``world`` (JSONL) and its report (JSON); return the report."""
    records = build_search_log(world, params, seed)
    write_jsonl(log_path, records)
    report = search_log_report(world.domain, records)
    write_json(report_path, report)
    return report
