"""The synthetic sample world: schemas, counts, determinism and a recoverable planted truth."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict

import numpy as np
import pytest

from personalir.data.sample_world import (
    DOMAINS,
    build_world,
    generate_domain,
)
from personalir.data.sample_world.constructions import CONSTRUCTIONS, POLAR_SLOTS
from personalir.data.sample_world.domains import load_domain
from personalir.data.sample_world.mechanisms import (
    MECHANISM_NAMES,
    MECHANISMS,
    QWERTY_NEIGHBOURS,
)

SEED = 20251129
SPLIT = re.compile(r"(?<=[.!?])\s+")  # the downstream (PQB) sentence splitter
REVIEW_KEYS = [
    "rating",
    "title",
    "text",
    "images",
    "asin",
    "parent_asin",
    "user_id",
    "timestamp",
    "helpful_vote",
    "verified_purchase",
]
META_KEYS = [
    "main_category",
    "title",
    "average_rating",
    "rating_number",
    "features",
    "description",
    "price",
    "images",
    "videos",
    "store",
    "categories",
    "details",
    "parent_asin",
    "bought_together",
]
# The shipped domains' main categories (a domain file added later is checked against its own).
MAIN_CATEGORY = {
    "Baby_Products": "Baby",
    "Musical_Instruments": "Musical Instruments",
    "Video_Games": "Video Games",
}
T_2015 = 1420070400000  # 2015-01-01T00:00:00Z in ms
T_2024 = 1704067200000  # 2024-01-01T00:00:00Z in ms


def _read_jsonl(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture(scope="module", params=DOMAINS)
def world(request, tmp_path_factory):
    domain = request.param
    out = tmp_path_factory.mktemp(f"world_{domain}")
    counts = generate_domain(out, domain, seed=SEED)
    return {
        "domain": domain,
        "dir": out,
        "counts": counts,
        "reviews": _read_jsonl(out / f"{domain}.jsonl"),
        "meta": _read_jsonl(out / f"meta_{domain}.jsonl"),
        "truth": json.loads((out / "planted_truth.json").read_text(encoding="utf-8")),
    }


def _by_user(reviews):
    out = defaultdict(list)
    for r in reviews:
        out[r["user_id"]].append(r)
    return out


def _usable_core_terms(details: dict) -> list[str]:
    """The PQB stage-01 rule: Brand first, no digits, <= 3 words, not yes/no, deduplicated."""
    items = [("Brand", details.get("Brand", ""))] + [
        (k, v) for k, v in details.items() if k != "Brand"
    ]
    seen, out = set(), []
    for _, v in items:
        if not v or re.search(r"\d", v) or len(v.split()) > 3 or v.lower() in ("yes", "no"):
            continue
        if v.lower() not in seen:
            seen.add(v.lower())
            out.append(v)
    return out


# ------------------------------------------------------------------------------- schemas
def test_review_schema_key_order_and_types(world):
    for r in world["reviews"]:
        assert list(r) == REVIEW_KEYS
        assert isinstance(r["rating"], float) and 1.0 <= r["rating"] <= 5.0
        assert isinstance(r["title"], str) and r["title"]
        assert isinstance(r["text"], str) and r["text"]
        assert isinstance(r["images"], list)
        assert re.fullmatch(r"B0[A-Z0-9]{8}", r["asin"])
        assert re.fullmatch(r"B0[A-Z0-9]{8}", r["parent_asin"])
        assert re.fullmatch(r"[A-Z0-9]{28}", r["user_id"])
        assert isinstance(r["timestamp"], int) and T_2015 <= r["timestamp"] < T_2024
        assert isinstance(r["helpful_vote"], int) and r["helpful_vote"] >= 0
        assert isinstance(r["verified_purchase"], bool)
    assert Counter(len(r["images"]) > 0 for r in world["reviews"])[False] > 0


def test_meta_schema_key_order_and_types(world):
    asins = [m["parent_asin"] for m in world["meta"]]
    assert len(set(asins)) == len(asins)
    prices = [m["price"] for m in world["meta"]]
    assert any(p is None for p in prices) and any(isinstance(p, float) for p in prices)
    mains = Counter(m["main_category"] for m in world["meta"])
    expected = MAIN_CATEGORY.get(world["domain"]) or load_domain(world["domain"]).main_category
    assert mains.most_common(1)[0][0] == expected
    for m in world["meta"]:
        assert list(m) == META_KEYS
        assert isinstance(m["title"], str) and m["title"]
        assert isinstance(m["average_rating"], float) and 1.0 <= m["average_rating"] <= 5.0
        assert isinstance(m["rating_number"], int)
        assert all(isinstance(x, str) for x in m["features"] + m["description"])
        assert m["price"] is None or isinstance(m["price"], float)
        for img in m["images"]:
            assert list(img) == ["thumb", "large", "variant", "hi_res"]
        assert isinstance(m["videos"], list)
        assert isinstance(m["store"], str) and m["store"]
        assert all(isinstance(c, str) for c in m["categories"])
        assert m["details"] and all(
            isinstance(k, str) and isinstance(v, str) for k, v in m["details"].items()
        )
        assert m["bought_together"] is None


def test_reviews_point_at_catalogue_products(world):
    variants = {p: set(v["variant_asins"]) for p, v in world["truth"]["products"].items()}
    for r in world["reviews"]:
        assert r["asin"] in variants[r["parent_asin"]]


# -------------------------------------------------------------------------------- counts
def test_counts_products_users_and_sentences_per_user(world):
    assert len(world["meta"]) >= 300
    users = _by_user(world["reviews"])
    assert len(users) >= 150
    per_user = []
    for reviews in users.values():
        sentences = [s for r in reviews for s in SPLIT.split(r["text"])]
        # The data stage drops sentences under three words; the minimum holds without them.
        assert sum(len(re.findall(r"\w+", s)) >= 3 for s in sentences) >= 50
        assert all(s[-1] in ".!?" for s in sentences)
        per_user.append(len(sentences))
    assert sum(n > 60 for n in per_user) >= len(per_user) // 4  # many users have more
    assert world["counts"]["products"] == len(world["meta"])
    assert world["counts"]["reviews"] == len(world["reviews"])


def test_reviews_have_one_to_six_sentences_matching_the_truth(world):
    truth_reviews = world["truth"]["reviews"]
    for r, t in zip(world["reviews"], truth_reviews, strict=True):
        n = len(SPLIT.split(r["text"]))
        assert 1 <= n <= 6
        assert n == len(t["constructions"]) == len(SPLIT.split(t["clean_text"]))


def test_most_products_have_several_reviewers(world):
    reviewers = defaultdict(set)
    for r in world["reviews"]:
        reviewers[r["parent_asin"]].add(r["user_id"])
    n = [len(reviewers[m["parent_asin"]]) for m in world["meta"]]
    assert np.mean([k >= 2 for k in n]) >= 0.7
    assert np.mean([k >= 3 for k in n]) >= 0.5


def test_timestamps_increase_per_user(world):
    for reviews in _by_user(world["reviews"]).values():
        ts = [r["timestamp"] for r in reviews]
        assert all(b > a for a, b in zip(ts, ts[1:], strict=False))
        assert len({r["parent_asin"] for r in reviews}) == len(reviews)  # one review a product


def test_details_offer_five_core_terms_with_some_mess(world):
    n = [len(_usable_core_terms(m["details"])) for m in world["meta"]]
    assert np.mean([k >= 5 for k in n]) >= 0.9
    assert min(n) < 5  # a few products cannot be used, as in the real data
    values = [v for m in world["meta"] for v in m["details"].values()]
    assert any(re.search(r"\d", v) for v in values)


def test_rating_follows_sentiment_words(world):
    pos, neg = set(POLAR_SLOTS["adj"]["pos"]), set(POLAR_SLOTS["adj"]["neg"])
    by_balance = defaultdict(list)
    for r, t in zip(world["reviews"], world["truth"]["reviews"], strict=True):
        words = re.findall(r"[a-z]+", t["clean_text"].lower())
        balance = sum(w in pos for w in words) - sum(w in neg for w in words)
        by_balance[np.sign(balance)].append(r["rating"])
    assert np.mean(by_balance[1]) > np.mean(by_balance[-1]) + 1.5


# ---------------------------------------------------------------------- determinism, scale
def test_same_seed_gives_identical_bytes_and_another_seed_differs(tmp_path):
    domain = "Video_Games"
    runs = {"a": SEED, "b": SEED, "c": SEED + 1}
    for name, seed in runs.items():
        generate_domain(tmp_path / name, domain, seed=seed, scale=0.3)
    for name in (f"{domain}.jsonl", f"meta_{domain}.jsonl", "planted_truth.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "c" / name).read_bytes()


def test_scale_multiplies_products_and_users():
    small = build_world("Baby_Products", seed=3, scale=0.2)
    large = build_world("Baby_Products", seed=3, scale=0.4)
    assert (len(small.products), len(small.users)) == (60, 30)
    assert (len(large.products), len(large.users)) == (120, 60)
    assert 1.6 < len(large.reviews) / len(small.reviews) < 2.4


def test_unknown_domain_is_rejected():
    with pytest.raises(ValueError, match="unknown domain 'Books'.*data.source: local"):
        build_world("Books", seed=1, scale=0.1)


def test_build_world_exposes_preferences_and_chronological_purchases():
    world = build_world("Musical_Instruments", seed=5, scale=0.2)
    assert len(world.products) == 60 and len(world.users) == 30
    for user in world.users:
        times = [p.timestamp for p in user.purchases]
        assert times == sorted(times)
        assert {world.reviews[p.review_index].user_id for p in user.purchases} == {user.user_id}
        assert user.preferred_brands and user.preferred_colors and user.preferred_styles
    product = world.products_by_asin[world.reviews[0].parent_asin]
    assert product.details["Brand"] == product.brand


# -------------------------------------------------------------------------- planted truth
def test_truth_records_every_error_at_its_place(world):
    reviews, truth = world["reviews"], world["truth"]
    by_review = defaultdict(list)
    n_errors = 0
    for user_id, u in truth["users"].items():
        for e in u["errors"]:
            assert reviews[e["review_index"]]["user_id"] == user_id
            text = reviews[e["review_index"]]["text"]
            assert text[e["char_start"] : e["char_start"] + len(e["erroneous"])] == e["erroneous"]
            assert e["mechanism"] in MECHANISM_NAMES and e["pos"] in truth["pos_classes"]
            by_review[e["review_index"]].append(e)
            n_errors += 1
    assert n_errors == truth["counts"]["errors"] > 0
    # Undoing the recorded edits (right to left) gives back the clean text exactly.
    for idx, errors in by_review.items():
        text = reviews[idx]["text"]
        for e in sorted(errors, key=lambda e: -e["char_start"]):
            start = e["char_start"]
            text = text[:start] + e["original"] + text[start + len(e["erroneous"]) :]
        assert text == truth["reviews"][idx]["clean_text"]
    for t in truth["reviews"]:
        if t["n_errors"] == 0:
            assert reviews[t["review_index"]]["text"] == t["clean_text"]


def _levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def test_errors_are_minimal_character_edits(world):
    for u in world["truth"]["users"].values():
        for e in u["errors"]:
            orig, err = e["original"], e["erroneous"]
            assert orig.lower() != err.lower()
            if e["mechanism"] != "homophone":
                assert len(orig) >= 3
                assert _levenshtein(orig, err) <= 2 and abs(len(orig) - len(err)) <= 1


def test_error_free_users_exist_and_rates_drive_error_counts(world):
    users = world["truth"]["users"].values()
    free = [u for u in users if u["error"]["error_free"]]
    assert 0.03 <= len(free) / len(users) <= 0.25
    assert all(not u["errors"] and u["error"]["rate"] == 0 for u in free)
    rates = np.array([u["error"]["rate"] for u in users])
    counts = np.array([len(u["errors"]) / u["n_sentences"] for u in users])
    assert 0 < rates.max() <= 0.08
    rank = lambda x: np.argsort(np.argsort(x))
    assert np.corrcoef(rank(rates), rank(counts))[0, 1] > 0.7


def test_realized_mechanisms_follow_each_users_planted_mix(world):
    distances = []
    for u in world["truth"]["users"].values():
        errors = u["errors"]
        if len(errors) >= 30:
            c = Counter(e["mechanism"] for e in errors)
            probs = u["error"]["mechanism_probs"]
            distances.append(0.5 * sum(abs(c[m] / len(errors) - probs[m]) for m in probs))
    assert len(distances) >= 5
    assert np.median(distances) < 0.2


def test_preferred_contexts_attract_errors(world):
    users = world["truth"]["users"].values()
    population = Counter(e["pos"] for u in users for e in u["errors"])
    total = sum(population.values())
    lifts = []
    for u in users:
        if len(u["errors"]) >= 15:
            own = Counter(e["pos"] for e in u["errors"])
            for pos in u["error"]["preferred_contexts"]:
                lifts.append((own[pos] / len(u["errors"])) / (population[pos] / total))
    assert len(lifts) >= 10
    assert np.median(lifts) > 1.3


def test_users_mix_many_constructions_and_differ(world):
    truth = world["truth"]
    assert len(truth["constructions"]) >= 30
    ids = [c["id"] for c in truth["constructions"]]
    weights = np.array([[u["style_weights"][c] for c in ids] for u in truth["users"].values()])
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-4)
    assert np.median(weights.max(axis=1)) < 0.6  # a mixture, not one template per user
    assert len(set(weights.argmax(axis=1).tolist())) >= 15  # favourites differ
    realised = [len(u["construction_counts"]) for u in truth["users"].values()]
    assert min(realised) >= 3
    # Each user's sentences follow their own mixture more than anybody else's.
    counts = np.array(
        [[u["construction_counts"].get(c, 0) for c in ids] for u in truth["users"].values()],
        dtype=float,
    )
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)
    sim = unit(counts) @ unit(weights).T
    assert np.mean(sim.argmax(axis=1) == np.arange(len(sim))) > 0.8


def test_preferred_brands_are_over_represented(world):
    truth, reviews = world["truth"], world["reviews"]
    brand_of = {p: v["brand"] for p, v in truth["products"].items()}
    population = Counter(brand_of[r["parent_asin"]] for r in reviews)
    total = sum(population.values())
    ratios = []
    for user_id, rs in _by_user(reviews).items():
        preferred = truth["users"][user_id]["preferences"]["brands"]
        own = np.mean([brand_of[r["parent_asin"]] in preferred for r in rs])
        base = sum(population[b] for b in preferred) / total
        ratios.append(own / base)
    assert np.median(ratios) > 2.0
    assert np.mean(np.array(ratios) > 1.0) > 0.9


def test_truth_describes_generator_and_constructions(world):
    truth = world["truth"]
    assert truth["generator"]["name"] == "personalir.data.sample_world"
    assert truth["domain"] == world["domain"] and truth["seed"] == SEED
    assert truth["parameters"]["n_products"] == 300
    assert {c["id"] for c in truth["constructions"]} == {c.id for c in CONSTRUCTIONS}
    for u in truth["users"].values():
        assert set(u["error"]["mechanism_probs"]) == set(MECHANISM_NAMES)
        assert u["preferences"]["brands"]


# ---------------------------------------------------------------------- error mechanisms
class _FixedDraw:
    """Deterministic stand-in for the generator's buffered uniforms."""

    def __init__(self, values):
        self.values = list(values)

    def u(self):
        return self.values.pop(0)

    def pick(self, seq):
        return seq[int(self.u() * len(seq))]


def test_qwerty_neighbours_follow_the_staggered_layout():
    assert QWERTY_NEIGHBOURS["f"] == "cdgrtv"  # d g (row), r t (above), c v (below)
    assert QWERTY_NEIGHBOURS["q"] == "aw"


@pytest.mark.parametrize(
    ("mechanism", "word", "draws", "expected"),
    [
        ("keyboard", "Stroller", [0.0, 0.0], "Atroller"),  # s -> first neighbour a, case kept
        ("swap", "canopy", [0.0], "acnopy"),
        ("repetition", "strap", [0.5], "strrap"),
        ("insertion", "cable", [0.0, 0.0], "cbable"),  # inside the word, never first
        ("deletion", "pedal", [0.99], "peda"),
        ("homophone", "Their", [0.0], "There"),
        ("homophone", "it's", [0.0], "its"),
        ("keyboard", "to", [0.0, 0.0], None),  # short words are left alone
        ("homophone", "stroller", [0.0], None),
    ],
)
def test_mechanisms_make_small_case_preserving_edits(mechanism, word, draws, expected):
    assert MECHANISMS.get(mechanism)(word, _FixedDraw(draws)) == expected
