"""The common bootstrap: scipy's draws for means and differences, intervals, cluster ratios and
the paired sign-flip test, on tiny inline data with stated values."""

import math

import numpy as np
import pandas as pd
import pytest

from personalir.common.bootstrap import (
    bootstrap_group_means,
    bootstrap_replicates,
    difference_of_means_interval,
    mean_interval,
    mean_replicates,
    paired_difference_interval,
    percentile_interval,
    quantile_interval,
    resample_indices,
    sign_matrix,
    two_sided_p,
)


def gen(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_resample_indices_are_one_row_per_resample():
    # default_rng(0).integers(0, 3, (2, 3))
    assert resample_indices(3, 2, gen(0)).tolist() == [[2, 1, 1], [0, 0, 0]]


def test_quantile_and_percentile_intervals():
    # Linear interpolation: the 25% and 75% points of 1..4 are 1.75 and 3.25.
    assert quantile_interval(np.array([1.0, 2.0, 3.0, 4.0]), 0.5) == (1.75, 3.25)
    assert percentile_interval(np.array([np.nan, 1.0, 2.0, 3.0, 4.0]), 0.5) == (1.75, 3.25)
    assert all(math.isnan(x) for x in percentile_interval(np.array([np.nan]), 0.5))
    assert all(math.isnan(x) for x in quantile_interval(np.array([np.nan, 1.0]), 0.5))


def test_mean_interval_golden():
    # Resamples [[2, 1, 1], [0, 0, 0]] of (0, 10, 20): means 40/3 and 0; the 100% interval
    # spans them.
    assert mean_interval(np.array([0.0, 10.0, 20.0]), 2, 1.0, gen(0)) == (0.0, 40 / 3)
    assert mean_interval(np.array([0.0, 1.0, 0.0, 1.0, 1.0]), 200, 0.9, gen(7)) == (0.2, 1.0)


def test_scipy_path_equals_a_hand_written_percentile_bootstrap():
    values = gen(99).normal(size=37)
    g_hand, g_scipy = gen(11), gen(11)
    means = values[g_hand.integers(0, values.size, (500, values.size))].mean(axis=1)
    alpha = (1.0 - 0.95) / 2
    hand = tuple(float(q) for q in np.quantile(means, [alpha, 1 - alpha]))
    assert np.array_equal(mean_replicates(values, 500, gen(11)), means)
    assert mean_interval(values, 500, 0.95, g_scipy) == hand
    # The generator is left where the hand-written draw leaves it.
    assert g_scipy.random() == g_hand.random()


def test_one_value_gives_a_degenerate_interval_and_draws_nothing():
    g = gen(5)
    assert mean_interval(np.array([0.25]), 10, 0.95, g) == (0.25, 0.25)
    assert g.random() == gen(5).random()


def test_empty_values_or_no_resamples_give_nan():
    assert all(math.isnan(x) for x in mean_interval(np.array([]), 10, 0.95, gen(0)))
    assert all(math.isnan(x) for x in mean_interval(np.array([1.0, 2.0]), 0, 0.95, gen(0)))
    assert np.isnan(mean_replicates(np.array([]), 4, gen(0))).all()


def test_paired_difference_resamples_pairs_together():
    a, b = np.array([1.0, 0.0, 3.0]), np.array([0.0, 0.0, 1.0])
    # Differences (1, 0, 2), resamples [[2, 1, 1], [0, 0, 0]]: means 2/3 and 1.
    assert paired_difference_interval(a, b, 2, 1.0, gen(0)) == (2 / 3, 1.0)
    assert paired_difference_interval(a, b, 300, 0.9, gen(3)) == mean_interval(
        a - b, 300, 0.9, gen(3)
    )
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference_interval(a, b[:2], 10, 0.9, gen(0))


def test_difference_of_means_draws_one_resample_of_each_in_turn():
    x, y = np.array([1.0, 0.0, 1.0]), np.array([0.0, 0.5])
    g = gen(4)
    boots = np.empty(100)
    for i in range(100):
        boots[i] = x[g.integers(0, 3, 3)].mean() - y[g.integers(0, 2, 2)].mean()
    alpha = (1.0 - 0.8) / 2
    hand = tuple(float(q) for q in np.quantile(boots, [alpha, 1 - alpha]))
    got = difference_of_means_interval(x, y, 100, 0.8, gen(4))
    assert got == hand == (-0.16666666666666669, 1.0)
    # A single observation in one sample takes the same draws by hand.
    single = difference_of_means_interval(np.array([0.5]), y, 3, 1.0, gen(4))
    g = gen(4)
    draws = [0.5 - y[g.integers(0, 2, 2)].mean() for _ in range(3)]
    assert single == (min(draws), max(draws))


def test_bootstrap_group_means_golden():
    out = bootstrap_group_means(
        {"A": np.array([1.0, 0.0, 1.0]), "B": np.array([0.0, 0.0])},
        samples=50,
        confidence=0.9,
        gen=gen(1),
    )
    assert out["A"] == {"difference": 2 / 3, "ci_low": 1 / 3, "ci_high": 1.0, "queries": 3}
    assert out["B"] == {"difference": 0.0, "ci_low": 0.0, "ci_high": 0.0, "queries": 2}
    assert out["Avg"] == {"difference": 1 / 3, "ci_low": 1 / 6, "ci_high": 0.5, "queries": 5}


def test_an_empty_group_draws_nothing_and_makes_avg_nan():
    a = np.array([1.0, 0.0, 1.0, 1.0])
    alone = bootstrap_group_means({"A": a}, samples=40, confidence=0.9, gen=gen(2))
    out = bootstrap_group_means({"E": np.array([]), "A": a}, samples=40, confidence=0.9, gen=gen(2))
    assert out["A"] == alone["A"]
    assert out["E"]["queries"] == 0 and math.isnan(out["E"]["ci_low"])
    assert math.isnan(out["Avg"]["difference"]) and out["Avg"]["queries"] == 4


def test_ratio_replicates_golden():
    units = pd.DataFrame({"num": [1.0, 0.0, 2.0], "den": [1.0, 2.0, 2.0]})
    # Each replicate is sum(num) / sum(den) over a resample of the three units.
    assert bootstrap_replicates(units, 4, 5, "D").tolist() == [0.5, 0.2, 1 / 3, 0.6]


def test_sign_matrix_and_two_sided_p():
    signs = sign_matrix(3, 4, 0, "D")
    assert signs.tolist() == [[-1, 1, -1, -1], [1, -1, -1, -1], [1, -1, 1, 1]]
    assert np.array_equal(signs, sign_matrix(3, 4, 0, "D"))
    # |T*| >= 0.5 for -0.6 and 0.5: (1 + 2) / (1 + 4).
    assert two_sided_p(0.5, np.array([0.1, -0.6, 0.5, 0.2])) == 0.6
