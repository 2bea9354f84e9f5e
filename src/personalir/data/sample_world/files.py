"""The sample world on disk: Amazon Reviews 2023 records and the planted truth.

:func:`write_world` serialises a world (:func:`~personalir.data.sample_world.world.build_world`)
as ``<Domain>.jsonl`` and ``meta_<Domain>.jsonl`` (the exact Amazon Reviews 2023 schemas) plus
``planted_truth.json``, which only tests read; :func:`generate_domain` builds and writes one
domain into a folder under those names. (The ``sample_world`` rule also writes the world's
search log, :mod:`personalir.data.sample_world.search_log`.)

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

from dataclasses import asdict
from pathlib import Path

from personalir.common.io import write_json, write_jsonl
from personalir.common.seeding import derive_seed
from personalir.data.sample_world.confusability import ConfusabilityParams
from personalir.data.sample_world.constructions import CONSTRUCTIONS, POS_CLASSES
from personalir.data.sample_world.domains import DomainSpec
from personalir.data.sample_world.mechanisms import MECHANISM_DESCRIPTIONS, MECHANISM_NAMES
from personalir.data.sample_world.model import (
    PARAMS,
    SENTENCE_BOUNDARY,
    WORD,
    GeneratorParams,
    Product,
    Review,
    World,
)
from personalir.data.sample_world.world import CONFUSABILITY, build_world

# The planted truth names the generator (this package) and its version.
GENERATOR_NAME = "personalir.data.sample_world"
GENERATOR_VERSION = "1.1.0"


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
    spec = world.spec
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
            "confusability": asdict(world.confusability),
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
                "size": p.size,
                "pack_count": p.pack_count,
                "family": p.family,
                "family_role": p.family_role,
                "accessory_for": p.accessory_for,
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


def write_world(world: World, *, reviews: str | Path, meta: str | Path, truth: str | Path) -> dict:
    """Write the world's reviews and meta (Amazon Reviews 2023 schemas) and its planted truth.

    Returns the domain and the planted truth's counts.
    """
    write_jsonl(reviews, (review_record(r) for r in world.reviews))
    write_jsonl(meta, (meta_record(p) for p in world.products))
    planted = planted_truth(world)
    write_json(truth, planted)
    return {"domain": world.domain, **planted["counts"]}


def generate_domain(
    out_dir: str | Path,
    domain: str,
    *,
    seed: int,
    scale: float = 1.0,
    n_products: int = 300,
    n_users: int = 150,
    min_sentences_per_user: int = 50,
    confusability: ConfusabilityParams = CONFUSABILITY,
    spec: DomainSpec | None = None,
) -> dict:
    """Write <Domain>.jsonl, meta_<Domain>.jsonl, planted_truth.json into out_dir; return counts.

    ``spec``: a domain read from a file of your own (as :func:`build_world`)."""
    world = build_world(
        domain,
        seed=seed,
        scale=scale,
        n_products=n_products,
        n_users=n_users,
        min_sentences_per_user=min_sentences_per_user,
        confusability=confusability,
        spec=spec,
    )
    out = Path(out_dir)
    return write_world(
        world,
        reviews=out / f"{domain}.jsonl",
        meta=out / f"meta_{domain}.jsonl",
        truth=out / "planted_truth.json",
    )
