"""Win rates and paired tests from tournament records; the content of ``metrics.json``.

``game_metrics`` builds the metrics of one game (layout below, ``METRICS_VERSION``); the
report, the plots and the MLflow logging all read that one dict, so they cannot disagree.

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
      "reward_gain": {...the same keys...}}}  # each prompt's reward less its baseline

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
``training`` is null when no prompt rewards were given (a run trained before they were kept).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stackelberg.evaluation.held_out import held_out_mlflow
from stackelberg.evaluation.stats import (
    Interval,
    bootstrap_diff,
    bootstrap_mean_ci,
    mcnemar_exact,
    paired_bootstrap_diff,
    wilson,
)
from stackelberg.evaluation.tournament import (
    BEST_OF_COUNTS,
    CHOICE_COUNTS,
    SPEECH_COUNTS,
    Record,
    parse_condition,
    refiner_rates,
)
from stackelberg.evaluation.training_curve import MIN_STEPS, reward_rise
from stackelberg.evaluation.transfer import transfer_mlflow
from stackelberg.games import game_spec

METRICS_VERSION = 1
#: the Refiner runs of ``refiner_outputs``, in reading order: the sample stage's candidates,
#: GRPO training, the held-out candidates of the untrained and of the trained Refiner, and
#: the trained Refiner's speeches in the tournaments
REFINER_RUNS = ("sample", "grpo", "held_out_before", "held_out_after", "tournament")
ALPHA = 0.05
NOT_SIGNIFICANT = "no significant difference (interval includes 0)"
#: the verdicts of the training reward's rise (``training_summary``)
RISES, FALLS, NO_CLEAR_CHANGE = "rises", "falls", "no clear change"


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
) -> dict[str, Any]:
    """The metrics.json content of one game (see the module docstring); ``game`` names it
    when there are no tournament records to take the name from; ``step_rewards`` are GRPO's
    prompt rewards by step (``training.prompt_rewards.step_prompt_rewards``), ``step_gains``
    the same less each prompt's untrained baseline (``training_curve.gain_over_baseline``)."""
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
        "training": training_summary(step_rewards, resamples, seed, step_gains),
    }


def training_summary(
    step_rewards: Mapping[int, Sequence[float]] | None,
    resamples: int = 2000,
    seed: int = 0,
    step_gains: Mapping[int, Sequence[float]] | None = None,
) -> dict[str, Any] | None:
    """The ``training`` entry (module docstring): the reward's rise over the GRPO run and,
    given ``step_gains`` (``training_curve.gain_over_baseline``), the rise of each prompt's
    reward over its untrained baseline, with the same verdict rule as the held-out reward
    (``verdict``) in words fit for a curve."""
    if step_rewards is None:
        return None
    out = {"reward_rise": _rise_entry(step_rewards, resamples, seed)}
    if step_gains is not None:
        out["reward_gain"] = _rise_entry(step_gains, resamples, seed)
    return out


def _rise_entry(
    step_rewards: Mapping[int, Sequence[float]], resamples: int, seed: int
) -> dict[str, Any]:
    """One window comparison of ``training_summary`` with its verdict."""
    rise = reward_rise(step_rewards, resamples=resamples, seed=seed)
    if rise is None:
        n = len(step_rewards)
        return {
            "estimate": None,
            "ci": None,
            "steps": n,
            "significant": False,
            "verdict": f"too few steps ({n} < {MIN_STEPS})",
        }
    significant, words = verdict(rise.diff)
    if significant:
        words = RISES if rise.diff.estimate > 0 else FALLS
    elif words == NOT_SIGNIFICANT:
        words = NO_CLEAR_CHANGE
    return {**rise.to_dict(), "significant": significant, "verdict": words}


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


def metric_key(name: str) -> str:
    """A condition, camp or role as an MLflow metric-name part (no '+' allowed there)."""
    return name.replace("+", "-")


def mlflow_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """metrics.json flattened to MLflow metric names ``stat/game/condition/scope``.

    ``stat`` is winrate, wins or games; scope is ``overall``, ``camp.X`` or ``role.X``;
    the LLM seats' counts ``choices/game/condition/KEY`` (``CHOICE_COUNTS``) and
    ``speeches/game/condition/KEY`` (``SPEECH_COUNTS``), a best-of speaker's
    ``best_of_calls/game/condition/KEY`` (``BEST_OF_COUNTS``);
    paired tests give ``paired/game/base_vs_treated/{diff,p_value}`` (all camps), rewards
    ``reward/game/{before,after,diff}``, Refiner outputs
    ``refiner/game/run/{ended_rate,parse_rate}``, the training reward's rise
    held-out details ``held_out/game/...`` (``held_out.held_out_mlflow``; the joint Refiner's
    and both views': ``transfer.transfer_mlflow``),
    ``training/game/{reward_rise,reward_rise_low,reward_rise_high,reward_first,reward_last,
    steps,reward_gain,reward_gain_low,reward_gain_high}``. ``ablation_from_mlflow`` reads these names.
    """
    game = metrics["game"]
    out: dict[str, float] = {}
    for condition, rates in metrics["conditions"].items():
        scopes = {"overall": rates["overall"]}
        scopes |= {f"camp.{k}": v for k, v in rates["camps"].items()}
        scopes |= {f"role.{k}": v for k, v in rates["roles"].items()}
        for scope, r in scopes.items():
            stem = f"{game}/{metric_key(condition)}/{metric_key(scope)}"
            out[f"wins/{stem}"] = float(r["wins"])
            out[f"games/{stem}"] = float(r["n"])
            if r["rate"] is not None:
                out[f"winrate/{stem}"] = float(r["rate"])
    blocks = (
        ("choices", CHOICE_COUNTS),
        ("speeches", SPEECH_COUNTS),
        ("best_of_calls", BEST_OF_COUNTS),
    )
    for block, keys in blocks:
        for condition, counts in (metrics.get(block) or {}).items():
            for key in keys:
                out[f"{block}/{game}/{metric_key(condition)}/{key}"] = float(counts[key])
    for t in metrics["paired"]:
        if t["camp"] == "all" and t["n"]:
            stem = f"paired/{game}/{metric_key(t['base'])}_vs_{metric_key(t['treated'])}"
            out[f"{stem}/diff"] = float(t["diff"])
            out[f"{stem}/p_value"] = float(t["p_value"])
    scores = metrics.get("scores") or {}
    for condition, dims in (scores.get("conditions") or {}).items():
        for dim, part in dims.items():
            if isinstance(part, dict) and part["n"]:
                out[f"score/{game}/{metric_key(condition)}/{dim}"] = float(part["estimate"])
    for t in scores.get("paired") or ():
        if t["n"]:
            stem = f"paired/{game}/{metric_key(t['base'])}_vs_{metric_key(t['treated'])}"
            out[f"{stem}/{t['dimension']}_diff"] = float(t["diff"])
    if metrics.get("reward"):
        for part in ("before", "after", "diff"):
            out[f"reward/{game}/{part}"] = float(metrics["reward"][part]["estimate"])
    for run, rates in (metrics.get("refiner_outputs") or {}).items():
        for key in ("ended_rate", "parse_rate"):
            if rates.get(key) is not None:
                out[f"refiner/{game}/{run}/{key}"] = float(rates[key])
    rise = (metrics.get("training") or {}).get("reward_rise") or {}
    if rise.get("estimate") is not None:
        stem = f"training/{game}"
        out[f"{stem}/reward_rise"] = float(rise["estimate"])
        out[f"{stem}/reward_rise_low"], out[f"{stem}/reward_rise_high"] = map(float, rise["ci"])
        out[f"{stem}/reward_first"] = float(rise["first"])
        out[f"{stem}/reward_last"] = float(rise["last"])
        out[f"{stem}/steps"] = float(rise["steps"])
    gain = (metrics.get("training") or {}).get("reward_gain") or {}
    if gain.get("estimate") is not None:
        stem = f"training/{game}"
        out[f"{stem}/reward_gain"] = float(gain["estimate"])
        out[f"{stem}/reward_gain_low"], out[f"{stem}/reward_gain_high"] = map(float, gain["ci"])
    out |= held_out_mlflow(game, metrics.get("held_out") or {})
    out |= transfer_mlflow(game, metrics.get("held_out") or {})
    return out


__all__ = [
    "METRICS_VERSION",
    "NOT_SIGNIFICANT",
    "REFINER_RUNS",
    "default_pairs",
    "game_metrics",
    "metric_key",
    "mlflow_metrics",
    "paired_test",
    "paired_tests",
    "rate",
    "refiner_output_rates",
    "refiner_runs",
    "score_metrics",
    "reward_summary",
    "training_summary",
    "verdict",
    "win_rates",
]
