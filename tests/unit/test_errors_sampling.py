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
    table, info = evaluate_sampling(
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
    again, _ = evaluate_sampling(
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


def test_bootstrap_intervals_over_users_bracket_the_means():
    ps = _world()
    kw = dict(texts_per_user=4, n_edits=1, n_candidates=None, seed=1, domain="D")
    table, info = evaluate_sampling(
        ps, ps, TEXTS, Injector(), samplers=["global", "personalised"], bootstrap=200, **kw
    )
    for _, row in table.iterrows():
        for m in ("top1", "mrr"):
            assert row[f"{m}_ci_low"] <= row[m] <= row[f"{m}_ci_high"]
    # Six users: the global sampler ranks some first and some not, so its interval is wide.
    baseline = table.set_index("sampler").loc["global"]
    assert baseline["mrr_ci_low"] < baseline["mrr"] < baseline["mrr_ci_high"]
    plain, _ = evaluate_sampling(ps, ps, TEXTS, Injector(), samplers=["global"], **kw)
    assert "top1_ci_low" not in plain
    assert plain.loc[0, "top1"] == table.loc[0, "top1"]  # intervals change no estimate
    tex = sampling_latex(
        sampling_frame([table]), label="unit", info={**info, "attribution": "same"}
    )
    low, high = table.loc[0, ["top1_ci_low", "top1_ci_high"]]
    assert f"[{100 * low:.2f}, {100 * high:.2f}]" in tex and "95\\% bootstrap intervals" in tex
    assert "& -- & --" in tex  # the average rows have no interval


def test_edit_rate_intervals_resample_users_with_and_without_edits():
    import pyarrow as pa

    from personalir.errors.stage import rate_intervals

    rows = [{"user_id": u, "text": "one two three four five"} for u in ("a", "b", "c", "d")]
    edits = pa.table({"user_id": ["a", "a", "b"], "char_level": [True, False, True]})
    out = rate_intervals(rows, edits, seed=3, n_boot=500)
    lo, hi = out["edits_per_1000_words_ci"]
    assert lo < 1000 * 3 / 20 < hi  # 3 edits in 20 words, two users without any
    lo_c, hi_c = out["char_level_edits_per_1000_words_ci"]
    assert lo_c <= 1000 * 2 / 20 <= hi_c and hi_c <= hi
    assert rate_intervals(rows, edits, seed=3, n_boot=500) == out
    assert rate_intervals(rows, edits, seed=3, n_boot=0) == {}


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
    table, info = evaluate_sampling(
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
    assert r"\textbf{" in tex and "A B" in tex and "9.35" in tex
    out = tmp_path / "fig.pdf"
    data = mechanism_figure({"A_B": ps}, 2, out, label="unit")
    assert out.read_bytes()[:5] == b"%PDF-"
    assert set(data["series"]) >= {"domain (global)"} and len(data) == 3 * 7
