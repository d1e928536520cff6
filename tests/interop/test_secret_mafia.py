"""This project's agents in TextArena's own SecretMafia-v0: the seat's view of TextArena's
messages against TextArena's own state, the renaming of players between the two, the
follower the Refiner is told, a full game with `direct` and `refiner+direct` seats on a
pretend chat model, and the tournament's pairing and batching."""

from __future__ import annotations

import re

import pytest
import textarena as ta
from agents.conftest import api  # noqa: F401 (the pretend chat model's fixture)
from evaluation.conftest import FakeLLM

from stackelberg.agents import RandomAgent
from stackelberg.agents.prompting import history_lines
from stackelberg.agents.refiner import RefinerAgent
from stackelberg.evaluation.tournament import build_agent
from stackelberg.games import GameError
from stackelberg.interop.mafia_tournament import camp_of, play_mafia
from stackelberg.interop.secret_mafia import (
    ENV_ID,
    MafiaView,
    SeatedAgent,
    parse_messages,
    renamed,
)

PLAYERS = 7


def play(agents: list[ta.Agent], seed: int, check=None) -> tuple[dict, dict, list]:
    """A SecretMafia-v0 game with TextArena's own loop; ``check(env, player, agent)`` runs
    after each answer. Returns the rewards, the players' info and TextArena's log."""
    env = ta.make(ENV_ID)
    env.reset(num_players=len(agents), seed=seed)
    done = False
    while not done:
        player, observation = env.get_observation()
        answer = agents[player](observation)
        if check:
            check(env, player, agents[player])
        done, _ = env.step(answer)
    return (*env.close(), env.state.logs)


def test_the_seat_view_follows_textarena_state():
    """Random seats in 30 games: before every answer the seat's view has TextArena's living
    players and offers exactly the targets TextArena accepts."""
    checked = 0

    def check(env, player, seat):
        nonlocal checked
        state = env.state.game_state
        view = seat.view
        assert view.me == player and sorted(view.alive) == sorted(state["alive_players"])
        decision = view.decision()
        phase = env.phase.value
        alive = state["alive_players"]
        if phase == "Day-Discussion":
            assert decision.options is None
        elif phase == "Day-Voting":
            assert decision.kind == "vote" and sorted(decision.options) == sorted(alive)
        elif phase == "Night-Mafia":
            mafia = [p for p in alive if env.player_roles[p] == "Mafia"]
            assert decision.kind == "wolf_kill"
            assert sorted(decision.options) == sorted(set(alive) - set(mafia))
        else:
            kind = {"Night-Doctor": "protect", "Night-Detective": "inspect"}[phase]
            assert decision.kind == kind and sorted(decision.options) == sorted(
                set(alive) - {player}
            )
        checked += 1

    for seed in range(30):
        rewards, info, _ = play(
            [SeatedAgent(RandomAgent, seed=seed) for _ in range(PLAYERS)], seed, check
        )
        assert not any(i["invalid_move"] for i in info.values())
    assert checked > 1000


def test_a_mafia_seat_reads_its_partners_night_and_votes_as_werewolf_events():
    seats = [SeatedAgent(RandomAgent, seed=4) for _ in range(PLAYERS)]
    play(seats, seed=4)
    asked = [s for s in seats if s.view is not None]  # a seat killed before its turn is not
    wolf = next(s for s in asked if s.view.players[s.view.me].role == "werewolf")
    lines = history_lines(wolf.view, wolf.view.me, wolf.view.events)
    assert lines[0].startswith("The werewolves are Player ")
    assert any(" wants to kill Player " in line for line in lines)
    assert any("died during the night" in line for line in lines)
    assert any(" votes for Player " in line for line in lines)
    assert any("is eliminated by vote" in line for line in lines)
    assert all(e.visible(wolf.view.me) for e in wolf.view.events)


def test_players_are_renamed_between_textarena_and_this_project():
    said = "Player 0 lied; player 6 and Player 7 did not. I am Player10."
    ours = renamed(said, +1, 7)
    assert ours == "Player 1 lied; player 7 and Player 7 did not. I am Player10."
    assert renamed("Player 1 and Player 7, not Player 0 or Player 8.", -1, 7) == (
        "Player 0 and Player 6, not Player 0 or Player 8."
    )


def discussion(speakers: list[int], alive: int = 3, rounds: int = 2) -> MafiaView:
    welcome = (
        "Welcome to Secret Mafia! You are Player 0.\nYour role: Villager\nTeam: Village\n"
        f"Description: A regular villager.\n\nPlayers: {', '.join(f'Player {i}' for i in range(alive))}"
    )
    view = MafiaView()
    view.follow(
        [
            (None, welcome),
            (None, f"Day breaks. Discuss for {rounds} rounds, then a vote will follow."),
        ]
        + [(p, "Hello.") for p in speakers]
    )
    return view


def test_the_follower_is_named_once_the_first_round_shows_the_order():
    assert discussion([2]).next_speaker() is None  # round 1: unknown
    assert discussion([2, 1]).next_speaker() == 2  # the last of round 1: round 2 starts as it did
    assert discussion([2, 1, 0, 2]).next_speaker() == 0  # after me comes Player 0's next
    assert discussion([2, 1, 0, 2, 1]).next_speaker() is None  # the day's last speech
    assert (
        discussion([2, 1]).decision().prompt == "Day 1, discussion round 1 of 2: speak to everyone."
    )


def test_an_observation_of_another_game_stops_with_one_line():
    with pytest.raises(GameError, match=r"^not a SecretMafia-v0 observation") as err:
        SeatedAgent(RandomAgent)("\n[GAME] Welcome to Chess! You are Player 0.")
    assert "\n" not in str(err.value)
    assert parse_messages("\n[GAME] a\nb\n[Player 3] c") == [(None, "a\nb"), (3, "c")]


def test_direct_and_refiner_direct_seats_play_a_full_game(api):  # noqa: F811 (the fixture)
    routes = {"default": api, "refiner": api}  # the pretend chat model plays both
    env = ta.make(ENV_ID)
    env.reset(num_players=PLAYERS, seed=3)
    condition = {
        p: "refiner+direct" if camp_of(r) == "village" else "direct"
        for p, r in env.player_roles.items()
    }
    seats = [
        SeatedAgent(lambda c=c: build_agent(c, "werewolf", routes), routes, seed=3)
        for c in condition.values()
    ]
    rewards, info, log = play(seats, seed=3)
    assert set(rewards.values()) == {-1, 1}
    assert not any(i["invalid_move"] for i in info.values())
    refiners = [s.agent for s in seats if isinstance(s.agent, RefinerAgent)]
    assert len(refiners) == 5 and sum(r.refined for r in refiners) >= 5
    # every speech reached each seat as said, its players renamed from TextArena's names
    said = [
        renamed(text, +1, PLAYERS)
        for sender, text in log
        if sender >= 0 and not re.fullmatch(r"\[\d+\]", text)  # not a vote or night target
    ]
    assert len(said) >= 2 * PLAYERS
    for seat in seats:
        heard = [e.data["text"] for e in seat.view.events if e.type == "speech"]
        assert heard == said[: len(heard)]


def test_the_tournament_pairs_deals_and_a_batched_table_plays_as_alone():
    players = FakeLLM("I suspect Player 3.")
    refiner = FakeLLM("Player 3 lied. Vote Player 3.")
    routes = {"default": players, "refiner": refiner}

    def build(condition):
        return build_agent(condition, "werewolf", routes, {"speech_tokens": 8})

    together = play_mafia(["direct", "refiner+direct"], [11, 12], "mafia", build, routes)
    assert max(players.batches) > 1  # tables waited together
    alone = play_mafia(["refiner+direct"], [12], "mafia", build, routes)

    def facts(r):
        return {k: v for k, v in r.items() if k != "seconds"}

    assert facts(
        next(r for r in together if r["condition"] == "refiner+direct" and r["seed"] == 12)
    ) == facts(alone[0])
    for seed in (11, 12):
        games = [r for r in together if r["seed"] == seed]
        assert len(games) == 2 and games[0]["roles"] == games[1]["roles"]
        assert all(g["roles"][p] == "Mafia" for g in games for p in g["seats"])
    assert all(r["refined"] >= 1 for r in together if r["condition"] == "refiner+direct")
    with pytest.raises(ValueError, match="unknown camp 'wolves'; choose one of: village, mafia"):
        play_mafia(["direct"], [0], "wolves", build, routes)
