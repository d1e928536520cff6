"""What a game's tournament records say: win rates by camp and role, paired tests, seat counts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from stackelberg.evaluation.stats import (
    Interval,
    mcnemar_exact,
    paired_bootstrap_diff,
    verdict,
    wilson,
)
from stackelberg.evaluation.tournament import BEST_OF_COUNTS, Record, parse_condition


def rate(wins: int, n: int) -> dict[str, Any]:
    """A win rate with its Wilson 95% interval, as stored in metrics.json."""
    i = wilson(wins, n)
    return {"wins": wins, "n": n, "rate": i.estimate if n else None, "ci": [i.low, i.high]}


def _role_outcomes(record: Record) -> dict[str, bool]:
    """Per role held by the tested camp: did a tested holder win (one entry per game)."""
    out: dict[str, bool] = {}
    for p in record["players"]:
        if p["tested"]:
            out[p["role"]] = out.get(p["role"], False) or p["won"]
    return out


def win_rates(records: Iterable[Record]) -> dict[str, dict[str, Any]]:
    """Per condition: overall, per camp and per (dealt) role win rates with intervals."""
    counts: dict[str, dict[str, dict[str, list[int]]]] = defaultdict(
        lambda: {
            "overall": defaultdict(lambda: [0, 0]),
            "camps": defaultdict(lambda: [0, 0]),
            "roles": defaultdict(lambda: [0, 0]),
        }
    )
    for r in records:
        c = counts[r["condition"]]
        for bucket, key, won in (
            ("overall", "all", r["win"]),
            ("camps", r["camp"], r["win"]),
            *(("roles", role, w) for role, w in _role_outcomes(r).items()),
        ):
            c[bucket][key][0] += bool(won)
            c[bucket][key][1] += 1
    out: dict[str, dict[str, Any]] = {}
    for condition, c in counts.items():
        out[condition] = {
            "overall": rate(*c["overall"]["all"]),
            "camps": {k: rate(*v) for k, v in sorted(c["camps"].items())},
            "roles": {k: rate(*v) for k, v in sorted(c["roles"].items())},
        }
    return out


def seat_counts(records: Iterable[Record], keys: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per condition: the games and the sums of ``keys`` over every LLM seat, so that a
    reader sees what the re-asks cost: the generated choices (``CHOICE_COUNTS``: answers
    asked for, re-asks, random fallbacks) or the speeches (``SPEECH_COUNTS``: samples asked
    for, re-asks of echoes, fallback lines). A record from before a key existed counts 0."""
    out: dict[str, dict[str, int]] = {}
    for r in records:
        c = out.setdefault(r["condition"], {"games": 0, **dict.fromkeys(keys, 0)})
        c["games"] += 1
        for key in keys:
            c[key] += r.get(key, 0)
    return out


def best_of_calls(records: Iterable[Record]) -> dict[str, Any]:
    """``{"best_of_calls": ...}``: per ``bestN+X`` condition, its games and the sums of
    ``BEST_OF_COUNTS`` (speeches, Refiner samples, Measurer calls), the calls a speech
    spends; empty when none was played (metrics.json then has no such entry)."""
    searched = [r for r in records if BEST_OF_COUNTS[0] in r]
    return {"best_of_calls": seat_counts(searched, BEST_OF_COUNTS)} if searched else {}


def default_pairs(conditions: Iterable[str]) -> list[tuple[str, str]]:
    """(X, refiner+X) and (X, bestN+X) for every X whose wrapped condition was played too."""
    names = list(dict.fromkeys(conditions))
    parsed = {c: parse_condition(c) for c in names}
    return [(p.kind, c) for c, p in parsed.items() if p.wrapped and p.kind in names]


def paired_test(
    records: Iterable[Record],
    base: str,
    treated: str,
    camp: str | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """``treated`` against ``base`` on the games both played (same camp and seed)."""
    outcome: dict[str, dict[tuple[str, int], bool]] = {base: {}, treated: {}}
    for r in records:
        if r["condition"] in outcome and (camp is None or r["camp"] == camp):
            outcome[r["condition"]][(r["camp"], r["seed"])] = bool(r["win"])
    keys = sorted(outcome[base].keys() & outcome[treated].keys())
    a = [outcome[base][k] for k in keys]
    t = [outcome[treated][k] for k in keys]
    b = sum(x and not y for x, y in zip(a, t, strict=True))
    c = sum(y and not x for x, y in zip(a, t, strict=True))
    p = mcnemar_exact(b, c)
    diff = paired_bootstrap_diff(a, t, resamples, seed) if keys else Interval(0.0, 0.0, 0.0, 0)
    significant, words = verdict(diff, p)
    n = len(keys)
    return {
        "base": base,
        "treated": treated,
        "camp": camp or "all",
        "n": n,
        "base_rate": sum(a) / n if n else None,
        "treated_rate": sum(t) / n if n else None,
        "diff": diff.estimate,
        "ci": [diff.low, diff.high],
        "b": b,
        "c": c,
        "p_value": p,
        "significant": significant,
        "verdict": words,
    }


def paired_tests(
    records: Sequence[Record],
    pairs: Sequence[tuple[str, str]] | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Every pair, over all camps and per camp."""
    pairs = default_pairs(r["condition"] for r in records) if pairs is None else pairs
    camps = list(dict.fromkeys(r["camp"] for r in records))
    return [
        paired_test(records, base, treated, camp, resamples, seed)
        for base, treated in pairs
        for camp in (None, *camps)
    ]


__all__ = [
    "best_of_calls",
    "default_pairs",
    "paired_test",
    "paired_tests",
    "rate",
    "seat_counts",
    "win_rates",
]
