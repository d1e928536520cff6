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
    assert seen["refiner"].max_prompt_tokens == 300
    assert seen["refiner"] == params.refiner_profile("werewolf")
    assert seen["agent_options"]["max_prompt_tokens"] == 700


def test_held_out_scoring_tournaments_best_of_play_and_serve_run_one_profile(monkeypatch):
    """For one Refiner, every use gets the one profile params build
    (``Params.refiner_profile``), whatever GRPO's rollouts sample at."""
    import argparse

    import polars as pl

    from stackelberg.cli.commands import refiner_setup
    from stackelberg.evaluation.held_out_scoring import TRAINED, UNTRAINED
    from stackelberg.evaluation.tournament import build_agent
    from stackelberg.serving.bodies import RefineContext
    from stackelberg.serving.service import RefineJob, RefinerService

    sample = {"temperature": 0.55, "top_p": 0.85, "max_new_tokens": 30, "max_prompt_tokens": 300}
    params = Params(
        label={"scheme": "scripted"},
        sample=sample,
        grpo={"temperature": 1.0, "top_p": 1.0},  # the rollouts' own: no use plays them
        evaluate={"conditions": ["refiner+direct", "best2+direct"], "refiner_dtype": "int8"},
    )
    profile = params.refiner_profile("werewolf")
    assert (profile.temperature, profile.top_p, profile.token_limit) == (0.55, 0.85, 30)
    assert profile.model.dtype == "int8" and profile.model.adapter is None
    ctx = context.StageContext("evaluate", "werewolf", params)

    # held-out scoring: each Refiner samples as it runs, with its own adapter
    handed = {}
    monkeypatch.setattr(
        evaluate,
        "read_dataset",
        lambda *a: pl.DataFrame({"instance_id": ["werewolf-1-5"], "split": ["test"]}),
    )
    monkeypatch.setattr(
        context.StageContext, "instances", lambda self, kind, ids: ([{"instance_id": ids[0]}], [0])
    )
    monkeypatch.setattr(context.StageContext, "release_models", lambda self, *r, also=(): None)
    monkeypatch.setattr(evaluate, "sample_held_out", lambda *args: handed.update(refiners=args[1]))
    evaluate.held_out_samples(ctx)
    untrained, trained = handed["refiners"][UNTRAINED], handed["refiners"][TRAINED]
    assert untrained == profile
    assert trained.model.adapter == str(ctx.path("grpo"))
    assert trained == params.refiner_profile("werewolf", ctx.path("grpo"))
    assert trained.model.model_copy(update={"adapter": None}) == profile.model

    # tournaments: refiner+X and bestN+X seats run it
    seen = {}
    monkeypatch.setattr(context, "_LLMS", {})
    monkeypatch.setattr(context, "make_llm", lambda config: object())
    monkeypatch.setattr(evaluate, "play_matrix", lambda *a, **kw: seen.update(kw) or [])
    monkeypatch.setattr(evaluate, "play_routes", lambda *a, **kw: {})
    evaluate.tournaments(ctx, slice(0, 2))
    assert seen["refiner"] == profile
    for condition in ("refiner+direct", "best2+direct"):
        seat = build_agent(
            condition,
            "werewolf",
            dict.fromkeys(["default", "refiner", "refiner_base", "measurer"], 0),
            refiner=seen["refiner"],
        )
        assert seat.profile == profile

    # stackelberg play: the same, for its --refiner
    args = argparse.Namespace(game="werewolf", refiner="base", params=None, no_cache=True)
    monkeypatch.setattr("stackelberg.serving.server.read_params", lambda path: params)
    assert refiner_setup(["refiner+scripted"], args).options["refiner"] == profile

    # serve: a request that sets nothing is prompted, limited and sampled as the profile says
    class Pretend:
        context_window = 2048

        def count_tokens(self, text):
            return len(str(text).split())

    job = RefineJob(RefineContext(game="werewolf", speaker=2, next_speaker=3, draft="Hi all."))
    request = RefinerService(Pretend(), params)._prepare(job).request
    assert (request.temperature, request.top_p) == (profile.temperature, profile.top_p)
    assert (request.max_new_tokens, request.stop) == (profile.token_limit, profile.style.stop)
