"""Comparing nested scores (``[candidate][response][token]``) of two scoring paths."""

from __future__ import annotations


def max_diff(a, b) -> float:
    """The largest absolute difference; zip(strict) also checks every shape agrees."""
    return max(
        abs(x - y)
        for ra, rb in zip(a, b, strict=True)
        for sa, sb in zip(ra, rb, strict=True)
        for x, y in zip(sa, sb, strict=True)
    )
