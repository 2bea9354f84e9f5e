"""Drawing one domain's sample world: catalogue, users, then their chronological reviews.

:func:`build_world` draws, for one domain (its data file, read by
:mod:`~personalir.data.sample_world.domains`), products with realistic attributes, users with
a planted syntactic style (a sparse mixture over the constructions), planted writing-error
habits (rates of six character-level mechanisms and preferred POS contexts) and planted
brand/colour/style preferences, then a chronological purchase-and-review sequence per user.
The parts live in their own modules: the data model and random draws
(:mod:`~personalir.data.sample_world.model`), the catalogue
(:mod:`~personalir.data.sample_world.catalogue`, :mod:`~personalir.data.sample_world.families`),
the users (:mod:`~personalir.data.sample_world.users`) and review writing with error injection
(:mod:`~personalir.data.sample_world.writing`); this module assembles them in the order of the
draws. :mod:`~personalir.data.sample_world.files` writes the world.

Every draw comes from ``numpy`` generators seeded by
``derive_seed(seed, "sample_world", domain, part)``, one stream per part of the world
(products, families, users, reviews, errors, catalogue), so changing one part leaves the
others' draws alone; no set order, ``hash()`` or clock is used, so the same arguments give
byte-identical files.
"""

from __future__ import annotations

import math

import numpy as np

from personalir.common.seeding import derive_seed
from personalir.data.sample_world.catalogue import build_products, finish_products
from personalir.data.sample_world.confusability import ConfusabilityParams
from personalir.data.sample_world.constructions import CONSTRUCTION_IDS
from personalir.data.sample_world.domains import DomainSpec, domain_names, load_domain
from personalir.data.sample_world.families import build_families
from personalir.data.sample_world.model import (
    ALNUM,
    IMAGE_HOST,
    MS_PER_DAY,
    PARAMS,
    SENTENCE_BOUNDARY,
    T_END,
    T_FIRST,
    T_LAST_START,
    Draw,
    GeneratorParams,
    InjectedError,
    Purchase,
    Review,
    World,
    cumulative,
)
from personalir.data.sample_world.users import build_users
from personalir.data.sample_world.writing import (
    ErrorInjector,
    SentenceWriter,
    choose_rating,
    is_counted,
    rating_polarity,
    review_title,
    sentence_polarity,
)

# The domains this package ships (one data file each, domains/<Domain>.yaml).
DOMAINS = domain_names()
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
    spec: DomainSpec | None = None,
) -> World:
    """Draw the in-memory world of one domain (products, users, chronological reviews).

    The domain is the package's data file of that name unless ``spec`` is given (a domain
    read with :func:`~personalir.data.sample_world.domains.read_domain_file`)."""
    spec = load_domain(domain) if spec is None else spec
    if spec.name != domain:
        raise ValueError(f"build_world: the domain is {domain!r} but its spec is {spec.name!r}")
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
        spec=spec,
    )


def _check_sentences(reviews: list[Review]) -> None:
    """The downstream splitter must see exactly the sentences we wrote."""
    for r in reviews:
        if len(SENTENCE_BOUNDARY.split(r.text)) != len(r.sentences):
            raise RuntimeError(f"sentence split mismatch in review {r.index}: {r.text!r}")
