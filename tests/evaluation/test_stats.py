"""Statistics against textbook values."""

from __future__ import annotations

import math

import pytest

from stackelberg.evaluation.stats import (
    bootstrap_diff,
    bootstrap_mean_ci,
    held_out_comparison,
    mcnemar_exact,
    paired_bootstrap_diff,
    wilson,
)


@pytest.mark.parametrize(
    "wins, n, low, high",
    [
        (8, 10, 0.4902, 0.9433),  # Wilson (1927); Newcombe (1998) table I
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (5, 10, 0.2366, 0.7634),
        (81, 263, 0.2553, 0.3662),  # Newcombe (1998) example
    ],
)
def test_wilson_known_values(wins, n, low, high):
    i = wilson(wins, n)
    assert i.estimate == pytest.approx(wins / n)
    assert (round(i.low, 4), round(i.high, 4)) == (low, high)
    assert i.n == n


def test_wilson_edge_cases():
    empty = wilson(0, 0)
    assert math.isnan(empty.estimate) and (empty.low, empty.high, empty.n) == (0.0, 1.0, 0)
    with pytest.raises(ValueError):
        wilson(3, 2)


@pytest.mark.parametrize(
    "b, c, p",
    [
        (1, 8, 0.0390625),
        (8, 1, 0.0390625),
        (0, 6, 0.03125),
        (0, 5, 0.0625),
        (5, 5, 1.0),
        (0, 0, 1.0),
        (2, 10, 0.0385742187),  # 2 * 79/4096
        (15, 30, 0.0357),  # large-count case, exact binomial
    ],
)
def test_mcnemar_exact_known_p_values(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p, abs=5e-5)


def test_bootstrap_mean_ci_is_seeded_and_brackets_the_mean():
    values = [0.1, 0.5, -0.3, 1.2, 0.7, 0.0, 0.4, 0.9]
    a, b = bootstrap_mean_ci(values, 500, seed=3), bootstrap_mean_ci(values, 500, seed=3)
    assert a == b
    assert a.low <= a.estimate <= a.high and a.n == 8
    assert a.estimate == pytest.approx(sum(values) / 8)
    assert bootstrap_mean_ci([2.0] * 5).to_dict() == {"estimate": 2.0, "ci": [2.0, 2.0], "n": 5}
    assert math.isnan(bootstrap_mean_ci([]).estimate)


def test_paired_and_unpaired_differences():
    same = paired_bootstrap_diff([0, 1, 0, 1], [1, 2, 1, 2])
    assert (same.estimate, same.low, same.high) == (1.0, 1.0, 1.0)
    mixed = paired_bootstrap_diff([1, 0, 0, 1, 0, 0], [1, 1, 0, 1, 1, 0], 1000)
    assert mixed.low <= 1 / 3 <= mixed.high and mixed.includes_zero()
    with pytest.raises(ValueError):
        paired_bootstrap_diff([1, 2], [1])
    apart = bootstrap_diff([0.0, 0.1, 0.2] * 5, [1.0, 1.1, 1.2] * 5)
    assert apart.estimate == pytest.approx(1.0) and apart.low > 0.8 and not apart.includes_zero()


def test_a_held_out_comparison_gives_both_rates_and_the_paired_gain():
    first, second = [0, 1, 0, 0, 1, 0, 0, 1], [1, 1, 0, 1, 1, 0, 1, 1]
    record, metrics = held_out_comparison(("uniform", "solved"), first, second, seed=0)
    assert record["uniform"]["estimate"] == 3 / 8 and record["solved"]["estimate"] == 6 / 8
    assert metrics["win_rate_gain"] == pytest.approx(3 / 8) == record["difference"]["estimate"]
    assert metrics["win_rate_gain_low"] <= 3 / 8 <= metrics["win_rate_gain_high"]
    assert set(metrics) == {
        "win_rate_uniform",
        "win_rate_solved",
        "win_rate_gain",
        "win_rate_gain_low",
        "win_rate_gain_high",
    }
    assert held_out_comparison(("a", "b"), [], []) == ({}, {})
