"""Each prompt's mean reward per step: recorded per reward call, merged over processes."""

from __future__ import annotations

import json

import pytest

from stackelberg.training.prompt_rewards import (
    PROMPT_REWARDS,
    prompt_reward_log,
    prompt_reward_records,
    step_prompt_rewards,
)


def test_a_prompts_group_split_between_processes_is_merged_into_one_mean():
    # step 1: prompt "a" has four completions, two in each of two processes
    main = prompt_reward_records(1, ["a", "a"], [1.0, 2.0])
    other = prompt_reward_records(1, ["a", "a", "b", "b"], [3.0, 6.0, -1.0, 0.0])
    later = prompt_reward_records(2, ["b", "b"], [0.25, 0.5])
    log = prompt_reward_log(later + other + main)  # any order: gathered by process
    assert log == [
        {"step": 1, "rewards": {"a": 3.0, "b": -0.5}},
        {"step": 2, "rewards": {"b": 0.375}},
    ]
    summary = json.loads(json.dumps({"history": [], PROMPT_REWARDS: log}))
    assert step_prompt_rewards(summary) == {1: [3.0, -0.5], 2: [0.375]}


def test_the_means_are_rounded_to_keep_the_history_small():
    (entry,) = prompt_reward_log(prompt_reward_records(5, ["x"] * 3, [0.1, 0.2, 0.4]))
    assert entry == {"step": 5, "rewards": {"x": 0.233333}}


def test_a_history_written_before_prompt_rewards_has_none():
    assert step_prompt_rewards({"history": [{"step": 1, "reward": 0.2}]}) is None


def test_keys_and_rewards_must_match():
    with pytest.raises(ValueError, match="2 keys for 1 rewards"):
        prompt_reward_records(1, ["a", "b"], [0.0])
