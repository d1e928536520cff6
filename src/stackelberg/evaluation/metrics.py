"""The content of ``metrics.json``: ``game_metrics`` assembles one game's from its parts.

``game_metrics`` builds the metrics of one game (layout below, ``METRICS_VERSION``): the
tournaments' win rates, seat counts and paired tests (``tournament_stats``) or a scored
game's dimensions (``dimension_scores``), the held-out reward (``reward_summary``), the
Refiner's output rates and the training reward's rise (``training_curve``); the report,
the plots and the MLflow logging (``mlflow_names``) all read that one dict, so they cannot
disagree. Every difference is called a gain or a loss by one rule, ``stats.verdict``.

Layout of ``reports/{game}/metrics.json``::

    {"version": 1, "game": "onuw", "opponent": "direct", "seeds": [0, 1, ...],
     "conditions": {                      # one entry per condition (tested agent)
       "react": {
         "overall": {"wins": 21, "n": 64, "rate": 0.328, "ci": [0.225, 0.451]},
         "camps": {"werewolf": {...same keys...}, "village": {...}},
         "roles": {"seer": {...}, "werewolf": {...}}}},   # roles held by the tested camp
     "choices": {"react": {"games": 64, "choice_asks": 900, "choice_reasks": 12,
                           "invalid_choices": 1}},   # generated choices of all LLM seats
     "speeches": {"react": {"games": 64, "speech_asks": 700, "speech_reasks": 40,
                            "fallback_speeches": 5}},  # speeches of all LLM seats
     "best_of_calls": {"best4+react": {"games": 64, "best_of_speeches": 300,  # bestN+X only
                       "best_of_samples": 1200, "best_of_measurer_calls": 240}},
     "paired": [                          # X against refiner+X (and bestN+X), same (camp, seed)
       {"base": "react", "treated": "refiner+react", "camp": "all", "n": 64,
        "base_rate": 0.328, "treated_rate": 0.375, "diff": 0.047, "ci": [-0.06, 0.16],
        "b": 5, "c": 8, "p_value": 0.58, "significant": false,
        "verdict": "no significant difference (interval includes 0)"}, ...],
     "reward": {"before": {"estimate": -3.1, "ci": [-3.5, -2.7], "n": 48},
                "after": {...}, "diff": {...}, "significant": true, "verdict": "gain"},
     "scores": {...},                     # scored games only (Sotopia): see score_metrics
     "refiner_outputs": {                 # per Refiner run (REFINER_RUNS): its completions,
       "sample": {"completions": 32, "ended_rate": 0.91, "parse_rate": 0.97},  # the share
       "grpo": {...}, "held_out_before": {...}, "held_out_after": {...}},  # ended, parsed
     "training": {"reward_rise": {        # GRPO's prompt rewards, last 20% of steps - first
       "estimate": 0.31, "ci": [0.12, 0.5], "first": -0.4, "last": -0.09,
       "n_first": 16, "n_last": 16, "steps": 40, "window_steps": 8,
       "significant": true, "verdict": "rises"},
      "reward_gain": {...the same keys...},  # each prompt's reward less its baseline
      "reward_revisit": {...the same keys but window_steps...}}}  # more than one epoch

A scored game (its GameSpec has ``dimensions``: Sotopia) has no winners to count: its
``conditions`` and ``paired`` are empty, and ``scores`` holds, per condition and dimension,
the tested seats' mean score with a bootstrap 95% interval, and per (X, refiner+X) pair and
dimension the paired bootstrap difference (``score_metrics``).

Rates: ``overall`` pools the games of every camp played; a camp's game is a win when that
camp's team is among the winners (ONUW: "village+tanner" counts for both). ``roles`` count
each game once per role held by the tested camp (DEALT role), won when a tested holder of
it won (in Werewolf and Avalon all holders share the camp's outcome; in ONUW a seat's own
win depends on its final card). Intervals are Wilson 95%; ``n`` is games.
``paired``: ``b`` = games only the base won, ``c`` = only the treated won; ``p_value`` is
the exact McNemar test, ``ci`` a paired bootstrap 95% interval of the difference in win
rate (treated - base). A difference is called a gain or a loss only when p < 0.05 and its
interval excludes 0. ``reward``: held-out Measurer reward of the base and the trained
Refiner, bootstrap 95% intervals; ``diff`` = after - before (paired when both lists are
the same instances in the same order). ``reward`` is null when no rewards were given.
``refiner_outputs``: how the Refiner's completions came out in each run: the share that
ended on their own (end-of-sequence or the stop) before the token limit, measured from
the generation (token counts; in GRPO, 1 - TRL's ``completions/clipped_ratio``), and the
share that parsed (a usable speech in the asked format); empty when none was given.
``training``: whether GRPO raised the reward (``training_curve.reward_rise``): the mean of
the prompts' rewards (each the mean of its GRPO group) in the last 20% of steps minus the
first 20%, a bootstrap 95% interval resampling each window's prompts, and a verdict: rises or
falls when the interval excludes 0, "no clear change" when it does not, too few to conclude
below ``MIN_UNITS`` prompts in a window, and too few steps (``estimate`` null) below two.
``reward_gain`` (given the untrained Refiner's scores): the same with each prompt's reward
less its baseline, the untrained candidates' mean reward on that instance, so that the
windows compare gains, not which prompts fell in them (``training_curve``).
``reward_revisit`` (a run of more than one epoch): each revisited prompt's last visit minus
its first, a paired bootstrap over those prompts.
``training`` is null when no prompt rewards were given (a run trained before they were kept).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from stackelberg.evaluation.dimension_scores import score_metrics
from stackelberg.evaluation.mlflow_names import mlflow_metrics
from stackelberg.evaluation.stats import (
    NOT_SIGNIFICANT,
    bootstrap_diff,
    bootstrap_mean_ci,
    paired_bootstrap_diff,
    verdict,
)
from stackelberg.evaluation.tournament import (
    CHOICE_COUNTS,
    SPEECH_COUNTS,
    Record,
    refiner_rates,
)
from stackelberg.evaluation.tournament_stats import (
    best_of_calls,
    default_pairs,
    paired_test,
    paired_tests,
    seat_counts,
    win_rates,
)
from stackelberg.evaluation.training_curve import (
    FALLS,
    NO_CLEAR_CHANGE,
    RISES,
    training_summary,
)
from stackelberg.games import game_spec

METRICS_VERSION = 1
#: the Refiner runs of ``refiner_outputs``, in reading order: the sample stage's candidates,
#: GRPO training, the held-out candidates of the untrained and of the trained Refiner, and
#: the trained Refiner's speeches in the tournaments
REFINER_RUNS = ("sample", "grpo", "held_out_before", "held_out_after", "tournament")


def reward_summary(
    before: Sequence[float] | None,
    after: Sequence[float] | None,
    paired: bool = True,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any] | None:
    """Held-out reward before and after training, each with a bootstrap interval, and the
    difference (paired when asked and both lists have the same length)."""
    if not before or not after:
        return None
    pair = paired and len(before) == len(after)
    diff = (paired_bootstrap_diff if pair else bootstrap_diff)(before, after, resamples, seed)
    significant, words = verdict(diff)
    return {
        "before": bootstrap_mean_ci(before, resamples, seed).to_dict(),
        "after": bootstrap_mean_ci(after, resamples, seed).to_dict(),
        "diff": diff.to_dict(),
        "paired": pair,
        "significant": significant,
        "verdict": words,
    }


def game_metrics(
    records: Sequence[Record],
    reward_before: Sequence[float] | None = None,
    reward_after: Sequence[float] | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
    resamples: int = 2000,
    seed: int = 0,
    game: str | None = None,
    refiner_outputs: Mapping[str, Mapping[str, float]] | None = None,
    step_rewards: Mapping[int, Sequence[float]] | None = None,
    step_gains: Mapping[int, Sequence[float]] | None = None,
    revisits: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, Any]:
    """The metrics.json content of one game (see the module docstring); ``game`` names it
    when there are no tournament records to take the name from; ``step_rewards`` are GRPO's
    prompt rewards by step (``training.prompt_rewards.step_prompt_rewards``), ``step_gains``
    the same less each prompt's untrained baseline (``training_curve.gain_over_baseline``),
    ``revisits`` each revisited prompt's first and last reward (``training_curve.revisit_pairs``)."""
    games = {r["game"] for r in records} | ({game} if game else set())
    if len(games) > 1:
        raise ValueError(f"game_metrics: records of several games: {sorted(games)}")
    name = games.pop() if games else None
    dimensions = game_spec(name).dimensions if name else {}
    scored = (
        {"scores": score_metrics(records, dimensions, pairs, resamples, seed)} if dimensions else {}
    )
    return {
        "version": METRICS_VERSION,
        "game": name,
        "opponent": next((r["opponent"] for r in records), None),
        "seeds": sorted({r["seed"] for r in records}),
        # a scored game (Sotopia) reports its dimensions in place of win rates
        "conditions": {} if dimensions else win_rates(records),
        "choices": seat_counts(records, CHOICE_COUNTS),
        "speeches": seat_counts(records, SPEECH_COUNTS),
        **best_of_calls(records),
        "paired": [] if dimensions else paired_tests(records, pairs, resamples, seed),
        **scored,
        "reward": reward_summary(reward_before, reward_after, resamples=resamples, seed=seed),
        "refiner_outputs": refiner_output_rates(refiner_outputs),
        "training": training_summary(step_rewards, resamples, seed, step_gains, revisits),
    }


def refiner_runs(
    sample: Mapping[str, float] | None,
    grpo: Mapping[str, float],
    held_out: Mapping[str, Any],
    records: Sequence[Record],
) -> dict[str, Mapping[str, float]]:
    """The output rates of one game's Refiner runs, by run (``REFINER_RUNS``): the sample
    stage's candidates (``sample``; None without them), GRPO training (``grpo``), the
    held-out candidates of the untrained and the trained Refiner (``held_out``: the held-out
    reward, whose ``before_outputs`` and ``after_outputs`` exist when it had instances), and
    the trained Refiner's speeches in the tournament ``records`` (when it spoke)."""
    out: dict[str, Mapping[str, float]] = {} if sample is None else {"sample": sample}
    out["grpo"] = grpo
    for name in ("before", "after"):
        if f"{name}_outputs" in held_out:
            out[f"held_out_{name}"] = held_out[f"{name}_outputs"]
    if (tournament := refiner_rates(records)) is not None:
        out["tournament"] = tournament
    return out


def refiner_output_rates(
    runs: Mapping[str, Mapping[str, float]] | None,
) -> dict[str, dict[str, float | None]]:
    """The ``refiner_outputs`` entry: per run (known runs first), its completions and the
    ended and parse rates as plain numbers (None where not measured, e.g. NaN)."""
    runs = runs or {}
    order = [r for r in REFINER_RUNS if r in runs] + [r for r in runs if r not in REFINER_RUNS]

    def number(x: Any) -> float | None:
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)

    return {
        run: {
            "completions": int(runs[run].get("completions") or 0),
            "ended_rate": number(runs[run].get("ended_rate")),
            "parse_rate": number(runs[run].get("parse_rate")),
        }
        for run in order
    }


__all__ = [
    "METRICS_VERSION",
    "REFINER_RUNS",
    "game_metrics",
    "refiner_output_rates",
    "refiner_runs",
    "reward_summary",
    # defined in their own modules; the tests import them from here too
    "FALLS",
    "NOT_SIGNIFICANT",
    "NO_CLEAR_CHANGE",
    "RISES",
    "default_pairs",
    "mlflow_metrics",
    "paired_test",
    "training_summary",
    "win_rates",
]
