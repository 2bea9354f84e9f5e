"""Bootstrap intervals, paired randomisation tests and Holm's correction."""

import numpy as np
import pandas as pd
import pytest

from personalir.common.bootstrap import bootstrap_replicates, paired_randomisation_test, ratio
from personalir.retrieval.stats import bootstrap_summary, holm, paired_differences


def _units(num, den=None):
    den = den if den is not None else [1.0] * len(num)
    return pd.DataFrame({"product": [f"p{i}" for i in range(len(num))], "num": num, "den": den})


def test_ratio_is_sum_over_sum():
    # Deg-style units: product sums over their pairs; (1 + 0 + 2) / (1 + 2 + 2) = 0.6.
    assert ratio(_units([1, 0, 2], [1, 2, 2])) == pytest.approx(0.6)


def test_bootstrap_is_seeded_and_brackets_the_value():
    units = _units(list(np.linspace(0, 1, 50)))
    a = bootstrap_replicates(units, 500, 7, "D", "m")
    b = bootstrap_replicates(units, 500, 7, "D", "m")
    assert np.array_equal(a, b)
    rows = bootstrap_summary({"D": units}, samples=500, confidence=0.95, seed=7)
    (row,) = rows
    assert row["value"] == pytest.approx(0.5)
    assert row["ci_low"] < 0.5 < row["ci_high"]


def test_constant_units_give_a_degenerate_interval():
    rows = bootstrap_summary({"D": _units([0.25] * 10)}, samples=200, confidence=0.95, seed=1)
    assert rows[0]["ci_low"] == rows[0]["ci_high"] == pytest.approx(0.25)


def test_average_over_domains_is_equal_weight():
    # Domain A: 0.2 over 10 products; domain B: 0.8 over 2 products -> average 0.5, not the
    # product-weighted 0.3.
    rows = bootstrap_summary(
        {"A": _units([0.2] * 10), "B": _units([0.8] * 2)}, samples=200, confidence=0.9, seed=3
    )
    avg = rows[-1]
    assert avg["domain"] == "Average" and avg["value"] == pytest.approx(0.5)
    assert avg["ci_low"] == pytest.approx(0.5) and avg["products"] == 12


def test_paired_test_identical_and_different():
    same = paired_differences(_units([0.1, 0.5, 0.9]), _units([0.1, 0.5, 0.9]))
    diff, p = paired_randomisation_test({"D": same}, permutations=999, seed=0)
    assert diff == 0.0 and p == 1.0
    # A beats B on all 30 products by 0.5: under sign flips |T| >= 0.5 only when all signs
    # agree (probability 2^-29), so p is (1 + 0) / (1 + 999).
    a, b = _units([0.9] * 30), _units([0.4] * 30)
    diff, p = paired_randomisation_test({"D": paired_differences(a, b)}, permutations=999, seed=0)
    assert diff == pytest.approx(0.5) and p == pytest.approx(1 / 1000)


def test_paired_differences_need_common_denominators():
    with pytest.raises(ValueError, match="denominators"):
        paired_differences(_units([1, 1], [1, 2]), _units([1, 1], [1, 1]))


def test_holm_golden_values():
    # Sorted p: 0.01, 0.02, 0.04 with m = 3 -> 0.03, max(0.03, 0.04) = 0.04, max(0.04, 0.04).
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    out = holm([0.5, float("nan"), 0.6])
    assert out[0] == pytest.approx(1.0) and np.isnan(out[1]) and out[2] == pytest.approx(1.0)
