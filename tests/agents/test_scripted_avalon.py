"""Behaviour of the scripted Avalon player: speech parsing and role play."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from stackelberg.agents.runner import agent_rng, play_game
from stackelberg.agents.scripted.avalon import (
    AvalonScripted,
    parse_claims,
    parse_proposal,
    parse_vote_intent,
)
from stackelberg.games import make_game
from stackelberg.games.base import SPEAK

# seats: merlin 0, percival 1, loyal 2 and 3, morgana 4, assassin 5
PAPER = ["merlin", "percival", "loyal_servant", "loyal_servant", "morgana", "assassin"]


@pytest.mark.parametrize(
    ("text", "claims"),
    [
        ("I suspect Player 4.", ((3, -1),)),
        ("Player 2 and Player 5 look trustworthy.", ((1, 1), (4, 1))),
        ("Player 2 is evil!", ((1, -1),)),
        ("I think Player 3 is the Assassin", ((2, -1),)),
        ("Player 6 is Morgana, I am sure", ((5, -1),)),
        ("I trust Player 3", ((2, 1),)),
        ("Player 4 is not evil.", ((3, 1),)),
        ("I don't trust Player 5.", ((4, -1),)),
        ("I propose Player 1 and Player 3.", ()),
        ("I vote to reject this team.", ()),
        ("Hello.", ()),
    ],
)
def test_parse_claims(text, claims):
    assert parse_claims(text) == claims


def test_parse_proposal_and_vote_intent():
    assert parse_proposal("I propose Player 3 and Player 1. I suspect Player 4.") == (0, 2)
    assert parse_proposal("I suspect Player 4.") is None
    assert parse_vote_intent("I vote to reject this team.") is False
    assert parse_vote_intent("I will approve this team. I suspect Player 2.") is True
    assert parse_vote_intent("I suspect Player 2.") is None


def _table(roles=PAPER, seed=0, **options):
    game = make_game("avalon", {"roles": roles, **options})
    game.reset(seed, roles)
    agents = [AvalonScripted() for _ in roles]
    for pid, agent in enumerate(agents):
        agent.setup(game, pid, agent_rng(seed, pid))
    return game, agents


def _vote_of(seat, speeches, team, seed=0):
    """``seat``'s vote on ``team`` after the others said ``speeches`` (seat -> text)."""
    game, agents = _table(seed=seed)
    while game.decision().kind == SPEAK:
        d = game.decision()
        game.step(speeches.get(d.player, "Hello."))
    game.step(team)
    while game.decision().player != seat:
        game.step(True)
    return agents[seat].act(game.decision())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "accusation", ["I suspect Player 5.", "Player 5 is evil.", "I think Player 5 is a minion"]
)
def test_loyal_servant_rejects_a_team_after_hearing_an_accusation(seed, accusation):
    # seat 2 (a loyal servant) votes on Player 1 + Player 5 (seats 0 and 4)
    assert _vote_of(2, {}, (0, 4), seed) is True
    assert _vote_of(2, {3: accusation}, (0, 4), seed) is False
    assert _vote_of(2, {3: "Player 5 is not evil."}, (0, 4), seed) is True


def test_merlin_mostly_rejects_teams_with_known_evil():
    votes = Counter(_vote_of(0, {}, (2, 4), seed) for seed in range(60))
    assert votes[False] > votes[True] > 0
    assert all(_vote_of(0, {}, (2, 3), seed) for seed in range(20))


def test_everyone_approves_the_fifth_attempt_only_evil_rejects_it():
    game, agents = _table()
    for _ in range(4):
        while game.decision().kind == SPEAK:
            game.step("Hello.")
        game.step((0, 1))
        while game.decision().kind == "vote":
            game.step(False)
    while game.decision().kind == SPEAK:
        game.step("Hello.")
    game.step((2, 3))
    votes = {}
    while game.decision().kind == "vote":
        d = game.decision()
        votes[d.player] = agents[d.player].act(d)
        game.step(votes[d.player])
    assert votes == {0: True, 1: True, 2: True, 3: True, 4: False, 5: False}


def _fifth_vote(seat, team, seed, **options):
    """``seat``'s vote on ``team`` at the fifth attempt of quest 1."""
    game, agents = _table(seed=seed, **options)
    for _ in range(4):
        while game.decision().kind == SPEAK:
            game.step("Hello.")
        game.step((0, 1))
        while game.decision().kind == "vote":
            game.step(False)
    while game.decision().kind == SPEAK:
        game.step("Hello.")
    game.step(team)
    while game.decision().player != seat:
        game.step(True)
    return agents[seat].act(game.decision())


@pytest.mark.parametrize(
    ("fifth_rejection", "merlin_approves"),
    [("evil_wins", {True: 30}), ("quest_goes_anyway", {False: 21, True: 9})],  # seeded
)
def test_merlin_must_approve_the_fifth_team_only_when_its_rejection_loses(
    fifth_rejection, merlin_approves
):
    # Merlin (seat 0) on a team with Morgana (seat 4): approves at the fifth attempt only if
    # a fifth rejection hands evil the game; otherwise the usual (mostly reject) rule
    votes = Counter(
        _fifth_vote(0, (2, 4), seed, fifth_rejection=fifth_rejection) for seed in range(30)
    )
    assert votes == Counter(merlin_approves)


def test_release_rules_forced_team_and_assassin_waits_for_the_last_chance():
    options = {"fifth_rejection": "quest_goes_anyway", "assassin_timing": "once_after_any_quest"}
    strikes = passes = forced = 0
    for seed in range(80):
        rec = play_game(make_game("avalon", options), [AvalonScripted() for _ in range(6)], seed)
        assassin = next(p["id"] for p in rec["players"] if p["role"] == "assassin")
        successes = 0
        for e in rec["events"]:
            if e["type"] == "quest":
                successes += e["data"]["success"]
            elif e["type"] == "forced_team":
                forced += 1
            elif e["type"] == "assassinate":
                assert e["player"] == assassin
                if successes < 3:
                    assert e["data"]["target"] is None and e["visible_to"] == [assassin]
                    passes += 1
                else:
                    assert e["data"]["target"] is not None and e is rec["events"][-1]
                    strikes += 1
        assert (successes == 3) == (rec["result"]["reason"] != "three_fails")
    assert strikes > 10 and passes > 10 and forced > 10


def test_leader_proposes_the_team_it_announced():
    for seed in range(10):
        game, agents = _table(seed=seed)
        leader = game.decision().player
        text = agents[leader].act(game.decision())
        game.step(text)
        while game.decision().kind == SPEAK:
            d = game.decision()
            game.step(agents[d.player].act(d))
        assert agents[leader].act(game.decision()) == parse_proposal(text)


def test_evil_avoid_double_fails_and_fail_when_it_decides():
    games = [
        play_game(make_game("avalon"), [AvalonScripted() for _ in range(6)], s) for s in range(150)
    ]
    for rec in games:
        evil = {p["id"] for p in rec["players"] if p["team"] == "evil"}
        for e in rec["events"]:
            if e["type"] == "quest" and e["data"]["quest"] < 3:
                assert e["data"]["fails"] <= 1 or len(evil & set(e["data"]["team"])) < 2


def test_merlin_never_names_all_evil_players():
    for seed in range(60):
        rec = play_game(make_game("avalon"), [AvalonScripted() for _ in range(6)], seed)
        merlin = next(p["id"] for p in rec["players"] if p["role"] == "merlin")
        evil = {p["id"] for p in rec["players"] if p["team"] == "evil"}
        accused = set()
        for e in rec["events"]:
            if e["type"] == "speech" and e["player"] == merlin:
                accused |= {p for p, pol in parse_claims(e["data"]["text"]) if pol < 0}
        assert not evil <= accused


def test_assassin_names_the_player_who_acted_like_merlin():
    # seat 3 rejects every team with evil and accuses the assassin; seat 0 (Merlin) hides
    game, agents = _table()
    for q, team in enumerate([(0, 4), (0, 1, 2), (0, 1, 2, 3)]):
        while game.decision().kind == SPEAK:
            d = game.decision()
            game.step("I suspect Player 6." if d.player == 3 else "Hello.")
        if q == 0:
            game.step(team)
            while game.decision().kind == "vote":
                game.step(game.decision().player != 3)
            while game.decision().kind == "quest":
                game.step(True)
            continue
        game.step(team)
        while game.decision().kind == "vote":
            game.step(True)
        while game.decision().kind == "quest":
            game.step(True)
    d = game.decision()
    assert d.kind == "assassinate"
    assert agents[5].act(d) == 3


def test_scripted_speech_is_templated_and_games_are_deterministic():
    recs = [
        play_game(make_game("avalon"), [AvalonScripted() for _ in range(6)], 7) for _ in range(2)
    ]
    assert json.dumps(recs[0]) == json.dumps(recs[1])
    template = re.compile(
        r"^((I propose|I suspect|I will approve|I vote to reject|I have no strong read|Player \d)"
        r"[^.]*\.\s?)+$"
    )
    for e in recs[0]["events"]:
        if e["type"] == "speech":
            assert template.match(e["data"]["text"]), e["data"]["text"]


@pytest.mark.parametrize(
    "options", [{}, {"n_players": 7, "oberon": True}, {"n_players": 10, "mordred": True}]
)
def test_both_sides_win_sometimes(options):
    n = make_game("avalon", options).config.n_players
    winners = Counter(
        play_game(make_game("avalon", options), [AvalonScripted() for _ in range(n)], s)["result"][
            "winner"
        ]
        for s in range(150)
    )
    assert winners["good"] > 5 and winners["evil"] > 5
