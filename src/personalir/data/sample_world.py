"""The embedded synthetic sample world: Amazon-Reviews-2023-shaped data with a planted truth.

For one domain, :func:`build_world` draws products with realistic attributes, users with a
planted syntactic style (a sparse mixture over :data:`CONSTRUCTIONS`), planted writing-error
habits (rates of six character-level mechanisms and preferred POS contexts) and planted
brand/colour/style preferences, then a chronological purchase-and-review sequence per user.
:func:`write_world` serialises the world as ``<Domain>.jsonl`` and ``meta_<Domain>.jsonl``
(the exact Amazon Reviews 2023 schemas) plus ``planted_truth.json``, which only tests read;
:func:`generate_domain` builds and writes one domain into a folder under those names. (The
``sample_world`` rule also writes the world's search log, :mod:`personalir.data.search_log`.)

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

The parts live in their own modules: the data model and random draws
(:mod:`~personalir.data.sample_world_model`), the catalogue
(:mod:`~personalir.data.sample_world_catalogue`), the users
(:mod:`~personalir.data.sample_world_users`) and review writing with error injection
(:mod:`~personalir.data.sample_world_writing`); this module assembles the world and writes it.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path

import numpy as np

from personalir.common.io import write_json, write_jsonl
from personalir.common.seeding import derive_seed
from personalir.data.sample_world_catalogue import build_products, finish_products
from personalir.data.sample_world_constructions import CONSTRUCTION_IDS, CONSTRUCTIONS, POS_CLASSES
from personalir.data.sample_world_errors import MECHANISM_DESCRIPTIONS, MECHANISM_NAMES
from personalir.data.sample_world_families import ConfusabilityParams, build_families
from personalir.data.sample_world_lexicon import DOMAIN_SPECS
from personalir.data.sample_world_model import (
    ALNUM,
    IMAGE_HOST,
    MS_PER_DAY,
    PARAMS,
    SENTENCE_BOUNDARY,
    T_END,
    T_FIRST,
    T_LAST_START,
    WORD,
    Draw,
    GeneratorParams,
    InjectedError,
    Product,
    Purchase,
    Review,
    World,
    cumulative,
)
from personalir.data.sample_world_users import build_users
from personalir.data.sample_world_writing import (
    ErrorInjector,
    SentenceWriter,
    choose_rating,
    is_counted,
    rating_polarity,
    review_title,
    sentence_polarity,
)

GENERATOR_NAME = "personalir.data.sample_world"
GENERATOR_VERSION = "1.1.0"
DOMAINS = ("Baby_Products", "Musical_Instruments", "Video_Games")
# The embedded default's confusable catalogue (config/config.yaml, `sample.confusability`).
CONFUSABILITY = ConfusabilityParams()


def build_world(
    domain: str,
    *,
    seed: int,
    scale: float = 1.0,
    n_products: int = 300,
    n_users: int = 150,
    min_sentences_per_user: int = 50,
    confusability: ConfusabilityParams = CONFUSABILITY,
    params: GeneratorParams = PARAMS,
) -> World:
    """Draw the in-memory world of one domain (products, users, chronological reviews)."""
    if domain not in DOMAIN_SPECS:
        raise ValueError(
            f"unknown domain {domain!r}: the sample world has {', '.join(DOMAINS)}; a domain "
            "of your own needs its own files (data.source: local) and, for TTP, "
            "ttp.source: personalwab"
        )
    spec = DOMAIN_SPECS[domain]
    n_p = max(1, int(round(n_products * scale)))
    n_u = max(1, int(round(n_users * scale)))

    def stream(name: str) -> np.random.Generator:
        return np.random.default_rng(derive_seed(seed, "sample_world", domain, name))

    # Families replace independent products (the catalogue keeps its size); the independent
    # ones are the first draws of the family-free catalogue.
    n_families = confusability.n_families(n_p)
    n_family_products = n_families * confusability.products_per_family
    products, brand_weight, makers = build_products(
        spec, n_p - n_family_products, Draw(stream("products")), params
    )
    if n_families:
        taken = {a for p in products for a in p.variant_asins}
        family = build_families(
            spec,
            n_families,
            confusability,
            Draw(stream("families")),
            params,
            makers,
            brand_weight,
            taken,
        )
        products += family
    n_p = len(products)
    user_rng = stream("users")
    users = build_users(
        spec, n_u, min_sentences_per_user, Draw(user_rng), user_rng, brand_weight, params
    )

    review_rng = stream("reviews")
    draw = Draw(review_rng)
    writer = SentenceWriter(spec, draw)
    injector = ErrorInjector(spec, Draw(stream("errors")), params)
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
        style_cum = cumulative(user.style_weights[c] for c in CONSTRUCTION_IDS)
        drafts, counted = [], 0
        while counted < user.target_sentences and len(drafts) < n_p:
            product = products[ranked[len(drafts)]]
            rating = choose_rating(product, user, draw)
            polarity = rating_polarity(rating)
            n_sent = 1 + draw.poisson(user.mean_sentences_per_review - 1.0)
            n_sent = min(params.max_sentences_per_review, n_sent)
            cids, sentences, used = [], [], set()
            for k in range(n_sent):
                sent_pol = sentence_polarity(polarity, k, n_sent, draw)
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
            counted += sum(is_counted(s, params) for s in sentences)
            drafts.append((product, rating, polarity, cids, sentences))
        # ... bought in a random order over the user's active years (stationary preferences).
        drafts = draw.shuffle(drafts)
        start = int(draw.uniform(T_FIRST, T_LAST_START))
        end = min(T_END, start + int(draw.uniform(1.0, 6.0) * 365 * MS_PER_DAY))
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
                code = "".join(draw.pick(ALNUM) for _ in range(11))
                images = [
                    {
                        "small_image_url": f"{IMAGE_HOST}{code}._SL256_.jpg",
                        "medium_image_url": f"{IMAGE_HOST}{code}._SL800_.jpg",
                        "large_image_url": f"{IMAGE_HOST}{code}.jpg",
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
                title=review_title(spec, rating, product, user, draw),
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
    finish_products(products, reviews, Draw(stream("catalogue")))
    _check_sentences(reviews)
    return World(
        domain=domain,
        seed=seed,
        scale=scale,
        n_products=n_p,
        n_users=n_u,
        min_sentences_per_user=min_sentences_per_user,
        confusability=confusability,
        products=products,
        users=users,
        reviews=reviews,
    )


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
) -> dict:
    """Write <Domain>.jsonl, meta_<Domain>.jsonl, planted_truth.json into out_dir; return counts."""
    world = build_world(
        domain,
        seed=seed,
        scale=scale,
        n_products=n_products,
        n_users=n_users,
        min_sentences_per_user=min_sentences_per_user,
        confusability=confusability,
    )
    out = Path(out_dir)
    return write_world(
        world,
        reviews=out / f"{domain}.jsonl",
        meta=out / f"meta_{domain}.jsonl",
        truth=out / "planted_truth.json",
    )
