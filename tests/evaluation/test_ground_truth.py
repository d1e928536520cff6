"""The held-out Refiners against the exact follower: the optimum's headroom, each Refiner's
share of it, and a model of the follower held against the exact one (a perfect model ranks
as the exact follower does, a reversed one the other way round)."""

from __future__ import annotations

import json

import pytest

from stackelberg.agents import make_agent
from stackelberg.agents.runner import Table, play_tables
from stackelberg.agents.scripted import SAMPLED_KIND
from stackelberg.evaluation.ground_truth import ground_truth_mlflow, ground_truth_summary
from stackelberg.evaluation.held_out_scoring import held_out_reward
from stackelberg.evaluation.report import (
    optimum_examples_table,
    optimum_table,
    render_markdown,
    validity_table,
)
from stackelberg.games import make_game
from stackelberg.persuasion.candidates import Candidate
from stackelberg.persuasion.context import instance_view, speech_instances
from stackelberg.persuasion.exact_follower import (
    ExactFollower,
    exact_follower_for,
    grammar_speeches,
    optimum,
)
from stackelberg.persuasion.measurer import ScoreSettings
from stackelberg.persuasion.truth import scripted_intents


class Perfect(ExactFollower):
    """A model of the follower that is right about everything (scored as a model is)."""


class Reversed(ExactFollower):
    """A model of the follower that gets every preference backwards."""

    def logprobs(self, view, candidates, responses):
        return [[-x for x in row] for row in super().logprobs(view, candidates, responses)]


def _held_out(game_name: str, instances: int = 4) -> dict:
    """A held-out scoring's input: instances of sampled games, an untrained Refiner whose
    candidates are the grammar's first sentences, a trained one that says the optimum."""
    game = make_game(game_name, {})
    game.reset(0)
    table = Table(
        make_game(game_name, {}), [make_agent(SAMPLED_KIND, game_name) for _ in game.players], 0
    )
    [record] = play_tables([table])
    rows, views = [], []
    for row in speech_instances(record, table.speech_turns, 3):
        view = instance_view(json.dumps(record), row)
        desired, undesired = scripted_intents(view, 3, True, True, 0)
        if desired and undesired:
            rows.append(row | {"desired": desired, "undesired": undesired})
            views.append(view)
    rows, views = rows[:instances], views[:instances]
    assert len(rows) == instances
    settings = ScoreSettings()

    def said(text: str) -> Candidate:
        return Candidate(text, text, True, True)

    best = [
        optimum(ExactFollower(), v, r["desired"], r["undesired"], settings)
        for r, v in zip(rows, views, strict=True)
    ]
    rates = {"completions": 1, "ended_rate": 1.0, "parse_rate": 1.0}
    return {
        "rows": rows,
        "views": views,
        "room": 40,
        "extra": {},
        "pool": [[said(s) for s in grammar_speeches(v, pairs=False)[:4]] for v in views],
        "after": [[said(b.speech)] for b in best],
        "before_outputs": rates,
        "after_outputs": rates,
    }


@pytest.mark.parametrize("game_name", ["werewolf", "onuw"])
def test_the_optimum_reaches_all_of_the_headroom_and_a_perfect_model_ranks_as_the_follower(
    game_name,
):
    sampled = _held_out(game_name)
    settings = ScoreSettings()
    exact = exact_follower_for(game_name, "scripted")
    assert exact_follower_for(game_name, "per_response") is None
    assert exact_follower_for("sotopia", "scripted") is None
    for measurer, sign in ((Perfect(), 1.0), (Reversed(), -1.0)):
        reward = held_out_reward(sampled, 2, settings, "t", measurer, best_of=[4], exact=exact)
        gt = ground_truth_summary(
            reward["rows"], reward["scored"], reward["optima"], 2, [4], 200, 0
        )
        assert gt["headroom"]["estimate"] > 0
        assert gt["refiners"]["after"]["share"]["estimate"] == pytest.approx(1.0)
        assert gt["refiners"]["before"]["share"]["estimate"] < 1.0
        validity = gt["validity"]["measurer"]
        if sign > 0:  # the exact follower as its own model: a perfect rank correlation
            assert validity["rank_correlation"]["estimate"] == pytest.approx(1.0)
            assert validity["same_best"]["estimate"] == 1.0
            assert validity["pick_share"]["estimate"] == pytest.approx(1.0)
            # the Measurer's best of 4 is the exact best of the 4
            assert (
                gt["refiners"]["best_of_4"]["gain"]["estimate"]
                >= gt["refiners"]["before"]["gain"]["estimate"]
            )
        else:
            assert validity["rank_correlation"]["estimate"] < 0
            assert validity["pick_share"]["estimate"] < 1.0
    # the exact follower as the Measurer: scored once, and no row holding it against itself
    reward = held_out_reward(sampled, 2, settings, "t", ExactFollower(), best_of=[4], exact=exact)
    assert reward["scored"]["exact"] is reward["scored"]["measurer"]
    own = ground_truth_summary(reward["rows"], reward["scored"], reward["optima"], 2, [4], 200, 0)
    assert own["validity"] == {} and own["headroom"] == gt["headroom"]
    metrics = {"game": game_name, "held_out": {"ground_truth": gt}}
    names = ground_truth_mlflow(f"held_out/{game_name}", gt)
    assert f"held_out/{game_name}/ground_truth/headroom" in names
    assert f"held_out/{game_name}/ground_truth/share/after" in names
    optimum_rows = optimum_table({game_name: metrics}).rows
    assert [r[1] for r in optimum_rows] == ["optimum (headroom)", "before", "best_of_4", "after"]
    assert optimum_rows[-1][-1].startswith("100%")
    assert "Stackelberg headroom" in render_markdown(optimum_table({game_name: metrics}))
    assert validity_table({game_name: metrics}).rows[0][1] == "measurer (measurer)"
    # the examples: each Refiner's first candidate beside the optimum, with exact rewards
    # (the trained candidates here are the optima themselves)
    for e in gt["examples"]:
        assert e["trained"]["speech"] == e["optimum"]
        assert e["trained"]["reward"] == pytest.approx(e["optimum_reward"])
        assert e["headroom"] == pytest.approx(e["optimum_reward"] - e["base_reward"])
    shown = optimum_examples_table({game_name: metrics}).rows
    assert [r[1] for r in shown[:4]] == ["base speech", "untrained", "trained", "optimum"]
    assert len(shown) == 4 * len(gt["examples"]) and gt["examples"]
