"""Profiles: Laplace smoothing, shrinkage, the explicit fallback and serialisation.

Golden values are computed by hand from the formulas in personalir.errors.profiles with
alpha = 0.5, kappa = 2, kappa_words = 10 and M = 7 mechanisms.
"""

from __future__ import annotations

import pandas as pd
import pytest

from personalir.errors.mechanisms import MECHANISM_NAMES
from personalir.errors.profiles import (
    GLOBAL_ID,
    STATUS_FALLBACK,
    STATUS_OBSERVED,
    ProfileParams,
    ProfileSet,
    build_profiles,
    jensen_shannon,
)
from tests.fixtures.edit_tables import edit_columns, word_columns

PARAMS = ProfileParams(alpha=0.5, kappa=2.0, kappa_words=10.0, context_fields=("pos",))


def _edits(rows):
    cols = edit_columns()
    return pd.DataFrame([dict(zip(cols, r, strict=True)) for r in rows], columns=cols)


@pytest.fixture()
def profiles():
    edits = _edits(
        [
            ("a", 0, True, "swap", "NOUN", "dobj", "VERB", "ROOT", "gutiar", "guitar", "R:SPELL"),
            ("a", 1, True, "swap", "NOUN", "dobj", "VERB", "ROOT", "gutiar", "guitar", "R:SPELL"),
            ("a", 2, True, "keyboard", "VERB", "ROOT", "VERB", "ROOT", "plsy", "play", "R:SPELL"),
            ("a", 2, False, None, "VERB", "ROOT", "VERB", "ROOT", None, None, "R:VERB:SVA"),
            ("b", 0, True, "deletion", "NOUN", "nsubj", "VERB", "ROOT", "sond", "sound", "R:SPELL"),
        ]
    )
    words = pd.DataFrame(
        [("a", 0, "w", "NOUN", "", "", "")] * 6
        + [("a", 1, "w", "VERB", "", "", "")] * 4
        + [("b", 0, "w", "NOUN", "", "", "")] * 10
        + [("c", 0, "w", "NOUN", "", "", "")] * 10,
        columns=word_columns(),
    )
    return build_profiles(
        edits, words, ["a", "b", "c"], PARAMS, n_sentences={"a": 3, "b": 1, "c": 1}
    )


def test_global_laplace(profiles):
    g = profiles.global_profile.p_mechanisms()
    # 4 char edits: swap 2, keyboard 1, deletion 1; denominator 4 + 0.5 * 7 = 7.5
    assert g["swap"] == pytest.approx(2.5 / 7.5)
    assert g["keyboard"] == pytest.approx(1.5 / 7.5)
    assert g["homophone"] == pytest.approx(0.5 / 7.5)
    assert sum(g.values()) == pytest.approx(1.0)
    assert profiles.global_profile.error_rate() == pytest.approx((4 + 0.5) / (30 + 1.0))


def test_user_shrinkage_and_context(profiles):
    a, g = profiles["a"], profiles.global_profile
    assert a.status == STATUS_OBSERVED and a.n_char_edits == 3 and a.n_edits == 4
    lam = 3 / (3 + 2)
    lap_swap = (2 + 0.5) / (3 + 3.5)
    assert a.shrinkage_weight == pytest.approx(lam)
    assert a.p_mechanisms()["swap"] == pytest.approx(lam * lap_swap + (1 - lam) * 2.5 / 7.5)
    # P_u(m|NOUN): 2 edits in NOUN (both swaps) -> l_uc = 2/4, backoff mixes own and P_g(m|NOUN)
    n_g_noun = 3  # a's two swaps and b's deletion
    l_g = n_g_noun / (n_g_noun + 2)
    pg_noun_swap = l_g * (2 + 0.5) / (3 + 3.5) + (1 - l_g) * 2.5 / 7.5
    backoff = lam * lap_swap + (1 - lam) * pg_noun_swap
    local = (2 + 0.5) / (2 + 3.5)
    assert a.p_mechanisms_given("NOUN")["swap"] == pytest.approx(0.5 * local + 0.5 * backoff)
    assert sum(a.p_mechanisms_given("ADJ").values()) == pytest.approx(1.0)
    # error rates
    rate_a = (3 + 10 * g.error_rate()) / (10 + 10)
    assert a.error_rate() == pytest.approx(rate_a)
    pg_noun = (3 + 10 * g.error_rate()) / (26 + 10)
    prior = rate_a * pg_noun / g.error_rate()
    assert a.p_error_given("NOUN") == pytest.approx((2 + 10 * prior) / (6 + 10))
    assert a.misspellings == {"guitar": {"gutiar": 2}, "play": {"plsy": 1}}


def test_fallback_is_explicit_and_equals_the_domain(profiles):
    c, g = profiles["c"], profiles.global_profile
    assert c.status == STATUS_FALLBACK and c.shrinkage_weight == 0.0
    assert c.p_mechanisms() == pytest.approx(g.p_mechanisms())
    assert c.p_mechanisms_given("NOUN") == pytest.approx(g.p_mechanisms_given("NOUN"))
    assert c.error_rate() < g.error_rate()  # 0 errors in 10 words pulls it down
    s = profiles.summary()
    assert s["users_fallback_global"] == 1 and s["users_fallback_ids"] == ["c"]
    assert "fallback" in s["fallback_policy"] or "domain" in s["fallback_policy"]


def test_json_round_trip(profiles):
    obj = profiles.to_json()
    back = ProfileSet.from_json(obj)
    assert back.to_json() == obj
    assert obj["global"]["user_id"] == GLOBAL_ID
    assert list(obj["users"]["a"]["mechanism_probs"]) == list(MECHANISM_NAMES)
    obj["users"]["c"]["status"] = "observed"
    with pytest.raises(ValueError, match="does not match"):
        ProfileSet.from_json(obj)


def test_jensen_shannon():
    assert jensen_shannon({"a": 1.0}, {"a": 1.0}) == 0.0
    assert jensen_shannon({"a": 1.0}, {"b": 1.0}) == pytest.approx(1.0)
    assert 0 < jensen_shannon({"a": 0.5, "b": 0.5}, {"a": 0.9, "b": 0.1}) < 1
