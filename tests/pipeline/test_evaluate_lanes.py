"""The evaluate stage's first item: the Measurer scores the held-out candidates in a
background lane, on one thread and its own prefix budget, while the tables play; with a
Measurer that the tables also use, after them in the stage's thread. Models are stand-ins."""

from __future__ import annotations

import dataclasses
import threading
from types import SimpleNamespace

import pytest
import torch

import stages.evaluate as evaluate
from flows import context
from stackelberg.evaluation import held_out_scoring
from stackelberg.llm.local import PrefixBudget, PrefixStore
from stackelberg.params import Params
from stackelberg.persuasion.measurer import Measured
from stackelberg.persuasion.reward import RewardConfig, measurer_reward


class Backend:
    def __init__(self, budget: PrefixBudget) -> None:
        self.prefix_store = PrefixStore(budget=budget)


@pytest.fixture
def stage(monkeypatch):
    torch.set_num_threads(2)
    budget = PrefixBudget(max_bytes=1000)
    measurer, player = Backend(budget), Backend(budget)
    cand = SimpleNamespace(raw="I was home.", utterance="I was home.", parsed=True)
    row = {"instance_id": "w-1", "base_utterance": "Hi.", "desired": ["a"], "undesired": ["b"]}
    sampled = {
        "rows": [row] * 2,
        "views": [None, None],
        "room": 8,
        "pool": [[cand, cand]] * 2,
        "after": [[cand, cand]] * 2,
        "extra": {},
        "before_outputs": {},
        "after_outputs": {},
    }
    # wait_s: how long the tables wait for the lane's first score (none when the Measurer
    # plays at the tables: it scores after them, so there is nothing to wait for)
    seen = {"scored": threading.Event(), "measure": [], "play": [], "wait_s": 20}

    def measure(llm, row, view, candidates, settings, room):
        seen["measure"].append(
            (threading.current_thread().name, torch.get_num_threads(), llm.prefix_store.budget)
        )
        seen["scored"].set()
        # real reward parts (every field the records read), the i-th candidate's reward i
        parts = measurer_reward("I trust you.", [[-1.0]], [[-2.0]], RewardConfig())
        rewards = [dataclasses.replace(parts, reward=float(i)) for i in range(len(candidates))]
        return Measured([c.utterance for c in candidates], rewards, 0)

    def play_matrix(*args, **kwargs):
        # the lane scores while the tables play (without it, this waits out its timeout)
        scored = seen["scored"].wait(timeout=seen["wait_s"])
        seen["play"].append((threading.current_thread().name, scored))
        return [{"condition": "direct", "camp": "village", "players": [], "win": True}]

    monkeypatch.setattr(evaluate, "held_out_samples", lambda ctx: sampled)
    monkeypatch.setattr(evaluate, "held_out_measurer", lambda ctx, also=(): measurer)
    monkeypatch.setattr(held_out_scoring, "measure_completions", measure)
    monkeypatch.setattr(evaluate, "play_matrix", play_matrix)
    ctx = context.StageContext("evaluate", "werewolf", Params())
    yield ctx, measurer, player, budget, seen
    torch.set_num_threads(2)


def test_the_measurer_scores_beside_the_tables_on_one_thread(monkeypatch, stage):
    ctx, measurer, player, budget, seen = stage
    monkeypatch.setattr(evaluate, "tournament_routes", lambda ctx, keep=(): {"p": player})
    out = evaluate.held_out_beside_tournament(ctx, slice(0, 1))
    assert seen["play"] == [(threading.current_thread().name, True)]
    lanes = {(name, threads) for name, threads, _ in seen["measure"]}
    assert lanes == {("background-lane", 1)}
    assert all(b is not budget for _, _, b in seen["measure"])  # its own budget meanwhile
    assert measurer.prefix_store.budget is budget  # and the shared one after
    assert out["before"] == [0.5, 0.5] and out["after"] == [2.5, 2.5]
    assert [r["win"] for r in out["records"]] == [True]
    assert torch.get_num_threads() == 2


def test_a_measurer_the_tables_play_with_scores_after_them(monkeypatch, stage):
    ctx, measurer, player, budget, seen = stage
    monkeypatch.setattr(evaluate, "tournament_routes", lambda ctx, keep=(): {"p": measurer})
    seen["wait_s"] = 0
    out = evaluate.held_out_beside_tournament(ctx, slice(0, 1))
    here = threading.current_thread().name
    assert seen["play"] == [(here, False)]  # nothing scored while the tables played
    assert {name for name, _, _ in seen["measure"]} == {here}
    assert out["before"] == [0.5, 0.5] and [r["win"] for r in out["records"]] == [True]


def test_the_first_item_holds_the_held_out_reward_and_the_first_tables():
    conditions = ["direct", "refiner+direct"]  # x 2 camps x 2 seeds: 8 games
    params = Params(evaluate={"batch_games": 3, "tournament_games": 2, "conditions": conditions})
    items = evaluate.plan(context.StageContext("evaluate", "werewolf", params))
    assert [item.get("tables") for item in items] == [[0, 3], [3, 6], [6, 8]]
    assert [bool(item.get("held_out")) for item in items] == [True, False, False]
    none = Params(evaluate={"tournament_games": 0})
    assert evaluate.plan(context.StageContext("evaluate", "werewolf", none)) == [
        {"label": "held_out_reward", "held_out": True}
    ]
