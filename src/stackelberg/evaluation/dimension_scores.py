"""A scored game's metrics (Sotopia): mean scores per dimension and their paired differences."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from stackelberg.evaluation.stats import (
    Interval,
    bootstrap_mean_ci,
    paired_bootstrap_diff,
    verdict,
)
from stackelberg.evaluation.tournament import Record
from stackelberg.evaluation.tournament_stats import default_pairs


def _tested_scores(record: Record, dimension: str) -> float | None:
    """The mean of a dimension over the tested seats of one game (None: not scored, e.g.
    the LLM evaluator failed on every tested seat)."""
    values = [
        p["scores"][dimension]
        for p in record["players"]
        if p["tested"] and p.get("scores") and dimension in p["scores"]
    ]
    return sum(values) / len(values) if values else None


def score_metrics(
    records: Sequence[Record],
    dimensions: Mapping[str, tuple[int, int]],
    pairs: Sequence[tuple[str, str]] | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The ``scores`` entry of a scored game: per condition and dimension, the tested
    seats' mean score with a bootstrap 95% interval (``n``: games scored; ``unscored``:
    games the evaluator failed on); per (X, refiner+X) pair and dimension, the paired
    bootstrap difference on the games both played (same camp and seed)."""
    by: dict[str, dict[str, dict[tuple[str, int], float]]] = defaultdict(lambda: defaultdict(dict))
    unscored: dict[str, int] = defaultdict(int)
    for r in records:
        for dim in dimensions:
            value = _tested_scores(r, dim)
            if value is not None:
                by[r["condition"]][dim][(r["camp"], r["seed"])] = value
        unscored[r["condition"]] += _tested_scores(r, next(iter(dimensions))) is None
    conditions = {
        c: {
            **{
                dim: bootstrap_mean_ci(list(by[c][dim].values()), resamples, seed).to_dict()
                for dim in dimensions
            },
            "unscored": unscored[c],
        }
        for c in dict.fromkeys(r["condition"] for r in records)
    }
    pairs = default_pairs(r["condition"] for r in records) if pairs is None else pairs
    paired = []
    for base, treated in pairs:
        for dim in dimensions:
            keys = sorted(by[base][dim].keys() & by[treated][dim].keys())
            a = [by[base][dim][k] for k in keys]
            t = [by[treated][dim][k] for k in keys]
            diff = paired_bootstrap_diff(a, t, resamples, seed) if keys else Interval(0, 0, 0, 0)
            significant, words = verdict(diff)
            paired.append(
                {
                    "base": base,
                    "treated": treated,
                    "dimension": dim,
                    "n": len(keys),
                    "base_mean": sum(a) / len(a) if a else None,
                    "treated_mean": sum(t) / len(t) if t else None,
                    "diff": diff.estimate,
                    "ci": [diff.low, diff.high],
                    "significant": significant,
                    "verdict": words,
                }
            )
    return {
        "dimensions": {d: list(r) for d, r in dimensions.items()},
        "conditions": conditions,
        "paired": paired,
    }


__all__ = ["score_metrics"]
