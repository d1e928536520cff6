"""The training reward's rise, last 20% of steps against the first, on hand-made runs."""

from __future__ import annotations

import json
import math

import pytest

from stackelberg.evaluation.metrics import (
    FALLS,
    NO_CLEAR_CHANGE,
    RISES,
    game_metrics,
    mlflow_metrics,
    training_summary,
)
from stackelberg.evaluation.training_curve import (
    gain_over_baseline,
    revisit_pairs,
    reward_rise,
    window_steps,
)

# Ten steps of five prompts: a window is two steps, ten prompts (MIN_UNITS, enough to judge).
NOISE = [-0.2, 0.1, 0.0, 0.2, -0.1]
RISING = {s: [0.1 * s + e for e in NOISE] for s in range(1, 11)}
# Flat: the first and last windows draw on the same noise, their means 0.01 and 0.06.
FIRST = [0.9, -1.1, 0.3, -0.2, 1.4, -0.8, 0.1, -0.6, 0.5, -0.4]
LAST = [-0.7, 1.2, -0.3, 0.6, -1.0, 0.2, 0.8, -0.5, -0.1, 0.4]
FLAT = {1: FIRST[:5], 2: FIRST[5:]} | {s: NOISE for s in range(3, 9)} | {9: LAST[:5], 10: LAST[5:]}


@pytest.mark.parametrize("steps, window", [(10, 2), (9, 1), (30, 6), (35, 7), (4, 1), (2, 1)])
def test_a_window_is_a_fifth_of_the_steps_rounded_down_and_one_at_least(steps, window):
    assert window_steps(steps) == window


def test_the_windows_compare_the_first_and_last_steps_prompts():
    rise = reward_rise(RISING, resamples=500)
    assert (rise.steps, rise.window_steps, rise.n_first, rise.n_last) == (10, 2, 10, 10)
    assert rise.first_mean == pytest.approx(0.15)  # steps 1-2: 0.1 and 0.2, the noise mean 0
    assert rise.last_mean == pytest.approx(0.95)  # steps 9-10
    assert rise.diff.estimate == pytest.approx(0.8)


def test_a_rising_run_has_an_interval_above_zero_and_rises():
    rise = reward_rise(RISING, resamples=500)
    assert 0 < rise.diff.low < 0.8 < rise.diff.high
    summary = training_summary(RISING, resamples=500)["reward_rise"]
    assert (summary["verdict"], summary["significant"]) == (RISES, True)


def test_a_falling_run_falls():
    falling = {s: RISING[11 - s] for s in RISING}
    rise = reward_rise(falling, resamples=500)
    assert rise.diff.estimate == pytest.approx(-0.8) and rise.diff.high < 0
    assert training_summary(falling, resamples=500)["reward_rise"]["verdict"] == FALLS


def test_a_flat_noisy_run_includes_zero_and_shows_no_clear_change():
    rise = reward_rise(FLAT, resamples=1000)
    assert rise.diff.estimate == pytest.approx(0.05)
    assert rise.diff.low < 0 < rise.diff.high
    summary = training_summary(FLAT, resamples=1000)["reward_rise"]
    assert (summary["verdict"], summary["significant"]) == (NO_CLEAR_CHANGE, False)


def test_the_interval_is_seeded_and_the_steps_taken_in_order():
    shuffled = dict(reversed(list(FLAT.items())))
    a, b = reward_rise(FLAT, seed=3), reward_rise(shuffled, seed=3)
    assert a == b and a != reward_rise(FLAT, seed=4)


def test_too_few_prompts_in_a_window_are_too_few_to_conclude():
    one_prompt = {s: [0.1 * s] for s in range(1, 11)}  # windows of two prompts: no spread
    summary = training_summary(one_prompt, resamples=200)["reward_rise"]
    assert summary["n_first"] == summary["n_last"] == 2 and summary["estimate"] > 0
    assert not summary["significant"] and summary["verdict"].startswith("too few to conclude")


@pytest.mark.parametrize("steps", [{}, {4: [0.5, 0.7]}])
def test_fewer_than_two_steps_have_no_rise(steps):
    assert reward_rise(steps) is None
    summary = training_summary(steps)["reward_rise"]
    assert summary["estimate"] is None and summary["steps"] == len(steps)
    assert summary["verdict"] == f"too few steps ({len(steps)} < 2)"


def test_two_steps_compare_the_first_with_the_last():
    rise = reward_rise({1: [0.0, 0.2], 2: [0.5, 0.7]}, resamples=200)
    assert rise.window_steps == 1 and rise.diff.estimate == pytest.approx(0.5)


@pytest.mark.parametrize(
    "steps, share, match",
    [
        ({1: [0.1], 2: [], 3: [0.2]}, 0.2, "step 2 needs one finite reward"),
        ({1: [0.1], 2: [math.nan]}, 0.2, "step 2 needs one finite reward"),
        ({1: [0.1], 2: [0.2]}, 0.6, r"window share 0.6: must be in \(0, 0.5\]"),
    ],
)
def test_bad_input_fails_in_one_line(steps, share, match):
    with pytest.raises(ValueError, match=match):
        reward_rise(steps, share=share)


def test_the_rise_lands_in_metrics_json_and_mlflow():
    m = game_metrics([], game="onuw", step_rewards=RISING, resamples=500)
    rise = json.loads(json.dumps(m))["training"]["reward_rise"]
    assert rise["estimate"] == pytest.approx(0.8) and rise["steps"] == 10
    flat = mlflow_metrics(m)
    assert flat["training/onuw/reward_rise"] == pytest.approx(0.8)
    assert [flat[f"training/onuw/reward_rise_{e}"] for e in ("low", "high")] == rise["ci"]
    assert flat["training/onuw/reward_first"] == pytest.approx(0.15)
    assert flat["training/onuw/reward_last"] == pytest.approx(0.95)
    assert flat["training/onuw/steps"] == 10.0
    assert game_metrics([], game="onuw")["training"] is None  # no prompt rewards kept
    few = mlflow_metrics(game_metrics([], game="onuw", step_rewards={1: [0.3]}))
    assert not [k for k in few if k.startswith("training/")]


# Ten steps, each of two prompts of very different difficulty, every prompt visited in the
# first and the last window; each gains 0.05 a step over its untrained baseline, with noise.
HARD = {f"hard{i}": -2.0 + 0.1 * i for i in range(10)}
EASY = {f"easy{i}": 2.0 + 0.1 * i for i in range(10)}
BASELINES = HARD | EASY
WOBBLE = [0.04, -0.03, 0.02, -0.05, 0.01, 0.03, -0.02, 0.05, -0.04, -0.01]


def by_prompt_run(order: list[list[str]]) -> dict[int, dict[str, float]]:
    """Step -> its prompts' rewards: each prompt at its baseline plus 0.05 a step."""
    return {
        s: {k: BASELINES[k] + 0.05 * s + WOBBLE[(s + i) % 10] for i, k in enumerate(prompts)}
        for s, prompts in enumerate(order, 1)
    }


def test_the_gain_sees_a_rise_that_prompt_difficulty_hides_from_the_raw_rise():
    # The first window (steps 1-2) draws the easy prompts, the last (9-10) the hard ones,
    # ten each: the raw reward falls while every prompt gains.
    easy, hard = list(EASY), list(HARD)
    order = [easy[:5], easy[5:]] + [hard[i : i + 3] + easy[i : i + 2] for i in range(6)]
    order += [hard[:5], hard[5:]]
    run = by_prompt_run(order)
    raw = {s: list(r.values()) for s, r in run.items()}
    gains = gain_over_baseline(run, BASELINES)
    summary = training_summary(raw, resamples=1000, step_gains=gains)
    assert summary["reward_rise"]["verdict"] == FALLS
    gain = summary["reward_gain"]
    assert gain["estimate"] == pytest.approx(0.05 * (9.5 - 1.5), abs=0.02)
    assert gain["ci"][0] > 0 and gain["verdict"] == RISES


def test_the_gain_leaves_out_prompts_without_a_baseline_and_lands_in_mlflow():
    run = {s: {"a": 1.0 + s, "b": 2.0, "nobase": 9.0} for s in range(1, 11)}
    gains = gain_over_baseline(run, {"a": 1.0, "b": 2.0})
    assert gains[1] == [1.0, 0.0] and gains[10] == [10.0, 0.0]
    raw = {s: list(r.values()) for s, r in run.items()}
    m = game_metrics([], game="onuw", step_rewards=raw, step_gains=gains, resamples=200)
    flat = mlflow_metrics(m)
    assert flat["training/onuw/reward_gain"] == pytest.approx(
        m["training"]["reward_gain"]["estimate"]
    )
    assert [flat[f"training/onuw/reward_gain_{e}"] for e in ("low", "high")] == m["training"][
        "reward_gain"
    ]["ci"]
    assert "reward_gain" not in game_metrics([], game="onuw", step_rewards=raw)["training"]


def two_epoch_run(per_visit: float) -> dict[int, dict[str, float]]:
    """Ten steps over the twenty prompts of BASELINES twice (four a step, in the same order each
    epoch): each prompt at its baseline plus ``per_visit`` at its second visit, and noise."""
    keys = list(BASELINES)
    run = {}
    for s in range(1, 11):
        epoch, slot = divmod(s - 1, 5)
        run[s] = {
            k: BASELINES[k] + per_visit * epoch + WOBBLE[(s + i) % 10]
            for i, k in enumerate(keys[4 * slot : 4 * slot + 4])
        }
    return run


def test_the_revisit_pairs_a_prompts_first_and_last_visit_whatever_its_difficulty():
    # The prompts' baselines spread from -2 to 3 (hard and easy): a prompt's second visit
    # minus its first sees only what training added to it.
    learned, flat = two_epoch_run(0.3), two_epoch_run(0.0)
    for run, per_visit in ((learned, 0.3), (flat, 0.0)):
        pairs = revisit_pairs(run)
        assert sorted(pairs) == sorted(BASELINES)  # every prompt seen twice
        raw = {s: list(r.values()) for s, r in run.items()}
        revisit = training_summary(raw, resamples=1000, revisits=pairs)["reward_revisit"]
        assert revisit["estimate"] == pytest.approx(per_visit, abs=0.03)
        assert revisit["n_first"] == revisit["n_last"] == 20 and revisit["steps"] == 10
    assert (
        training_summary({1: [0.0]}, revisits=revisit_pairs(learned))["reward_revisit"]["verdict"]
        == RISES
    )
    assert (
        training_summary({1: [0.0]}, revisits=revisit_pairs(flat))["reward_revisit"]["verdict"]
        == NO_CLEAR_CHANGE
    )


def test_a_single_pass_has_no_revisit_and_a_revisit_lands_in_mlflow():
    one_pass = {s: {f"p{s}": 0.1 * s} for s in range(1, 11)}
    assert revisit_pairs(one_pass) == {}
    raw = {s: list(r.values()) for s, r in one_pass.items()}
    assert "reward_revisit" not in training_summary(raw, revisits=revisit_pairs(one_pass))
    run = two_epoch_run(0.3)
    raw = {s: list(r.values()) for s, r in run.items()}
    m = game_metrics([], game="onuw", step_rewards=raw, revisits=revisit_pairs(run), resamples=200)
    flat = mlflow_metrics(m)
    entry = m["training"]["reward_revisit"]
    assert flat["training/onuw/reward_revisit"] == pytest.approx(entry["estimate"])
    assert [flat[f"training/onuw/reward_revisit_{e}"] for e in ("low", "high")] == entry["ci"]
