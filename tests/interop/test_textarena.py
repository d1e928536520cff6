"""The four games as TextArena environments: each registered game played to the end through
TextArena's own loop (make, reset, get_observation, step, close) by stub agents behind
TextArena's agent wrapper, invalid answers handled as TextArena's games handle them, and
one-line errors for bad settings."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
import textarena as ta
from textarena.agents.wrappers import AnswerTokenAgentWrapper
from textarena.envs.registration import ENV_REGISTRY

from stackelberg.games import GAME_NAMES, GameError
from stackelberg.interop.seat import final_rewards
from stackelberg.interop.secret_mafia import ENV_ID
from stackelberg.interop.textarena import ENV_IDS, env_id

TABLE = {"werewolf": 7, "avalon": 6, "onuw": 5, "sotopia": 2}


class StubAgent(ta.Agent):
    """Answers "Final Answer: k" with k drawn from 1 to 7: a choice's number when it is one
    (else an invalid move), any speech's words."""

    system_prompt = "You are a stub."

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, observation: str) -> str:
        return f"Thinking... Final Answer: {self.rng.randint(1, 7)}"


def play(game_id: str, players: int, seed: int) -> tuple[ta.Env, dict, dict, list[str]]:
    env = ta.make(game_id)
    env.reset(num_players=players, seed=seed)
    agents = [AnswerTokenAgentWrapper(StubAgent(seed * 10 + p)) for p in range(players)]
    done, last_seen = False, [""] * players
    while not done:
        player, observation = env.get_observation()
        last_seen[player] = observation
        done, _ = env.step(agents[player](observation))
    rewards, info = env.close()
    return env, rewards, info, last_seen


def test_every_game_is_registered_under_its_title():
    assert ENV_IDS == [env_id(g) for g in GAME_NAMES]
    assert env_id("onuw") == "Stackelberg-OneNightUltimateWerewolf-v0"
    for game_id in ENV_IDS:
        assert {game_id, f"{game_id}-raw", f"{game_id}-train"} <= set(ENV_REGISTRY)


@pytest.mark.parametrize("game", GAME_NAMES)
def test_stub_agents_play_each_game_to_the_end(game):
    env, rewards, info, seen = play(env_id(game), TABLE[game], seed=1)
    record = env.record()
    assert record["game"] == game and record["seed"] == 1
    assert rewards == dict(enumerate(final_rewards(env.game)))
    assert [info[p]["role"] for p in sorted(info)] == [p["role"] for p in record["players"]]
    assert {i["reason"] for i in info.values()} == {record["result"]["reason"]}
    # every player read its rules and identity first, then the game as it sees it
    for player, observation in enumerate(seen):
        if observation:
            assert observation.startswith(f"\n[GAME] {env.game.spec.title}") or game == "sotopia"
            assert f"You are {record['players'][player]['name']}" in observation or (
                game == "sotopia"
            )


def test_an_answer_naming_no_option_is_asked_again_then_played_at_random():
    env = ta.make(env_id("werewolf"))
    env.reset(num_players=7, seed=0)
    wolf, _ = env.get_observation()
    decision = env.game.decision()
    assert decision.kind == "wolf_kill"
    done, _ = env.step("banana")
    player, observation = env.get_observation()
    assert player == wolf and "attempted an invalid move" in observation
    assert "Please resubmit" in observation and env.game.decision() == decision
    env.step("still a banana")
    assert env.game.decision() != decision  # a random legal option was played
    assert env.state.game_info[wolf]["invalid_move"]
    told = [message for _, message, _ in env.state.observations[wolf]]  # not read yet
    assert any("answered badly twice; played: Player" in m for m in told)


def test_an_option_may_be_named_by_its_words():
    env = ta.make(env_id("werewolf"))
    env.reset(num_players=7, seed=0)
    decision = env.game.decision()
    env.step(f"I pick Player {decision.options[1] + 1}.")  # the engine's seat 0 is Player 1
    assert env.game.events[-1].data["target"] == decision.options[1]


def test_a_game_whose_options_set_the_table_takes_num_players():
    env = ta.make(env_id("avalon"))
    env.reset(num_players=8, seed=2)
    assert env.game.n_players == 8


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ta.make(env_id("werewolf")).reset(num_players=5), "has 7 players, not 5"),
        (lambda: ta.make(env_id("werewolf"), max_dayz=2), "unknown option 'max_dayz'"),
        (lambda: ta.make(env_id("avalon")).reset(num_players=11), "n_players=11"),
    ],
)
def test_bad_settings_stop_with_one_line(make, message):
    with pytest.raises(GameError) as err:
        make()
    assert message in str(err.value) and "\n" not in str(err.value)


NO_NETWORK = """
import socket, nltk
def refuse(*args, **kwargs):
    raise AssertionError("network or download attempted")
socket.socket.connect = socket.create_connection = socket.getaddrinfo = refuse
nltk.download = refuse
import textarena as ta
import stackelberg.interop.textarena
from stackelberg.agents import RandomAgent
from stackelberg.interop.secret_mafia import ENV_ID, SeatedAgent
for env_id in ("Stackelberg-Werewolf-v0", ENV_ID):
    env = ta.make(env_id)
    env.reset(num_players=7, seed=0)
    seats, done = [SeatedAgent(RandomAgent) for _ in range(7)], False
    while not done:
        player, observation = env.get_observation()
        done, _ = env.step("1" if env_id != ENV_ID else seats[player](observation))
    print(env_id, "played")
"""


def test_textarena_and_its_nltk_download_nothing_at_import_or_play():
    """CI has no internet: importing TextArena (nltk comes with it), making and playing its
    SecretMafia and this project's games must not reach for the network."""
    done = subprocess.run(
        [sys.executable, "-c", NO_NETWORK], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["Stackelberg-Werewolf-v0", "played", ENV_ID, "played"]
