"""The trained Refiner plays the tournaments as it was trained: its prompt budget is the
sample stage's (the one its GRPO prompts were cut to), not the players'."""

from __future__ import annotations

import stages.evaluate as evaluate
from flows import context
from stackelberg.params import Params


def test_the_tournament_refiner_gets_its_training_prompt_budget(monkeypatch):
    params = Params(
        sample={"max_prompt_tokens": 300},
        evaluate={"max_prompt_tokens": 700, "conditions": ["direct", "refiner+direct"]},
    )
    monkeypatch.setattr(context, "_LLMS", {})
    monkeypatch.setattr(context, "make_llm", lambda config: object())  # no model loads
    seen = {}

    def play_matrix(*args, **kwargs):
        seen.update(kwargs)
        return []

    monkeypatch.setattr(evaluate, "play_matrix", play_matrix)
    ctx = context.StageContext("evaluate", "werewolf", params)
    assert evaluate.tournaments(ctx, slice(0, 4)) == {"records": []}
    assert seen["refiner_options"]["max_prompt_tokens"] == 300
    assert seen["refiner_options"]["style"] == params.refiner_sampling("werewolf").style
    assert seen["agent_options"]["max_prompt_tokens"] == 700
