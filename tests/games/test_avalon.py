"""Known-value tests of every Avalon rule (docs/games.md, "Avalon") and option."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stackelberg.agents.base import RandomAgent
from stackelberg.agents.prompting import history_lines
from stackelberg.agents.prompts import describe_event
from stackelberg.agents.runner import play_game
from stackelberg.agents.scripted.avalon import AvalonScripted
from stackelberg.games import ConfigError, GameError, IllegalActionError, make_game
from stackelberg.games.avalon import (
    EVIL_COUNT,
    ROLE_TEAM,
    TEAM_SIZES,
    Avalon,
    AvalonConfig,
    default_roles,
    fails_needed,
)
from stackelberg.games.base import SPEAK

#: the paper's code release: ties approve, the fifth team goes anyway, one assassination
#: attempt offered after every quest
RELEASE = {
    "tied_team_vote": "approved",
    "fifth_rejection": "quest_goes_anyway",
    "assassin_timing": "once_after_any_quest",
}
# seats: merlin 0, percival 1, loyal 2 and 3, morgana 4, assassin 5 (the paper's setup)
PAPER = ["merlin", "percival", "loyal_servant", "loyal_servant", "morgana", "assassin"]
# 7 players: merlin 0, percival 1, loyal 2 and 3, minion 4, assassin 5, morgana 6
SEVEN = ["merlin", "percival", "loyal_servant", "loyal_servant", "minion", "assassin", "morgana"]
DATA_KEYS = {
    "knowledge": {"sees"},
    "speech": {"text"},
    "propose": {"quest", "attempt", "team"},
    "vote": {"approve"},
    "team_result": {"approved", "approvals"},
    "quest": {"quest", "team", "fails", "success"},
    "assassinate": {"target"},
    "forced_team": {"quest", "attempt", "team"},
}


def new(roles=PAPER, seed=0, **options):
    """A game with fixed roles; the role list doubles as the configured deck."""
    game = make_game("avalon", {"n_players": len(roles), "roles": list(roles), **options})
    return game.reset(seed, list(roles))


def discuss(game):
    """Everyone speaks; returns the speakers in order."""
    speakers = []
    while game.decision().kind == SPEAK:
        speakers.append(game.decision().player)
        game.step("Hello.")
    return speakers


def attempt(game, team, approvers=None):
    """Discussion, the leader's proposal, and a vote (everyone approves unless given)."""
    discuss(game)
    game.step(tuple(team))
    while (d := game.decision()) is not None and d.kind == "vote":
        game.step(approvers is None or d.player in approvers)


def cards(game, failers=()):
    """Quest cards: the given players play Fail where they may (evil only)."""
    while (d := game.decision()) is not None and d.kind == "quest":
        game.step(not (d.player in failers and False in d.options))


def quest(game, team, failers=()):
    attempt(game, team)
    cards(game, failers)


def of_type(game, type_):
    return [e for e in game.events if e.type == type_]


# ---- setup: decks, knowledge, leader ---------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "deck"),
    [
        ({}, PAPER),
        ({"n_players": 5}, ["merlin", "percival", "loyal_servant", "morgana", "assassin"]),
        ({"n_players": 7}, SEVEN),
        ({"n_players": 8}, SEVEN + ["loyal_servant"]),
        ({"n_players": 9}, SEVEN + ["loyal_servant"] * 2),
        ({"n_players": 10}, SEVEN + ["loyal_servant"] * 2 + ["minion"]),
        ({"n_players": 7, "mordred": True}, [r.replace("minion", "mordred") for r in SEVEN]),
        ({"n_players": 7, "oberon": True}, [r.replace("minion", "oberon") for r in SEVEN]),
        ({"mordred": True}, [r.replace("morgana", "mordred") for r in PAPER]),
        ({"oberon": True}, [r.replace("morgana", "oberon") for r in PAPER]),
        (
            {"n_players": 7, "mordred": True, "oberon": True},
            [r.replace("minion", "mordred").replace("morgana", "oberon") for r in SEVEN],
        ),
        (
            {"n_players": 10, "mordred": True, "oberon": True},
            SEVEN[:4]
            + ["mordred", "assassin", "morgana", "loyal_servant", "loyal_servant", "oberon"],
        ),
    ],
)
def test_default_decks(options, deck):
    game = make_game("avalon", options)
    assert sorted(game.config.deck()) == sorted(deck)
    game.reset(3)
    n = game.config.n_players
    assert sorted(p.role for p in game.players) == sorted(deck)
    assert sum(p.team == "evil" for p in game.players) == EVIL_COUNT[n]
    assert all(p.team == ROLE_TEAM[p.role] for p in game.players)


@pytest.mark.parametrize(
    ("roles", "options", "expected"),
    [
        (PAPER, {}, {0: [4, 5], 1: [0, 4], 4: [5], 5: [4]}),
        (SEVEN, {}, {0: [4, 5, 6], 1: [0, 6], 4: [5, 6], 5: [4, 6], 6: [4, 5]}),
        # Mordred (seat 4) is hidden from Merlin, seen by evil
        (
            [r.replace("minion", "mordred") for r in SEVEN],
            {},
            {0: [5, 6], 1: [0, 6], 4: [5, 6], 5: [4, 6], 6: [4, 5]},
        ),
        # Oberon (seat 4) sees nobody and no evil player sees him; Merlin sees him by default
        (
            [r.replace("minion", "oberon") for r in SEVEN],
            {},
            {0: [4, 5, 6], 1: [0, 6], 5: [6], 6: [5]},
        ),
        (
            [r.replace("minion", "oberon") for r in SEVEN],
            {"merlin_sees_oberon": False},
            {0: [5, 6], 1: [0, 6], 5: [6], 6: [5]},
        ),
        # no Morgana: Percival sees only Merlin
        (
            [r.replace("morgana", "minion") for r in SEVEN],
            {},
            {0: [4, 5, 6], 1: [0], 4: [5, 6], 5: [4, 6], 6: [4, 5]},
        ),
    ],
)
def test_knowledge(roles, options, expected):
    game = new(roles, **options)
    events = of_type(game, "knowledge")
    assert {e.player: e.data["sees"] for e in events} == expected
    for e in events:
        assert e.visible_to == (e.player,)
        assert (e.phase, e.round) == ("setup", 0)
    assert game.private_knowledge(0)["sees"] == expected[0]


@pytest.mark.parametrize("seed", range(8))
def test_first_leader_is_a_seeded_draw_before_the_deal(seed):
    dealt = make_game("avalon").reset(seed)
    fixed = new(seed=seed)
    assert dealt.leader == fixed.leader == random.Random(seed).randrange(6)
    assert discuss(fixed)[0] == fixed.leader


def test_reset_with_roles_must_match_the_deck():
    game = make_game("avalon")
    with pytest.raises(ConfigError, match="permutation"):
        game.reset(0, SEVEN)
    with pytest.raises(ConfigError, match="permutation"):
        game.reset(0, [r.replace("morgana", "minion") for r in PAPER])


# ---- discussion, proposals and votes ---------------------------------------------------------
def test_discussion_in_seat_order_from_the_leader_then_proposal():
    game = new(seed=1)
    leader = game.leader
    order = []
    while game.decision().kind == SPEAK:
        d = game.decision()
        order.append(d.player)
        nxt = game.next_speaker()
        game.step(f"I am {d.player}.")
        if nxt is not None:
            assert game.decision().player == nxt
    assert order == [(leader + i) % 6 for i in range(6)]
    d = game.decision()
    assert (d.kind, d.player) == ("propose", leader)
    assert game.next_speaker() is None
    assert d.options == tuple(t for t in d.options if len(t) == 2)
    assert (
        len(d.options) == 15
        and (0, 1) in d.options
        and all(t == tuple(sorted(t)) for t in d.options)
    )
    speeches = of_type(game, "speech")
    assert [e.data for e in speeches] == [{"text": f"I am {p}."} for p in order]
    assert all(e.phase == "discussion" and e.round == 1 and e.visible_to == "all" for e in speeches)


@pytest.mark.parametrize(
    ("n", "approvals", "approved"),
    [(6, 3, False), (6, 4, True), (5, 3, True), (5, 2, False), (10, 5, False), (10, 6, True)],
)
def test_strict_majority(n, approvals, approved):
    game = make_game("avalon", {"n_players": n}).reset(0)
    attempt(game, range(TEAM_SIZES[n][0]), approvers=set(range(approvals)))
    (res,) = of_type(game, "team_result")
    assert res.data == {"approved": approved, "approvals": approvals}
    assert game.phase == ("quest" if approved else "discussion")


def test_votes_revealed_together_after_the_last_voter():
    game = new(seed=2)
    discuss(game)
    game.step((0, 1))
    (prop,) = of_type(game, "propose")
    assert prop.player == game.leader and prop.data == {"quest": 1, "attempt": 1, "team": [0, 1]}
    voters = []
    while game.decision().kind == "vote":
        assert not of_type(game, "vote")
        voters.append(game.decision().player)
        game.step(game.decision().player % 2 == 0)
    assert voters == [(prop.player + i) % 6 for i in range(6)]
    votes = of_type(game, "vote")
    assert [(e.player, e.data) for e in votes] == [(p, {"approve": p % 2 == 0}) for p in range(6)]
    assert game.events[-1].type == "team_result"
    assert game.events[-1].data == {"approved": False, "approvals": 3}


def test_leader_passes_clockwise_after_every_proposal():
    game = new(seed=4)
    first = game.leader
    attempt(game, (0, 1), approvers=set())  # rejected
    assert game.leader == (first + 1) % 6
    attempt(game, (0, 1))  # approved
    assert game.leader == (first + 2) % 6
    cards(game)
    assert discuss(game)[0] == (first + 2) % 6
    assert [e.player for e in of_type(game, "propose")] == [first, (first + 1) % 6]


def test_discussion_before_a_quests_first_team_only():
    """``discussion="first_attempt"``: a rejected team goes straight to the next leader's
    proposal; the next quest talks again, from its first leader."""
    game = new(seed=4, discussion="first_attempt")
    first = game.leader
    attempt(game, (0, 1), approvers=set())  # talked, then rejected
    assert game.decision().kind == "propose" and game.decision().player == (first + 1) % 6
    attempt(game, (0, 1), approvers=set())  # no talk, rejected again
    attempt(game, (0, 1))  # no talk, approved
    assert [e.data["attempt"] for e in of_type(game, "propose")] == [1, 2, 3]
    assert len(of_type(game, "speech")) == 6
    cards(game)
    assert discuss(game)[0] == (first + 3) % 6 and len(of_type(game, "speech")) == 12
    assert make_game("avalon").config.discussion == "every_attempt"


def test_five_rejections_in_a_row_evil_wins():
    game = new()
    for _ in range(4):
        attempt(game, (0, 1), approvers=set())
    assert game.attempt == 5 and not game.done
    attempt(game, (0, 1), approvers={0, 1, 2})  # a tie rejects
    assert game.done
    assert game.result() == {"winner": "evil", "winners": [4, 5], "reason": "five_rejections"}
    assert [e.data["attempt"] for e in of_type(game, "propose")] == [1, 2, 3, 4, 5]


def test_rejection_count_restarts_each_quest():
    game = new()
    for _ in range(4):
        attempt(game, (0, 1), approvers=set())
    quest(game, (0, 1))
    assert (game.quest, game.attempt) == (2, 1)
    for _ in range(4):
        attempt(game, (0, 1, 2), approvers=set())
    assert not game.done and game.attempt == 5


# ---- quests ----------------------------------------------------------------------------------
@pytest.mark.parametrize("n", range(5, 11))
def test_team_sizes(n):
    deck = default_roles(n)  # good seats first, evil seats last
    game = new(deck)
    evil = {p for p, r in enumerate(deck) if ROLE_TEAM[r] == "evil"}
    sizes = []
    for q in range(5):  # success, fail, success, fail, then quest 5
        discuss(game)
        options = game.decision().options
        sizes.append(len(options[0]))
        team = options[-1] if q % 2 else options[0]
        game.step(team)
        while game.decision().kind == "vote":
            game.step(True)
        cards(game, failers=evil if q % 2 else ())
    assert tuple(sizes) == TEAM_SIZES[n]
    assert game.decision().kind == "assassinate" or game.done


def test_good_must_play_success_evil_may_fail():
    game = new()
    attempt(game, (0, 5))
    d = game.decision()
    assert (d.kind, d.player, d.options) == ("quest", 0, (True,))
    with pytest.raises(IllegalActionError):
        game.step(False)
    game.step(True)
    d = game.decision()
    assert (d.player, d.options) == (5, (True, False))
    n_events = len(game.events)
    game.step(False)
    assert of_type(game, "quest")[0].data == {
        "quest": 1,
        "team": [0, 5],
        "fails": 1,
        "success": False,
    }
    assert len(game.events) == n_events + 1  # nothing revealed card by card
    assert game.private_knowledge(5)["cards_played"] == [[1, False]]


@pytest.mark.parametrize(
    ("roles", "quest_no", "fails", "success"),
    [
        (PAPER, 1, 1, False),
        (PAPER, 4, 1, False),
        (SEVEN, 3, 1, False),
        (SEVEN, 4, 1, True),
        (SEVEN, 4, 2, False),
        (SEVEN, 5, 1, False),
    ],
)
def test_fail_cards_needed(roles, quest_no, fails, success):
    n = len(roles)
    game = new(roles)
    evil = [p for p, r in enumerate(roles) if ROLE_TEAM[r] == "evil"]
    good = [p for p, r in enumerate(roles) if ROLE_TEAM[r] == "good"]
    for q in range(1, quest_no):  # alternate so the game does not end early
        size = TEAM_SIZES[n][q - 1]
        quest(game, sorted(evil[:1] + good[: size - 1]), failers=evil[:1] if q % 2 else ())
    size = TEAM_SIZES[n][quest_no - 1]
    team = sorted(evil[:fails] + good[: size - fails])
    quest(game, team, failers=evil[:fails])
    assert of_type(game, "quest")[-1].data == {
        "quest": quest_no,
        "team": team,
        "fails": fails,
        "success": success,
    }
    assert fails_needed(n, quest_no) == (2 if (quest_no, n >= 7) == (4, True) else 1)


def test_three_fails_evil_wins():
    game = new()
    quest(game, (0, 5), failers={5})
    quest(game, (0, 1, 2))
    quest(game, (0, 1, 4, 5), failers={4, 5})
    quest(game, (0, 1, 4), failers={4})
    assert game.result() == {"winner": "evil", "winners": [4, 5], "reason": "three_fails"}
    assert game.decision() is None and game.phase == "over"


@pytest.mark.parametrize(
    ("target", "winner", "reason"),
    [
        (0, "evil", "merlin_assassinated"),
        (1, "good", "assassin_missed"),
        (3, "good", "assassin_missed"),
    ],
)
def test_three_successes_then_assassination(target, winner, reason):
    game = new()
    quest(game, (0, 1))
    quest(game, (0, 1, 2), failers=())
    quest(game, (0, 1, 2, 3))
    d = game.decision()
    assert (game.phase, d.kind, d.player, d.options) == (
        "assassination",
        "assassinate",
        5,
        (0, 1, 2, 3),
    )
    with pytest.raises(IllegalActionError):
        game.step(target == 1)  # a bool is not a player id
    game.step(target)
    (ev,) = of_type(game, "assassinate")
    assert (ev.player, ev.data, ev.visible_to) == (5, {"target": target}, "all")
    winners = [0, 1, 2, 3] if winner == "good" else [4, 5]
    assert game.result() == {"winner": winner, "winners": winners, "reason": reason}


def test_assassin_may_name_oberon_whom_he_does_not_see():
    roles = [r.replace("minion", "oberon") for r in SEVEN]
    game = new(roles)
    for team in ((0, 1), (0, 1, 2), (0, 1, 2)):
        quest(game, team)
    assert game.decision().options == (0, 1, 2, 3, 4)
    game.step(4)
    assert game.result()["reason"] == "assassin_missed"


# ---- rules where the paper's release differs (options) ---------------------------------------
@pytest.mark.parametrize(
    ("n", "approvals", "tied_team_vote", "approved"),
    [
        (6, 3, "rejected", False),  # the rulebook: a tie rejects
        (6, 3, "approved", True),  # the release: half the votes approve
        (6, 2, "approved", False),
        (6, 4, "rejected", True),
        (5, 2, "approved", False),  # an odd table has no tie
        (5, 3, "rejected", True),
        (10, 5, "approved", True),
        (10, 5, "rejected", False),
    ],
)
def test_tied_team_vote(n, approvals, tied_team_vote, approved):
    game = make_game("avalon", {"n_players": n, "tied_team_vote": tied_team_vote}).reset(0)
    attempt(game, range(TEAM_SIZES[n][0]), approvers=set(range(approvals)))
    (res,) = of_type(game, "team_result")
    assert res.data == {"approved": approved, "approvals": approvals}
    assert game.phase == ("quest" if approved else "discussion")


@pytest.mark.parametrize(
    ("fifth_rejection", "reason", "phase"),
    [("evil_wins", "five_rejections", "over"), ("quest_goes_anyway", None, "quest")],
)
def test_fifth_rejection(fifth_rejection, reason, phase):
    game = new(fifth_rejection=fifth_rejection)
    for team in ((0, 1), (0, 2), (0, 3), (1, 2)):
        attempt(game, team, approvers=set())
    assert game.attempt == 5 and not game.done
    attempt(game, (4, 5), approvers={0, 1, 2})  # a tie rejects the fifth team
    assert game.phase == phase
    assert of_type(game, "team_result")[-1].data == {"approved": False, "approvals": 3}
    if reason is not None:
        assert game.result() == {"winner": "evil", "winners": [4, 5], "reason": reason}
        assert not of_type(game, "forced_team")
        return
    (ev,) = of_type(game, "forced_team")
    assert game.events[-1] is ev
    assert (ev.player, ev.phase, ev.round, ev.visible_to) == (None, "vote", 1, "all")
    assert ev.data == {"quest": 1, "attempt": 5, "team": [4, 5]}
    assert describe_event(game, ev, 0) == (
        "That was the fifth rejected team in a row: Player 5, Player 6 go on quest 1 anyway."
    )
    d = game.decision()
    assert (d.kind, d.player, d.options) == ("quest", 4, (True, False))
    cards(game, failers={5})
    assert of_type(game, "quest")[-1].data == {
        "quest": 1,
        "team": [4, 5],
        "fails": 1,
        "success": False,
    }
    assert (game.quest, game.attempt, game.phase) == (2, 1, "discussion")
    for _ in range(4):  # the count of rejections restarts with the quest
        attempt(game, (0, 1, 2), approvers=set())
    attempt(game, (0, 1, 2), approvers=set())
    assert game.phase == "quest" and len(of_type(game, "forced_team")) == 2


#: quest n's team in the paper setup: good players only (a success) or with the assassin (a fail)
GOOD_TEAMS = [(0, 1), (0, 1, 2), (0, 1, 2, 3), (0, 1, 2), (0, 1, 2, 3)]
FAIL_TEAMS = [(0, 5), (0, 1, 5), (0, 1, 2, 5), (0, 1, 5), (0, 1, 2, 5)]
#: (id, assassin_timing, quest outcomes (S success, F failed by the assassin), the Assassin's
#:  answers in order, expected offers (after quest q, may pass), expected result (None: the
#:  game goes on))
ASSASSIN_TABLE = [
    (
        "rulebook_after_three_successes",
        "after_three_successes",
        "SFSS",
        [1],
        [(4, False)],
        ("good", "assassin_missed"),
    ),
    (
        "rulebook_no_offer_before",
        "after_three_successes",
        "SS",
        [],
        [],
        None,
    ),
    (
        "release_early_hit",
        "once_after_any_quest",
        "S",
        [0],
        [(1, True)],
        ("evil", "merlin_assassinated"),
    ),
    (
        "release_offer_after_a_failed_quest",
        "once_after_any_quest",
        "F",
        [0],
        [(1, True)],
        ("evil", "merlin_assassinated"),
    ),
    (
        "release_wait_then_hit_at_the_last_chance",
        "once_after_any_quest",
        "SSS",
        [None, None, 0],
        [(1, True), (2, True), (3, False)],
        ("evil", "merlin_assassinated"),
    ),
    (
        "release_wait_then_miss_at_the_last_chance",
        "once_after_any_quest",
        "SFSS",
        [None, None, None, 2],
        [(1, True), (2, True), (3, True), (4, False)],
        ("good", "assassin_missed"),
    ),
    (
        "release_early_miss_play_goes_on",
        "once_after_any_quest",
        "SS",
        [1],
        [(1, True)],
        None,
    ),
    (
        "release_early_miss_then_good_wins_without_a_second_try",
        "once_after_any_quest",
        "SSS",
        [3],
        [(1, True)],
        ("good", "assassin_missed"),
    ),
    (
        "release_no_offer_after_the_third_failure",
        "once_after_any_quest",
        "FFF",
        [None, None],
        [(1, True), (2, True)],
        ("evil", "three_fails"),
    ),
    (
        "release_miss_then_three_fails",
        "once_after_any_quest",
        "FFSF",
        [None, 1],
        [(1, True), (2, True)],
        ("evil", "three_fails"),
    ),
]


@pytest.mark.parametrize("case", ASSASSIN_TABLE, ids=[c[0] for c in ASSASSIN_TABLE])
def test_assassin_timing(case):
    _, timing, quests, answers, offers, expected = case
    game = new(assassin_timing=timing)
    answers, seen = list(answers), []
    for q, outcome in enumerate(quests):
        team = GOOD_TEAMS[q] if outcome == "S" else FAIL_TEAMS[q]
        quest(game, team, failers=() if outcome == "S" else (5,))
        if (d := game.decision()) is not None and d.kind == "assassinate":
            assert (game.phase, game.round, d.player) == ("assassination", game.quest, 5)
            assert d.options[:4] == (0, 1, 2, 3) and d.options[4:] in ((), (None,))
            seen.append((game.quest, None in d.options))
            game.step(answers.pop(0))
    assert seen == offers and not answers
    if expected is None:
        assert game.decision().kind == SPEAK and not game.done
    else:
        winner, reason = expected
        winners = [0, 1, 2, 3] if winner == "good" else [4, 5]
        assert game.result() == {"winner": winner, "winners": winners, "reason": reason}
    passes = [e for e in of_type(game, "assassinate") if e.data["target"] is None]
    strikes = [e for e in of_type(game, "assassinate") if e.data["target"] is not None]
    assert all(e.visible_to == (5,) and e.player == 5 for e in passes)
    assert all(e.visible_to == "all" and e.player == 5 for e in strikes)
    assert [e.data["target"] for e in strikes] == [a for a in case[3] if a is not None]


def test_assassin_pass_and_miss_descriptions():
    game = new(assassin_timing="once_after_any_quest")
    quest(game, GOOD_TEAMS[0])
    d = game.decision()
    assert d.prompt == (
        "Quest 1 is over. Name the player you believe is Merlin (your one attempt: right, evil "
        "wins; wrong, the game goes on), or None to wait."
    )
    game.step(None)
    (ev,) = of_type(game, "assassinate")
    assert (
        describe_event(game, ev, 5)
        == "After quest 1 you keep your assassination attempt for later."
    )
    assert not any("assassination" in line for line in history_lines(game, 0, game.events))
    quest(game, GOOD_TEAMS[1])
    game.step(2)
    ev = of_type(game, "assassinate")[-1]
    assert describe_event(game, ev, 0) == (
        "The Assassin (Player 6) names Player 3 as Merlin. That is not Merlin."
    )
    assert game.decision().kind == SPEAK and game.quest == 3
    # the rulebook's description is unchanged
    game = new()
    for team in GOOD_TEAMS[:3]:
        quest(game, team)
    game.step(2)
    ev = of_type(game, "assassinate")[-1]
    assert describe_event(game, ev, 0) == "The Assassin (Player 6) names Player 3 as Merlin."


def test_release_options_are_recorded_only_when_set():
    rec = play_game(new(), [RandomAgent() for _ in range(6)], 0)
    assert set(rec["config"]) == {
        "n_players",
        "roles",
        "mordred",
        "oberon",
        "merlin_sees_oberon",
        "discussion",
    }
    game = make_game("avalon", RELEASE)
    rec = play_game(game, [RandomAgent() for _ in range(6)], 0)
    assert {k: rec["config"][k] for k in RELEASE} == RELEASE
    assert Avalon.restore(rec).config == game.config


# ---- errors and options ----------------------------------------------------------------------
def test_illegal_action_leaves_state_unchanged():
    game = new()
    discuss(game)
    d = game.decision()
    before = (len(game.events), d)
    for bad in [(0, 1, 2), (1, 1), (1, 0), "Player 1", 7]:
        with pytest.raises(IllegalActionError) as err:
            game.step(bad)
        msg = str(err.value)
        assert repr(bad) in msg and f"Player {d.player + 1}" in msg and "legal" in msg
        assert (len(game.events), game.decision()) == before
    game.step((0, 1))
    for bad in ("yes", 1, 0):  # 1 == True, but a vote is a bool
        with pytest.raises(IllegalActionError, match="legal"):
            game.step(bad)
    assert not of_type(game, "vote")
    with pytest.raises(IllegalActionError, match="must speak"):
        new().step(True)


def test_game_over_has_no_legal_action():
    game = new()
    for _ in range(5):
        attempt(game, (0, 1), approvers=set())
    assert game.legal_actions() == ()
    with pytest.raises(IllegalActionError, match="over"):
        game.step(True)
    with pytest.raises(GameError):
        new().result()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"n_players": 4}, "n_players=4"),
        ({"n_players": 11}, r"^avalon: n_players=11; must be an integer from 5 to 10$"),
        ({"n_players": "six"}, "n_players"),
        ({"mordred": "maybe"}, "mordred"),
        ({"mordred": True, "oberon": True}, "too few"),
        ({"colour": "red"}, "unknown option"),
        ({"roles": "merlin,percival,loyal_servant,loyal_servant,morgana,wizard"}, "wizard"),
        ({"roles": "merlin,percival,loyal_servant,morgana,assassin"}, "n_players=5"),
        ({"roles": "merlin,percival,loyal_servant,minion,morgana,assassin"}, "3 evil"),
        (
            {"roles": "merlin,merlin,loyal_servant,loyal_servant,morgana,assassin"},
            "exactly one merlin",
        ),
        (
            {"roles": "merlin,percival,loyal_servant,loyal_servant,morgana,minion"},
            "exactly one assassin",
        ),
        (
            {"roles": "merlin,percival,percival,loyal_servant,morgana,assassin"},
            "at most one percival",
        ),
        ({"roles": ",".join(PAPER), "mordred": True}, "explicit roles"),
        (
            {"tied_team_vote": "coin"},
            r"^avalon: tied_team_vote='coin'; allowed: rejected, approved$",
        ),
        (
            {"fifth_rejection": "quest_fails"},
            r"^avalon: fifth_rejection='quest_fails'; allowed: evil_wins, quest_goes_anyway$",
        ),
        (
            {"assassin_timing": "never"},
            r"^avalon: assassin_timing='never'; allowed: after_three_successes, "
            r"once_after_any_quest$",
        ),
    ],
)
def test_config_errors(options, match):
    with pytest.raises(ConfigError, match=match):
        make_game("avalon", options)


def test_string_options_parse():
    game = make_game(
        "avalon",
        {"n_players": "7", "oberon": "true", "merlin_sees_oberon": "false", "mordred": "no"},
    )
    assert game.config == AvalonConfig(n_players=7, oberon=True, merlin_sees_oberon=False)
    game = make_game("avalon", {"n_players": "7", "roles": ",".join(SEVEN)})
    assert game.config.roles == tuple(SEVEN)
    assert make_game("avalon", {"roles": "none"}).config.roles is None
    game = make_game(
        "avalon",
        {
            "tied_team_vote": "approved",
            "fifth_rejection": "quest_goes_anyway",
            "assassin_timing": "once_after_any_quest",
        },
    )
    assert game.config == AvalonConfig(**RELEASE)
    assert Avalon().config == AvalonConfig()
    assert default_roles(6) == PAPER


def test_observation_and_descriptions():
    game = new(seed=0)
    quest(game, (0, 5), failers={5})

    def seen(player: int) -> str:
        return "\n".join(history_lines(game, player, game.events))

    text = seen(0)
    assert "You see the evil players: Player 5, Player 6." in text
    assert "Quest 1 (Player 1, Player 6) fails with 1 Fail card." in text
    assert "Player 1 votes approve." in text and "says: Hello." in text
    assert "Merlin is among: Player 1, Player 5" in seen(1)
    assert "Your fellow evil players: Player 6." in seen(4)
    assert "evil players" not in seen(2)
    pub = game.public_state()
    assert pub["quest_results"] == [False] and pub["quest"] == 2 and pub["failures"] == 1
    json.dumps(game.observation(3).data)


# ---- whole games from the record alone -------------------------------------------------------
def check_record(rec):
    """Re-check the rules (under the record's options) from a finished game's record."""
    json.dumps(rec)
    n = len(rec["players"])
    cfg = rec["config"]
    tie_approves = cfg.get("tied_team_vote", "rejected") == "approved"
    forced_quests = cfg.get("fifth_rejection", "evil_wins") == "quest_goes_anyway"
    any_quest = cfg.get("assassin_timing", "after_three_successes") == "once_after_any_quest"
    first_only = cfg.get("discussion", "every_attempt") == "first_attempt"
    roles = [p["role"] for p in rec["players"]]
    teams = [p["team"] for p in rec["players"]]
    assassin = roles.index("assassin")
    assert sum(t == "evil" for t in teams) == EVIL_COUNT[n]
    events = rec["events"]
    for e in events:
        assert set(e["data"]) == DATA_KEYS[e["type"]], e
        if e["type"] == "knowledge":
            assert e["visible_to"] == [e["player"]]
        elif e["type"] == "assassinate" and e["data"]["target"] is None:
            assert any_quest and e["visible_to"] == [assassin] == [e["player"]]
        else:
            assert e["visible_to"] == "all"
    knowing = [
        p
        for p, r in enumerate(roles)
        if r in ("merlin", "percival") or (teams[p] == "evil" and r != "oberon")
    ]
    assert [e["player"] for e in events if e["type"] == "knowledge"] == knowing
    i = len(knowing)
    assert all(e["type"] != "knowledge" for e in events[i:])
    result = rec["result"]
    results, leader, quest_no, attempt_no = [], None, 1, 1
    strikes = []  # the Assassin's named players, in order

    def strike(ev):
        assert ev["type"] == "assassinate" and ev["player"] == assassin
        target = ev["data"]["target"]
        assert teams[target] == "good" or roles[target] == "oberon"
        strikes.append(target)
        return roles[target] == "merlin"

    while True:
        talk = 0 if first_only and attempt_no > 1 else n  # speeches before this proposal
        speeches = events[i : i + talk]
        assert [e["type"] for e in speeches] == ["speech"] * talk
        prop = events[i + talk]
        if leader is not None:
            assert prop["player"] == (leader + 1) % n
        leader = prop["player"]
        assert [e["player"] for e in speeches] == [(leader + k) % n for k in range(talk)]
        assert prop["type"] == "propose"
        i += talk  # the proposal
        assert prop["data"]["quest"] == quest_no == prop["round"]
        assert prop["data"]["attempt"] == attempt_no
        team = prop["data"]["team"]
        assert team == sorted(set(team)) and len(team) == TEAM_SIZES[n][quest_no - 1]
        votes = events[i + 1 : i + n + 1]
        assert [(e["type"], e["player"]) for e in votes] == [("vote", p) for p in range(n)]
        approvals = sum(e["data"]["approve"] for e in votes)
        res = events[i + n + 1]
        assert res["type"] == "team_result"
        approved = 2 * approvals > n or (tie_approves and 2 * approvals == n)
        assert res["data"] == {"approved": approved, "approvals": approvals}
        i += n + 2
        if not approved:
            attempt_no += 1
            if attempt_no <= 5:
                continue
            if not forced_quests:
                assert i == len(events) and result["reason"] == "five_rejections"
                break
            forced = events[i]
            assert forced["type"] == "forced_team" and forced["round"] == quest_no
            assert forced["data"] == {"quest": quest_no, "attempt": 5, "team": team}
            i += 1
        q = events[i]
        assert q["type"] == "quest" and q["data"]["team"] == team and q["data"]["quest"] == quest_no
        n_evil = sum(teams[p] == "evil" for p in team)
        assert 0 <= q["data"]["fails"] <= n_evil
        assert q["data"]["success"] == (q["data"]["fails"] < fails_needed(n, quest_no))
        results.append(q["data"]["success"])
        i += 1
        if results.count(False) == 3:  # no assassination after the third failure
            assert i == len(events) and result["reason"] == "three_fails"
            break
        won = results.count(True) == 3
        if any_quest and not strikes:  # the one attempt is offered after every quest
            ev = events[i]
            assert ev["round"] == quest_no and ev["phase"] == "assassination"
            i += 1
            if ev["data"]["target"] is None:
                assert not won  # no passing at the last chance
            elif strike(ev) or won:
                assert i == len(events)
                break
        elif won:
            if not any_quest:
                strike(events[i])
                i += 1
            assert i == len(events)
            break
        quest_no, attempt_no = quest_no + 1, 1
    if strikes and roles[strikes[-1]] == "merlin":
        assert result["reason"] == "merlin_assassinated"
    elif results.count(True) == 3:
        assert result["reason"] == "assassin_missed"
    assert len(strikes) <= 1
    assert result["winners"] == [p for p in range(n) if teams[p] == result["winner"]]
    assert result["winner"] == ("good" if result["reason"] == "assassin_missed" else "evil")


OPTION_SETS = [
    {},
    {"n_players": 5},
    {"n_players": 7, "mordred": True},
    {"n_players": 8, "oberon": True, "merlin_sees_oberon": False},
    {"n_players": 9},
    {"n_players": 10, "mordred": True, "oberon": True},
    RELEASE,
    {"fifth_rejection": "quest_goes_anyway"},
    {"n_players": 7, "assassin_timing": "once_after_any_quest", "tied_team_vote": "approved"},
    {"n_players": 8, "oberon": True, "assassin_timing": "once_after_any_quest"},
    {"n_players": 5, "fifth_rejection": "quest_goes_anyway", "tied_team_vote": "approved"},
    {"n_players": 5, "discussion": "first_attempt"},
    {"discussion": "first_attempt", **RELEASE},
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), options=st.sampled_from(OPTION_SETS), scripted=st.booleans())
def test_random_and_scripted_games_obey_the_rules(seed, options, scripted):
    game = make_game("avalon", options)
    n = game.config.n_players
    agents = [AvalonScripted() if scripted else RandomAgent() for _ in range(n)]
    rec = play_game(game, agents, seed)
    check_record(rec)
    again = play_game(make_game("avalon", options), [type(a)() for a in agents], seed)
    assert json.dumps(again) == json.dumps(rec)


def test_all_endings_occur():
    reasons = Counter()
    for seed in range(200):
        rec = play_game(make_game("avalon"), [RandomAgent() for _ in range(6)], seed)
        reasons[rec["result"]["reason"]] += 1
    assert set(reasons) == {
        "five_rejections",
        "three_fails",
        "merlin_assassinated",
        "assassin_missed",
    }


def test_all_endings_occur_under_the_release_rules():
    reasons, events = Counter(), Counter()
    for seed in range(200):
        agent = AvalonScripted if seed % 2 else RandomAgent  # the scripted assassin waits
        rec = play_game(
            make_game("avalon", {**RELEASE, "tied_team_vote": "rejected"}),
            [agent() for _ in range(6)],
            seed,
        )
        check_record(rec)
        reasons[rec["result"]["reason"]] += 1
        successes = 0
        for e in rec["events"]:
            if e["type"] == "quest":
                successes += e["data"]["success"]
            elif e["type"] == "assassinate":
                target = e["data"]["target"]
                hit = target is not None and rec["players"][target]["role"] == "merlin"
                kind = "pass" if target is None else "hit" if hit else "miss"
                events[kind, "last" if successes == 3 else "early"] += 1
            elif e["type"] == "forced_team":
                events["forced_team"] += 1
    assert set(reasons) == {"three_fails", "merlin_assassinated", "assassin_missed"}
    assert {("pass", "early"), ("hit", "early"), ("miss", "early")} <= set(events)
    assert {("hit", "last"), ("miss", "last")} <= set(events)
    assert events["forced_team"] > 0 and ("pass", "last") not in events
