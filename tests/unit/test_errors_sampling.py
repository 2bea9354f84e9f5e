"""Samplers, the attribution likelihood, rank metrics with ties, recovery and the tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from personalir.errors.figures import mechanism_figure
from personalir.errors.inject import Injector, ProfilePolicy
from personalir.errors.profiles import ProfileParams, build_profiles
from personalir.errors.recovery import check_recovery, habit_recovery
from personalir.errors.sampling import (
    SAMPLERS,
    _expected_rank_metrics,
    derangement,
    edit_log_likelihoods,
    evaluate_sampling,
    sampler_order,
    user_intervals,
)
from personalir.errors.tables import sampling_frame, sampling_latex
from tests.fixtures.edit_tables import edit_columns, word_columns

SAMPLER_ORDER = ["global", "uniform", "character_random", "wrong_user", "personalised"]

HABITS = {
    "u_swap": "swap",
    "u_key": "keyboard",
    "u_del": "deletion",
    "u_rep": "repetition",
    "u_ins": "insertion",
    "u_mix": None,
}


def _world(n_edits=12):
    rows = []
    for u, m in HABITS.items():
        for i in range(n_edits):
            mech = m or ["swap", "keyboard", "deletion"][i % 3]
            rows.append((u, i, True, mech, "NOUN", "", "", "", f"x{i}", f"w{i}", "R:SPELL"))
    edits = pd.DataFrame(rows, columns=edit_columns())
    words = pd.DataFrame(
        [(u, i, "w", "NOUN", "", "", "") for u in HABITS for i in range(24) for _ in range(5)],
        columns=word_columns(),
    )
    return build_profiles(edits, words, sorted(HABITS), ProfileParams(0.1, 2.0, 50.0, ("pos",)))


TEXTS = [
    ("sturdy guitar stand for home studios", ("home",)),
    ("durable microphone cable with metal connectors", ("metal",)),
    ("comfortable padded strap for heavy basses", ()),
    ("bright acoustic strings that stay in tune", ("acoustic",)),
]


def test_registry_and_derangement():
    # Table order: the baselines first, the personalised sampler last.
    assert sampler_order() == SAMPLER_ORDER
    assert SAMPLERS.names() == sorted(SAMPLER_ORDER)
    d = derangement([f"u{i}" for i in range(9)], seed=3)
    assert sorted(d) == sorted(d.values()) and all(k != v for k, v in d.items())
    assert derangement([f"u{i}" for i in range(9)], seed=3) == d


@pytest.mark.parametrize(
    ("scores", "top1", "rr"),
    [
        ([0.0, -1.0, -2.0], 1.0, 1.0),
        ([-1.0, 0.0, -2.0], 0.0, 0.5),
        ([0.0, 0.0, -2.0], 0.5, 0.75),  # tie for first: expected over both orders
        ([-math.inf, -math.inf, -1.0], 0.0, (1 / 2 + 1 / 3) / 2),
    ],
)
def test_expected_rank_metrics(scores, top1, rr):
    assert _expected_rank_metrics(np.array(scores), 0) == pytest.approx((top1, rr))


def test_likelihood_prefers_the_generating_profile():
    ps = _world()
    inj = Injector()
    result = inj.inject(TEXTS[0][0], TEXTS[0][1], ps["u_swap"], n_edits=2, seed=5)
    assert [e.mechanism for e in result.edits] == ["swap", "swap"]
    ll = edit_log_likelihoods(
        inj, result, TEXTS[0][1], [ProfilePolicy(ps[u]) for u in sorted(HABITS)]
    )
    assert np.argmax(ll) == sorted(HABITS).index("u_swap")
    assert np.all(np.isfinite(ll))


def test_personalised_beats_baselines_on_distinct_habits():
    ps = _world()
    table, _, info = evaluate_sampling(
        ps,
        ps,
        TEXTS,
        Injector(),
        samplers=SAMPLER_ORDER,
        texts_per_user=4,
        n_edits=1,
        n_candidates=None,
        seed=1,
        domain="D",
    )
    t = table.set_index("sampler")
    assert t.loc["personalised", "top1"] > 0.6
    for base in ("global", "uniform", "character_random", "wrong_user"):
        assert t.loc["personalised", "mrr"] > t.loc[base, "mrr"]
    assert info["candidates_per_user"] == len(HABITS)
    again, _, _ = evaluate_sampling(
        ps,
        ps,
        TEXTS,
        Injector(),
        samplers=SAMPLER_ORDER,
        texts_per_user=4,
        n_edits=1,
        n_candidates=None,
        seed=1,
        domain="D",
    )
    pd.testing.assert_frame_equal(table, again)


def test_edit_rate_intervals_resample_users_with_and_without_edits():
    import pyarrow as pa

    from personalir.errors.stage import rate_intervals

    rows = [{"user_id": u, "text": "one two three four five"} for u in ("a", "b", "c", "d")]
    edits = pa.table({"user_id": ["a", "a", "b"], "char_level": [True, False, True]})
    kw = dict(samples=500, confidence=0.95, seed=3)
    out = rate_intervals(rows, edits, **kw)
    lo, hi = out["edits_per_1000_words_ci"]
    assert lo < 1000 * 3 / 20 < hi  # 3 edits in 20 words, two users without any
    lo_c, hi_c = out["char_level_edits_per_1000_words_ci"]
    assert lo_c <= 1000 * 2 / 20 <= hi_c and hi_c <= hi
    assert out["rate_interval_confidence"] == 0.95 and out["rate_interval_samples"] == 500
    assert rate_intervals(rows, edits, **kw) == out
    narrow = rate_intervals(rows, edits, **{**kw, "confidence": 0.5})
    assert lo <= narrow["edits_per_1000_words_ci"][0] <= narrow["edits_per_1000_words_ci"][1] <= hi
    assert rate_intervals(rows, edits, **{**kw, "samples": 0}) == {}


def test_habit_recovery_and_check():
    ps = _world(n_edits=30)
    planted = {
        "swap": 0.0,
        "keyboard": 0.0,
        "deletion": 0.0,
        "repetition": 0.0,
        "insertion": 0.0,
        "homophone": 0.0,
    }
    truth = {"users": {}}
    for u, m in HABITS.items():
        p = dict(planted)
        if m:
            p[m] = 0.97
            for k in p:
                p[k] += 0.03 / 6 if k != m else 0
        else:
            p.update(swap=1 / 3, keyboard=1 / 3, deletion=1 / 3)
        truth["users"][u] = {"error": {"error_free": False, "mechanism_probs": p}}
    res = habit_recovery(ps, truth, n_bootstrap=100, seed=0)
    assert res["users_with_planted_errors"] == len(HABITS)
    assert res["identification_top1"] == 1.0
    assert res["median_jsd"] < res["median_jsd_global"]
    assert check_recovery(res, min_share_recovered=0.5) == []
    # a shuffled truth is not recovered
    users = sorted(HABITS)
    wrong = {"users": {u: truth["users"][users[(i + 1) % len(users)]] for i, u in enumerate(users)}}
    bad = habit_recovery(ps, wrong, n_bootstrap=100, seed=0)
    assert check_recovery(bad, min_share_recovered=0.5)


def test_tables_and_figure(tmp_path):
    ps = _world()
    table, users, info = evaluate_sampling(
        ps,
        ps,
        TEXTS,
        Injector(),
        samplers=SAMPLER_ORDER,
        texts_per_user=2,
        n_edits=1,
        n_candidates=3,
        seed=1,
        domain="A_B",
    )
    frame = sampling_frame([table, table.assign(domain="C")])
    assert list(frame["domain"].unique()) == ["A_B", "C", "Average"]
    avg = frame[frame["domain"] == "Average"].set_index("sampler")
    assert avg.loc["personalised", "mrr"] == pytest.approx(
        table.set_index("sampler").loc["personalised", "mrr"]
    )
    tex = sampling_latex(frame, label="unit", info={**info, "attribution": "same"})
    assert r"\textbf{" in tex and "A B" in tex and "Chance: Top-1" in tex
    assert "Paper" not in tex  # no paper figure is typed into the table code
    # The per-user outcomes reproduce every row, so the tables can resample them.
    both = pd.concat([users, users.assign(domain="C")], ignore_index=True)
    ci = user_intervals(both, ["A_B", "C"], samples=200, confidence=0.9, seed=3)
    framed = sampling_frame([table, table.assign(domain="C")], ci)
    assert framed[["top1", "mrr", "single_query_top1"]].equals(
        frame[["top1", "mrr", "single_query_top1"]]
    )
    assert (framed["top1_ci_low"] <= framed["top1"] + 1e-12).all()
    assert (framed["top1"] <= framed["top1_ci_high"] + 1e-12).all()
    out = tmp_path / "fig.pdf"
    data = mechanism_figure({"A_B": ps}, 2, out, label="unit")
    assert out.read_bytes()[:5] == b"%PDF-"
    assert set(data["series"]) >= {"domain (global)"} and len(data) == 3 * 7


def _outcomes(domain, top1, single=None, texts=None, sampler="personalised"):
    n = len(top1)
    return pd.DataFrame(
        {
            "domain": domain,
            "sampler": sampler,
            "user_id": [f"u{i}" for i in range(n)],
            "top1": top1,
            "rr": top1,
            "single_query_top1_sum": single if single is not None else top1,
            "texts_scored": texts if texts is not None else [1] * n,
        }
    )


def test_user_intervals_on_a_hand_built_case():
    boot = {"samples": 1000, "confidence": 0.95, "seed": 7}
    outcomes = pd.concat(
        [
            # A: every user's true profile ranked first -> 1 and a degenerate interval [1, 1].
            _outcomes("A", [1.0, 1.0, 1.0]),
            # B: two users, 0 and 1. A resample is both-0 (1/4), mixed (1/2) or both-1 (1/4),
            # so the 2.5% and 97.5% quantiles of 1000 draws are 0 and 1. Single-query Top-1
            # weighs texts: (0 + 3) / (1 + 3) = 0.75, not the mean of user shares 0.5.
            _outcomes("B", [0.0, 1.0], single=[0.0, 3.0], texts=[1, 3]),
        ],
        ignore_index=True,
    )
    ci = user_intervals(outcomes, ["A", "B"], **boot).set_index("domain")
    assert list(ci.index) == ["A", "B", "Average"]
    assert (ci.loc["A", "top1"], ci.loc["A", "top1_ci_low"], ci.loc["A", "top1_ci_high"]) == (
        1.0,
        1.0,
        1.0,
    )
    assert (ci.loc["B", "top1"], ci.loc["B", "top1_ci_low"], ci.loc["B", "top1_ci_high"]) == (
        0.5,
        0.0,
        1.0,
    )
    assert ci.loc["B", "single_query_top1"] == pytest.approx(0.75)
    # The average is the mean of the domains (0.75); its replicates are the means of the
    # domains' replicates: (1 + {0, 0.5, 1}) / 2, so the interval is [0.5, 1].
    avg = ci.loc["Average"]
    assert (avg["top1"], avg["top1_ci_low"], avg["top1_ci_high"]) == (0.75, 0.5, 1.0)
    assert avg["users"] == 5
    # Seeded: the same call gives the same intervals; one domain is its own average.
    pd.testing.assert_frame_equal(
        user_intervals(outcomes, ["A", "B"], **boot).set_index("domain"), ci
    )
    one = user_intervals(outcomes, ["B"], **boot).set_index("domain")
    assert one.loc["Average"].equals(one.loc["B"].rename("Average"))


def test_sampling_table_with_intervals_csv_and_latex():
    table = pd.DataFrame(
        [
            {
                "domain": "B",
                "sampler": "personalised",
                "top1": 0.5,
                "mrr": 0.5,
                "single_query_top1": 0.75,
                "users": 2,
                "texts_scored": 4,
                "texts_without_edit": 0,
                "edits": 4,
            }
        ]
    )
    outcomes = _outcomes("B", [0.0, 1.0], single=[0.0, 3.0], texts=[1, 3])
    ci = user_intervals(outcomes, ["B"], samples=1000, confidence=0.95, seed=7)
    frame = sampling_frame([table], ci)
    assert list(frame.columns[:11]) == [
        "domain",
        "sampler",
        "top1",
        "top1_ci_low",
        "top1_ci_high",
        "mrr",
        "mrr_ci_low",
        "mrr_ci_high",
        "single_query_top1",
        "single_query_top1_ci_low",
        "single_query_top1_ci_high",
    ]
    info = {
        "texts_per_user": 2,
        "n_edits": 1,
        "candidates_per_user": 2,
        "attribution": "held_out",
        "chance_top1": 0.5,
        "chance_mrr": 0.75,
        "bootstrap": {"samples": 1000, "confidence": 0.95, "seed": 7},
    }
    tex = sampling_latex(frame, label="unit", info=info)
    assert "50.00 [0.00, 100.00]" in tex and "0.5000 [0.0000, 1.0000]" in tex
    assert "95\\% percentile-bootstrap intervals over users (1000 resamples)" in tex
    # Outcomes of another run do not reproduce the table: refused, naming the cell.
    with pytest.raises(ValueError, match="top1 = 1.000000 for B/personalised"):
        sampling_frame(
            [table], user_intervals(_outcomes("B", [1.0, 1.0]), ["B"], **info["bootstrap"])
        )
