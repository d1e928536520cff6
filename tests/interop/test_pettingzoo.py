"""The four games as PettingZoo AEC environments: PettingZoo's own API and seed tests, random
legal games played through the AEC API and checked against the engine's own record, and a
one-line error for each kind of bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, seed_test

from stackelberg.games import GAME_NAMES, GameError, make_game
from stackelberg.interop.pettingzoo import SPEECH_CHARS, env

#: PettingZoo's advice for numeric spaces, which text observations and speech cannot follow
TEXT_SPACE_ADVICE = [
    "ignore:Observation is not a NumPy array",
    "ignore:Observation space for each agent probably should be",
    "ignore:Action space for each agent probably should be",
]


@pytest.mark.filterwarnings(*TEXT_SPACE_ADVICE)
@pytest.mark.parametrize("game", GAME_NAMES)
def test_pettingzoo_api_test_passes(game):
    api_test(env(game), num_cycles=1000)


@pytest.mark.parametrize("game", GAME_NAMES)
def test_pettingzoo_seed_test_passes(game):
    seed_test(lambda: env(game), num_cycles=1000)


def expected_rewards(record: dict) -> list[float]:
    """The outcome as the issue states it: +1/-1 by team, 0 in a draw; Sotopia: goal."""
    result = record["result"]
    if "scores" in result:
        return [float(part["scores"]["goal"]) for part in result["scores"]]
    if result["winner"] == "draw":
        return [0.0] * len(record["players"])
    return [1.0 if p["id"] in result["winners"] else -1.0 for p in record["players"]]


@settings(max_examples=40, deadline=None)
@given(game=st.sampled_from(GAME_NAMES), seed=st.integers(0, 2**31 - 1), data=st.data())
def test_random_legal_games_replay_the_engines_record(game, seed, data):
    table = env(game)
    table.reset(seed=seed)
    actions, rewards = [], {}
    for agent in table.agent_iter():
        observation, reward, terminated, truncated, info = table.last()
        assert table.observation_space(agent).contains(observation)
        if terminated or truncated:
            rewards[agent] = reward
            table.step(None)
            continue
        legal = np.flatnonzero(info["action_mask"]["choice"]).tolist()
        asked = json.loads(observation["data"])["decision"]
        assert asked["prompt"] in observation["text"]
        if legal:
            assert info["action_mask"]["speech"] == (0, None)
            assert len(legal) == len(asked["options"]) and legal == list(range(len(legal)))
            action = {"choice": data.draw(st.sampled_from(legal)), "speech": ""}
        else:
            assert info["action_mask"]["speech"] is None and asked["options"] is None
            action = {"choice": 0, "speech": data.draw(st.text(max_size=80))}
        actions.append(action)
        table.step(action)
    record = table.unwrapped.record()

    engine = make_game(game)
    engine.reset(seed)
    for action in actions:
        decision = engine.decision()
        engine.step(
            action["speech"] if decision.options is None else decision.options[action["choice"]]
        )
    assert json.dumps(record) == json.dumps(engine.record())
    assert [rewards[f"player_{p}"] for p in range(len(rewards))] == expected_rewards(record)


def test_a_seeded_reset_replays_and_an_unseeded_one_follows_the_last_seed():
    def first_views(table):
        return [table.observe(a)["text"] for a in table.possible_agents]

    a, b = env("avalon"), env("avalon")
    a.reset(seed=5)
    b.reset(seed=5)
    assert first_views(a) == first_views(b)
    a.reset()
    b.reset()
    assert first_views(a) == first_views(b)
    assert a.unwrapped.game.seed != 5


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: env("chess"), "unknown game 'chess'; choose one of"),
        (lambda: env("werewolf", max_dayz=3), "werewolf: unknown option 'max_dayz'"),
        (lambda: env("werewolf", render_mode="rgb_array"), "render_mode='rgb_array'"),
        (lambda: env("werewolf", max_choices=0), "max_choices must be an integer of 1 or more"),
        (lambda: env("werewolf", max_choices=2).reset(seed=0), "make the env with a larger"),
        (lambda: env("werewolf").reset(seed="x"), "seed must be an integer"),
    ],
)
def test_bad_settings_stop_with_one_line(make, message):
    with pytest.raises(GameError) as err:
        make()
    assert message in str(err.value) and "\n" not in str(err.value)


def werewolf_at(kind: str):
    """A werewolf table whose current decision is a choice ("choice") or a speech."""
    table = env("werewolf")
    table.reset(seed=0)
    while (table.unwrapped.game.decision().options is None) != (kind == "speech"):
        legal = np.flatnonzero(table.last()[4]["action_mask"]["choice"])
        table.step({"choice": int(legal[0])})
    return table


@pytest.mark.parametrize(
    ("kind", "action", "message"),
    [
        ("choice", {"choice": 99}, "choice 99 is not legal now; legal: 0 to"),
        ("choice", {"choice": -1}, "choice -1 is not legal now"),
        ("choice", "I vote for Player 2", "must choose: the action is {'choice': index}"),
        ("choice", {"choice": True}, "must choose"),
        ("speech", {"choice": 1}, "must speak: the action is {'speech': text}"),
        ("speech", "x" * (SPEECH_CHARS + 1), f"at most {SPEECH_CHARS} characters"),
    ],
)
def test_an_illegal_action_stops_with_one_line_and_changes_nothing(kind, action, message):
    table = werewolf_at(kind)
    before = len(table.unwrapped.game.events), table.agent_selection
    with pytest.raises(GameError) as err:
        table.step(action)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert (len(table.unwrapped.game.events), table.agent_selection) == before


def test_a_bare_int_chooses_and_a_bare_string_speaks():
    table = werewolf_at("choice")
    table.step(np.int64(0))
    table = werewolf_at("speech")
    speaker = table.agent_selection
    table.step("I trust Player 2.")
    assert table.unwrapped.game.events[-1].data == {"text": "I trust Player 2."}
    assert table.agent_selection != speaker


def test_render_shows_the_game_masters_lines_once():
    table = env("werewolf", render_mode="ansi")
    table.reset(seed=0)
    first = table.render()
    assert "(Player" in first and "only) The werewolves are" in first
    assert table.render() == ""
