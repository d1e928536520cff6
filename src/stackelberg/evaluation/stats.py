"""Small-sample statistics for win rates: Wilson intervals, exact McNemar, bootstraps.

Tournaments are tens to hundreds of games, so the normal approximation is poor near 0% and
100%: win rates get a Wilson score interval, paired comparisons an exact (binomial) McNemar
test, and mean rewards a percentile bootstrap. Everything is pure Python and seeded.
``verdict`` is the one rule that calls a difference a gain or a loss, for every metric.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # two-sided 95% quantile of the standard normal


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% interval and the number of observations behind it."""

    estimate: float
    low: float
    high: float
    n: int

    def includes_zero(self) -> bool:
        return self.low <= 0.0 <= self.high

    def to_dict(self) -> dict[str, float | int | list[float]]:
        return {"estimate": self.estimate, "ci": [self.low, self.high], "n": self.n}


def wilson(wins: int, n: int, z: float = Z95) -> Interval:
    """Wilson score interval of a proportion; stays inside [0, 1] and is sane at 0/n and n/n.

    >>> i = wilson(8, 10); round(i.low, 4), round(i.high, 4)
    (0.4902, 0.9433)
    """
    if n < 0 or not 0 <= wins <= n:
        raise ValueError(f"wilson: need 0 <= wins <= n, got wins={wins}, n={n}")
    if n == 0:
        return Interval(float("nan"), 0.0, 1.0, 0)
    p = wins / n
    z2 = z * z
    center = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return Interval(p, max(0.0, center - half), min(1.0, center + half), n)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts of a paired design.

    ``b``: pairs where only the first condition won; ``c``: only the second. Under the null
    each discordant pair is a fair coin, so p = P(Binomial(b + c, 1/2) as extreme as seen).

    >>> mcnemar_exact(1, 8)
    0.0390625
    """
    if b < 0 or c < 0:
        raise ValueError(f"mcnemar_exact: counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def _percentiles(draw: Callable[[random.Random], float], resamples: int, seed: int):
    """Percentile 95% interval of a statistic over ``resamples`` seeded bootstrap draws."""
    rng = random.Random(seed)
    values = sorted(draw(rng) for _ in range(resamples))
    return values[int(0.025 * (resamples - 1))], values[math.ceil(0.975 * (resamples - 1))]


def _resample_mean(xs: Sequence[float], rng: random.Random) -> float:
    return _mean([xs[rng.randrange(len(xs))] for _ in xs])


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def bootstrap_mean_ci(values: Sequence[float], resamples: int = 2000, seed: int = 0) -> Interval:
    """Mean with a percentile bootstrap 95% interval (rewards are not normal: clamps, penalties)."""
    xs = [float(v) for v in values]
    if not xs:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    lo, hi = _percentiles(lambda rng: _resample_mean(xs, rng), resamples, seed)
    return Interval(_mean(xs), lo, hi, len(xs))


def bootstrap_ratio_ci(
    numerator: Sequence[float], denominator: Sequence[float], resamples: int = 2000, seed: int = 0
) -> Interval:
    """``mean(numerator) / mean(denominator)`` over paired observations, resampling pairs
    (a share of a per-instance headroom: a ratio of means, stable where single headroom
    values are near 0); NaN where the denominator's mean is 0 (a resample whose
    denominator sums to 0 counts as 0).

    >>> bootstrap_ratio_ci([1.0, 2.0], [2.0, 4.0]).estimate
    0.5
    """
    if len(numerator) != len(denominator):
        raise ValueError(f"bootstrap_ratio_ci: {len(numerator)} vs {len(denominator)} values")
    pairs = [(float(a), float(b)) for a, b in zip(numerator, denominator, strict=True)]
    if not pairs:
        return Interval(float("nan"), float("nan"), float("nan"), 0)

    def ratio(sample: Sequence[tuple[float, float]]) -> float:
        den = sum(b for _, b in sample)
        return sum(a for a, _ in sample) / den if den else float("nan")

    def draw(rng: random.Random) -> float:
        value = ratio([pairs[rng.randrange(len(pairs))] for _ in pairs])
        return 0.0 if math.isnan(value) else value

    lo, hi = _percentiles(draw, resamples, seed)
    return Interval(ratio(pairs), lo, hi, len(pairs))


def paired_bootstrap_diff(
    first: Sequence[float], second: Sequence[float], resamples: int = 2000, seed: int = 0
) -> Interval:
    """Mean of ``second - first`` over pairs, resampling pairs: the interval of a paired gain.

    With 0/1 outcomes this is the win-rate difference of two conditions on the same seeds.
    """
    if len(first) != len(second):
        raise ValueError(f"paired_bootstrap_diff: {len(first)} vs {len(second)} values")
    diffs = [float(b) - float(a) for a, b in zip(first, second, strict=True)]
    return bootstrap_mean_ci(diffs, resamples, seed)


def held_out_comparison(
    names: tuple[str, str], first: Sequence[float], second: Sequence[float], seed: int = 0
) -> tuple[dict, dict[str, float]]:
    """Win rates of two choices on the same held-out seeds (``first``: the baseline) and the
    paired gain of ``second``: the record (``{name: wilson, "difference": gain}``, empty
    without games) and its metrics (``win_rate_<name>``, ``win_rate_gain`` and its bounds)."""
    if not second:
        return {}, {}
    diff = paired_bootstrap_diff(first, second, seed=seed)
    rates = {name: wilson(sum(x), len(x)) for name, x in zip(names, (first, second), strict=True)}
    record = {**{k: v.to_dict() for k, v in rates.items()}, "difference": diff.to_dict()}
    metrics = {f"win_rate_{k}": v.estimate for k, v in rates.items()} | {
        "win_rate_gain": diff.estimate,
        "win_rate_gain_low": diff.low,
        "win_rate_gain_high": diff.high,
    }
    return record, metrics


def bootstrap_diff(
    first: Sequence[float], second: Sequence[float], resamples: int = 2000, seed: int = 0
) -> Interval:
    """Difference of means ``mean(second) - mean(first)`` of two unpaired samples."""
    a, b = [float(x) for x in first], [float(x) for x in second]
    if not a or not b:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    lo, hi = _percentiles(
        lambda rng: _resample_mean(b, rng) - _resample_mean(a, rng), resamples, seed
    )
    return Interval(_mean(b) - _mean(a), lo, hi, min(len(a), len(b)))


#: the exact McNemar test's level: a win-rate difference counts only at p < ALPHA
ALPHA = 0.05
NOT_SIGNIFICANT = "no significant difference (interval includes 0)"
#: below this many paired units a bootstrap interval is not trusted (2 points give a
#: degenerate interval that can exclude 0 by chance)
MIN_UNITS = 10


def verdict(interval: Interval, p_value: float | None = None) -> tuple[bool, str]:
    """Whether a difference is reported as one, and the words for it."""
    if p_value is None and interval.n < MIN_UNITS:
        return False, f"too few to conclude (n={interval.n} < {MIN_UNITS})"
    if interval.includes_zero():
        return False, NOT_SIGNIFICANT
    if p_value is not None and p_value >= ALPHA:  # e.g. one discordant game: no interval width
        return False, f"no significant difference (exact McNemar p = {p_value:.2g} >= {ALPHA})"
    return True, "gain" if interval.estimate > 0 else "loss"


__all__ = [
    "held_out_comparison",
    "Interval",
    "ALPHA",
    "MIN_UNITS",
    "NOT_SIGNIFICANT",
    "bootstrap_diff",
    "bootstrap_mean_ci",
    "mcnemar_exact",
    "paired_bootstrap_diff",
    "verdict",
    "wilson",
]
