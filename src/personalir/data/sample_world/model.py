"""The sample world's data model: generator knobs, world records and the buffered random draws.

The dataclasses every part of the generator fills in (products, users, reviews with their
injected errors, the world that holds them), the :class:`GeneratorParams` recorded in the
planted truth, and :class:`Draw`, the cheap scalar draws from one numpy generator that keep
each part of the world on its own seeded stream (see :mod:`personalir.data.sample_world.world`).
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property

import numpy as np

from personalir.data.sample_world.confusability import ConfusabilityParams
from personalir.data.sample_world.domains import DomainSpec

SENTENCE_BOUNDARY = re.compile(r"(?<=[.!?])\s+")
WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")

MS_PER_DAY = 86_400_000
T_FIRST = int(datetime(2015, 1, 1, tzinfo=UTC).timestamp() * 1000)
T_LAST_START = int(datetime(2022, 1, 1, tzinfo=UTC).timestamp() * 1000)
T_END = int(datetime(2023, 9, 30, tzinfo=UTC).timestamp() * 1000)
T_CATALOG = int(datetime(2013, 6, 1, tzinfo=UTC).timestamp() * 1000)
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
IMAGE_HOST = "https://m.media-amazon.example.invalid/images/I/"


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
    name: str | None  # product name (a game's title) where its type names products, else None
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
    family: str | None = None  # parent_asin of the family's founder (sample_world.families)
    family_role: str | None = None  # founder, variant, lookalike or accessory
    accessory_for: str | None = None  # parent_asin of the product an accessory fits
    pack_count: int | None = None  # units per pack, where pack count is a family axis


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
    confusability: ConfusabilityParams
    products: list[Product]
    users: list[User]
    reviews: list[Review]  # grouped by user, chronological within a user
    spec: DomainSpec  # the domain the world was drawn from

    @cached_property
    def products_by_asin(self) -> dict[str, Product]:
        return {p.parent_asin: p for p in self.products}

    @cached_property
    def users_by_id(self) -> dict[str, User]:
        return {u.user_id: u for u in self.users}


# ------------------------------------------------------------------------ random helpers
class Draw:
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


def cumulative(weights) -> list[float]:
    out, total = [], 0.0
    for w in weights:
        total += float(w)
        out.append(total)
    return out
