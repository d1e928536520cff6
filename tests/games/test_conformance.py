"""One generic test for every engine: random and scripted games through the public API."""

from __future__ import annotations

import json

import pytest
from record_checks import check_record

from stackelberg.agents import make_agent
from stackelberg.agents.runner import agent_rng
from stackelberg.games import GAMES, IllegalActionError, make_game
from stackelberg.games.base import SPEAK

SEEDS = range(40)
#: every non-default value of the rule options, set together (the paper's code release)
RELEASE_OPTIONS = {
    "avalon": {
        "tied_team_vote": "approved",
        "fifth_rejection": "quest_goes_anyway",
        "assassin_timing": "once_after_any_quest",
    },
    "werewolf": {"guardian_may_repeat": True, "wolf_victim": "last_wolf"},
    "onuw": {
        "speaking_order": "shuffled_once",
        "lone_wolf_peek": False,
        "no_werewolf_result": "draw",
        "deal_werewolf_to_player": True,
    },
    "sotopia": {"farewell_leaves": True},
}


def drive(name: str, kind: str, seed: int, options: dict | None = None):
    """Play one game step by step, checking protocol invariants at every decision."""
    game = make_game(name, options)
    game.reset(seed)
    agents = [make_agent(kind, name) for _ in range(game.n_players)]
    for pid, agent in enumerate(agents):
        agent.setup(game, pid, agent_rng(seed, pid))
    expected_next = None
    steps = 0
    while (d := game.decision()) is not None:
        steps += 1
        assert steps < 10_000, "game does not end"
        assert game.current_player() == d.player
        assert game.legal_actions() == d.options
        if d.kind == SPEAK:
            assert d.options is None
            if expected_next is not None:
                assert d.player == expected_next, "next_speaker() named someone else"
            expected_next = game.next_speaker()
        else:
            assert d.options, f"{name}: a choice with no legal option: {d}"
            expected_next = None
            assert game.next_speaker() is None
        obs = game.observation(d.player)
        assert obs.data["decision"]["kind"] == d.kind
        assert all(
            e["visible_to"] == "all" or d.player in e["visible_to"] for e in obs.data["events"]
        )
        game.step(agents[d.player].act(d))
    return game


@pytest.mark.parametrize("kind", ["random", "scripted"])
@pytest.mark.parametrize("name", list(GAMES))
def test_games_finish_and_records_conform(name, kind):
    for seed in SEEDS:
        game = drive(name, kind, seed)
        check_record(game.record([kind] * game.n_players), name)


@pytest.mark.parametrize("kind", ["random", "scripted"])
@pytest.mark.parametrize("name", list(GAMES))
def test_release_rule_options_finish_and_records_conform(name, kind):
    assert set(RELEASE_OPTIONS) == set(GAMES)
    options = RELEASE_OPTIONS[name]
    for seed in SEEDS:
        game = drive(name, kind, seed, options)
        rec = game.record([kind] * game.n_players)
        check_record(rec, name)
        assert {k: rec["config"][k] for k in options} == options
        again = drive(name, kind, seed, options).record([kind] * game.n_players)
        assert json.dumps(again) == json.dumps(rec)


@pytest.mark.parametrize("name", list(GAMES))
def test_default_records_name_no_rule_option(name):
    rec = drive(name, "random", 0).record(None)
    assert not set(RELEASE_OPTIONS[name]) & set(rec["config"])


@pytest.mark.parametrize("name", list(GAMES))
def test_same_seed_same_record_bytes(name):
    for kind in ("random", "scripted"):
        a = drive(name, kind, 123).record(None)
        b = drive(name, kind, 123).record(None)
        assert json.dumps(a) == json.dumps(b)
    c = drive(name, "scripted", 124).record(None)
    assert json.dumps(c) != json.dumps(a)


@pytest.mark.parametrize("name", list(GAMES))
def test_rejected_action_leaves_state_unchanged(name):
    game = make_game(name)
    game.reset(5)
    for _ in range(200):
        d = game.decision()
        if d is None:
            break
        before = (len(game.events), d)
        bad = "not a legal action" if d.options is not None else 12345
        with pytest.raises(IllegalActionError) as err:
            game.step(bad)
        assert f"Player {d.player + 1}" in str(err.value)
        assert (len(game.events), game.decision()) == before
        game.step(d.options[0] if d.options is not None else "Hello.")
