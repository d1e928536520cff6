"""What tournament tables play with, by route: the trained models the played kinds read,
each loaded once from its stage's folder; the players' models, the Refiner and the judge only
when a condition needs them. The CLI's --tactics, --value and --lspo use the same loading."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from stackelberg.agents import LLM_AGENT_KINDS, llm_agent_class
from stackelberg.agents.lookahead.value import ValueModel, save_value
from stackelberg.agents.tactics.policy import TacticPolicy, save_policy
from stackelberg.evaluation.routes import (
    JUDGE,
    TRAINED_BASELINES,
    tournament_routes,
    trained_routes,
)
from stackelberg.games import ConfigError
from stackelberg.llm import LLMConfig


def test_every_route_an_agent_reads_has_a_loader():
    named = {r for k in LLM_AGENT_KINDS for r in getattr(llm_agent_class(k), "route_args", {})}
    assert named == set(TRAINED_BASELINES)


@pytest.fixture
def folders(tmp_path):
    out = {
        "tactics": save_policy(TacticPolicy(hidden=4), tmp_path / "tactics"),
        "strategist": tmp_path / "strategist",
    }
    save_value(ValueModel(), out["strategist"])
    return out


def test_the_kinds_played_get_their_trained_models_and_no_others(folders):
    found = trained_routes(["direct", "rl_ins", "scripted", "rl_ins"], folders.get)
    assert list(found) == ["tactics"] and isinstance(found["tactics"], TacticPolicy)
    both = trained_routes(["strategist", "rl_ins"], folders.get)
    assert isinstance(both["strategist"], ValueModel) and set(both) == {"strategist", "tactics"}
    assert trained_routes(["lspo"], folders.get) == {}  # no folder: it plays untrained


def test_a_folder_without_the_model_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="no tactic policy in"):
        trained_routes(["rl_ins"], {"tactics": tmp_path}.get)


def test_a_tournament_loads_only_what_its_conditions_play(monkeypatch):
    loaded = []

    def load(config):
        loaded.append(config.model)
        return f"backend of {config.model}"

    monkeypatch.setitem(TRAINED_BASELINES, "tactics", SimpleNamespace(load=str))
    seats = [LLMConfig(model="a").model_dump_json(), LLMConfig(model="b").model_dump_json()]
    refiner, judge = LLMConfig(model="refiner"), LLMConfig(model="judge")
    plain = tournament_routes(["scripted", "random"], load, seats, refiner, lambda r: "x")
    assert plain == {} and loaded == []
    played = tournament_routes(
        ["direct", "refiner+rl_ins", "scripted"], load, seats, refiner, lambda r: r, judge
    )
    assert loaded == ["a", "b", "refiner", "judge"]
    assert played["refiner"] == "backend of refiner" and played[JUDGE] == "backend of judge"
    assert played["tactics"] == "tactics"  # the loader got the route's folder
    assert played[seats[1]] == "backend of b"


def test_a_best_of_condition_loads_the_untrained_refiner_and_the_measurer():
    loaded = []

    def load(config):
        loaded.append(config.model)
        return f"backend of {config.model}"

    configs = {m: LLMConfig(model=m) for m in ("refiner", "base", "measurer")}
    kwargs = {"untrained_refiner": configs["base"], "measurer": configs["measurer"]}
    played = tournament_routes(
        ["scripted", "best4+scripted"], load, [], configs["refiner"], lambda r: None, **kwargs
    )
    assert loaded == ["base", "measurer"]  # not the trained Refiner: no refiner+X plays
    assert played == {"refiner_base": "backend of base", "measurer": "backend of measurer"}
    assert (
        tournament_routes(["scripted"], load, [], configs["refiner"], lambda r: None, **kwargs)
        == {}
    )


def test_a_named_refiner_plays_on_its_own_route(make_fake_llm):
    """refiner-joint+X: the joint Refiner (or another, by name) beside the game's own, each
    loaded on its route and asked for its speeches."""
    from stackelberg.evaluation.tournament import play_matrix

    own, joint = LLMConfig(model="own"), LLMConfig(model="joint")
    backends = {
        "own": make_fake_llm("I trust Player 2."),
        "joint": make_fake_llm("I trust Player 3."),
    }
    routes = tournament_routes(
        ["scripted", "refiner+scripted", "refiner-joint+scripted"],
        lambda config: backends[config.model],
        [],
        own,
        lambda route: None,
        named_refiner={"joint": joint}.get,
    )
    assert routes == {"refiner": backends["own"], "refiner-joint": backends["joint"]}
    records = play_matrix(
        "werewolf", ["scripted", "refiner-joint+scripted"], [0], ["village"], "scripted", routes
    )
    assert [r["condition"] for r in records] == ["scripted", "refiner-joint+scripted"]
    assert records[1]["refined"] > 0 and backends["joint"].batches and not backends["own"].batches
    with pytest.raises(ValueError, match="named Refiner"):
        tournament_routes(["refiner-joint+scripted"], lambda c: c, [], own, lambda route: None)
