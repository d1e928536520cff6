"""Did GRPO raise the reward? The last steps of a run against its first, with an interval.

A rising per-step mean is weak evidence on its own: a step's mean rests on a few prompts, and
a noisy curve can end higher by chance. The rise is the mean reward of the prompts of the
last 20% of steps minus that of the first 20%, each prompt's reward the mean over its GRPO
group (``training.prompt_rewards``); its 95% interval is a percentile bootstrap that
resamples the two windows' prompt rewards independently (``stats.bootstrap_diff``): the
steps are a sequence, not pairs, and a window's prompts are its units of noise.

Prompts differ in difficulty far more than training moves any one of them (in a Werewolf
run, prompts' rewards spread over about 4 while a prompt gained about 0.15 in 10 visits), so
the rise mostly measures which prompts fell in each window. The gain (``gain_over_baseline``
then ``reward_rise``) takes that out: each prompt's reward minus its own baseline, the mean
reward of the untrained Refiner's candidates for that instance (the sample and score
stages: the same prompt, sampling and Measurer before any step). Its first window sits near
zero by construction; its last window is what training added on prompts of like difficulty.

A run of more than one epoch visits each prompt again, and the revisit (``revisit_pairs``
then ``revisit_rise``) pairs a prompt's last visit with its first: difficulty cancels
within the pair, and so does any offset between GRPO's sampling and the baseline's. The
windows compare different prompts; the revisit compares every revisited prompt with itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stackelberg.evaluation.stats import (
    NOT_SIGNIFICANT,
    Interval,
    bootstrap_diff,
    paired_bootstrap_diff,
    verdict,
)

#: the share of a run's steps in each window compared
WINDOW_SHARE = 0.2
#: fewer steps have no first and last window apart
MIN_STEPS = 2
#: the verdicts of the training reward's rise (``training_summary``)
RISES, FALLS, NO_CLEAR_CHANGE = "rises", "falls", "no clear change"


def window_steps(steps: int, share: float = WINDOW_SHARE) -> int:
    """Steps in each window: ``share`` of ``steps`` rounded down, at least one (so two to
    four steps compare their first step with their last).

    >>> window_steps(10), window_steps(9), window_steps(3)
    (2, 1, 1)
    """
    if not 0 < share <= 0.5:
        raise ValueError(f"window share {share}: must be in (0, 0.5] (two windows apart)")
    if steps < MIN_STEPS:
        raise ValueError(f"{steps} steps: a first and a last window need {MIN_STEPS} at least")
    return max(1, math.floor(share * steps + 1e-9))  # 0.2 * 30 is 6.000000000000001


@dataclass(frozen=True)
class RewardRise:
    """Last window's mean minus the first's; ``diff.n`` is the smaller window's prompts."""

    diff: Interval
    first_mean: float
    last_mean: float
    n_first: int  # prompt rewards in the first window
    n_last: int
    steps: int
    window_steps: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.diff.estimate,
            "ci": [self.diff.low, self.diff.high],
            "first": self.first_mean,
            "last": self.last_mean,
            "n_first": self.n_first,
            "n_last": self.n_last,
            "steps": self.steps,
            "window_steps": self.window_steps,
        }


def reward_rise(
    step_rewards: Mapping[int, Sequence[float]],
    share: float = WINDOW_SHARE,
    resamples: int = 2000,
    seed: int = 0,
) -> RewardRise | None:
    """The rise of the prompts' rewards from the first ``share`` of steps to the last.

    ``step_rewards``: step -> its prompts' mean rewards (``step_prompt_rewards``), taken in
    step order. None with fewer than two steps: one step would be both windows.
    """
    steps = sorted(step_rewards)
    for s in steps:
        values = step_rewards[s]
        if not values or not all(math.isfinite(float(v)) for v in values):
            raise ValueError(f"reward_rise: step {s} needs one finite reward or more, got {values}")
    if len(steps) < MIN_STEPS:
        return None
    k = window_steps(len(steps), share)
    first = [float(v) for s in steps[:k] for v in step_rewards[s]]
    last = [float(v) for s in steps[-k:] for v in step_rewards[s]]
    diff = bootstrap_diff(first, last, resamples, seed)
    return RewardRise(
        diff,
        sum(first) / len(first),
        sum(last) / len(last),
        len(first),
        len(last),
        len(steps),
        k,
    )


def gain_over_baseline(
    step_prompt_rewards: Mapping[int, Mapping[str, float]], baselines: Mapping[str, float]
) -> dict[int, list[float]]:
    """Step -> each prompt's reward minus its baseline (``baselines``: prompt -> the untrained
    Refiner's mean reward on it), for ``reward_rise``; prompts without a baseline are left
    out, and so is a step left with none.

    >>> gain_over_baseline({1: {"a": 1.0, "b": 3.0}, 2: {"c": 0.0}}, {"a": 0.5, "b": 3.0})
    {1: [0.5, 0.0]}
    """
    gains = {
        step: [float(r) - float(baselines[k]) for k, r in rewards.items() if k in baselines]
        for step, rewards in sorted(step_prompt_rewards.items())
    }
    return {step: values for step, values in gains.items() if values}


def revisit_pairs(
    step_prompt_rewards: Mapping[int, Mapping[str, float]],
) -> dict[str, tuple[float, float]]:
    """Prompt -> (its reward at its first step, at its last) for each prompt GRPO trained on
    at two steps or more (a run of more than one epoch); empty for a single pass.

    >>> revisit_pairs({1: {"a": 0.0, "b": 1.0}, 2: {"c": 2.0}, 3: {"a": 0.5}, 4: {"a": 0.7}})
    {'a': (0.0, 0.7)}
    """
    visits: dict[str, list[float]] = {}
    for _, rewards in sorted(step_prompt_rewards.items()):
        for key, r in rewards.items():
            visits.setdefault(str(key), []).append(float(r))
    return {k: (v[0], v[-1]) for k, v in visits.items() if len(v) > 1}


def revisit_rise(
    pairs: Mapping[str, tuple[float, float]], steps: int, resamples: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """A prompt's last visit minus its first, averaged over the revisited prompts ``pairs``
    (``revisit_pairs``) with a paired bootstrap interval; the keys of ``RewardRise.to_dict``
    (``first`` and ``last``: the visits' means; ``n_first`` = ``n_last``: the prompts) but
    no window."""
    if not pairs:
        raise ValueError("revisit_rise: no prompt was visited twice")
    first = [a for a, _ in pairs.values()]
    last = [b for _, b in pairs.values()]
    diff = paired_bootstrap_diff(first, last, resamples, seed)
    n = len(pairs)
    return {
        "estimate": diff.estimate,
        "ci": [diff.low, diff.high],
        "first": sum(first) / n,
        "last": sum(last) / n,
        "n_first": n,
        "n_last": n,
        "steps": steps,
        **_verdict_entry(diff),
    }


def training_summary(
    step_rewards: Mapping[int, Sequence[float]] | None,
    resamples: int = 2000,
    seed: int = 0,
    step_gains: Mapping[int, Sequence[float]] | None = None,
    revisits: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, Any] | None:
    """The ``training`` entry of metrics.json (``metrics``' docstring): the reward's rise over
    the GRPO run and, given ``step_gains`` (``gain_over_baseline``), the rise of each prompt's
    reward over its untrained baseline, and given ``revisits`` (``revisit_pairs``, a run of
    more than one epoch), each revisited prompt's last visit minus its first, with the same
    verdict rule as the held-out reward (``stats.verdict``) in words fit for a curve."""
    if step_rewards is None:
        return None
    out = {"reward_rise": _rise_entry(step_rewards, resamples, seed)}
    if step_gains is not None:
        out["reward_gain"] = _rise_entry(step_gains, resamples, seed)
    if revisits:
        out["reward_revisit"] = revisit_rise(revisits, len(step_rewards), resamples, seed)
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
    return {**rise.to_dict(), **_verdict_entry(rise.diff)}


def _verdict_entry(diff: Interval) -> dict[str, Any]:
    """``significant`` and ``verdict`` of a training comparison: rises, falls or no clear change."""
    significant, words = verdict(diff)
    if significant:
        words = RISES if diff.estimate > 0 else FALLS
    elif words == NOT_SIGNIFICANT:
        words = NO_CLEAR_CHANGE
    return {"significant": significant, "verdict": words}


__all__ = [
    "FALLS",
    "MIN_STEPS",
    "NO_CLEAR_CHANGE",
    "RISES",
    "WINDOW_SHARE",
    "RewardRise",
    "gain_over_baseline",
    "revisit_pairs",
    "revisit_rise",
    "reward_rise",
    "training_summary",
    "window_steps",
]
