"""Each prompt's mean reward per GRPO step, kept in the run's train history.

TRL logs one mean reward per step; whether it rose over a run more than its noise allows
needs the spread within a step (``evaluation.training_curve``). The reward function knows
each completion's prompt (its ``instance_id`` column) and the optimizer step it trains
(``trl_reward``'s ``step``), so it records a record per (step, prompt) here: the sum and
count of its completions' rewards. In a launched run each process scores its share of a
step's completions (a prompt's group may be split between processes), so the records of all
processes are merged by (step, prompt) before they become the history's
``prompt_rewards``: a list, by step, of ``{"step": s, "rewards": {instance_id: mean}}``.
Plain Python, so that the evaluation reads it without importing TRL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: the key of the per-step prompt rewards in the run's train history (``TRAIN_HISTORY``)
PROMPT_REWARDS = "prompt_rewards"
#: digits kept of a prompt's mean reward: the history stays small, the curve unchanged
DIGITS = 6

Record = tuple[int, str, float, int]  # (step, prompt key, reward sum, completions)


def prompt_reward_records(step: int, keys: Sequence[str], rewards: Sequence[float]) -> list[Record]:
    """The records of one reward call: per prompt key, its completions' reward sum and count.

    >>> prompt_reward_records(3, ["a", "b", "a"], [1.0, 0.5, 0.0])
    [(3, 'a', 1.0, 2), (3, 'b', 0.5, 1)]
    """
    if len(keys) != len(rewards):
        raise ValueError(f"prompt_reward_records: {len(keys)} keys for {len(rewards)} rewards")
    sums: dict[str, list[float]] = {}
    for key, r in zip(keys, rewards, strict=True):
        part = sums.setdefault(key, [0.0, 0])
        part[0] += float(r)
        part[1] += 1
    return [(step, key, total, int(n)) for key, (total, n) in sums.items()]


def prompt_reward_log(records: Iterable[Record]) -> list[dict[str, Any]]:
    """Records (of every process) merged into the history's ``prompt_rewards``, by step.

    >>> prompt_reward_log([(2, "a", 1.0, 1), (1, "b", 0.5, 2), (2, "a", 0.0, 1)])
    [{'step': 1, 'rewards': {'b': 0.25}}, {'step': 2, 'rewards': {'a': 0.5}}]
    """
    merged: dict[int, dict[str, list[float]]] = {}
    for step, key, total, n in records:
        part = merged.setdefault(int(step), {}).setdefault(str(key), [0.0, 0])
        part[0] += total
        part[1] += n
    return [
        {"step": step, "rewards": {k: round(t / n, DIGITS) for k, (t, n) in by_key.items()}}
        for step, by_key in sorted(merged.items())
    ]


def step_prompt_rewards(summary: Mapping[str, Any]) -> dict[int, list[float]] | None:
    """A train history's prompt rewards as step -> the prompts' mean rewards, in step order;
    None for a history written before they were recorded (TRL's per-step mean alone)."""
    by_prompt = step_prompt_reward_map(summary)
    if by_prompt is None:
        return None
    return {step: list(rewards.values()) for step, rewards in by_prompt.items()}


def step_prompt_reward_map(summary: Mapping[str, Any]) -> dict[int, dict[str, float]] | None:
    """As ``step_prompt_rewards``, each step's rewards keyed by their prompt (instance id),
    so that a prompt's reward can be set against that prompt's own baseline."""
    log = summary.get(PROMPT_REWARDS)
    if log is None:
        return None
    by_step = {int(e["step"]): {str(k): float(v) for k, v in e["rewards"].items()} for e in log}
    return dict(sorted(by_step.items()))


__all__ = [
    "PROMPT_REWARDS",
    "prompt_reward_log",
    "prompt_reward_records",
    "step_prompt_reward_map",
    "step_prompt_rewards",
]
