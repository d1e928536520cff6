"""ONUW engine: known-value tables for every rule of docs/games.md, options, errors, properties."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stackelberg.agents import make_agent
from stackelberg.agents.prompting import history_lines
from stackelberg.agents.prompts import describe_event
from stackelberg.agents.runner import play_game
from stackelberg.games import ConfigError, IllegalActionError, make_game
from stackelberg.games.base import SPEAK
from stackelberg.games.onuw import DEFAULT_DECKS, ONUW, PAPER_ROLES, ROLE_TEAM

PAPER = ["seer", "robber", "troublemaker", "werewolf", "insomniac", "villager", "villager"]

EVENT_FIELDS = {
    "deal": {"cards", "center"},
    "doppelganger": {"target", "card"},
    "werewolves": {"werewolves"},
    "minion": {"werewolves"},
    "masons": {"masons"},
    "werewolf_peek": {"center_index", "card"},
    "rob": {"target", "new_card"},
    "troublemake": {"targets"},
    "drunk": {"center_index"},
    "insomniac": {"card"},
    "speech": {"text"},
    "vote": {"target"},
    "death": {"players"},
    "speaking_order": {"order"},
}
#: the paper's code release
RELEASE = {
    "speaking_order": "shuffled_once",
    "lone_wolf_peek": False,
    "no_werewolf_result": "draw",
    "deal_werewolf_to_player": True,
}
PAPER_NIGHT = [
    (3, "werewolf_peek", "center:0"),
    (0, "seer", 1),
    (1, "rob", 0),
    (2, "troublemake", (0, 1)),
]


def new(roles, **opts):
    n = opts.setdefault("n_players", 5)
    opts.setdefault("center_cards", len(roles) - n)
    opts.setdefault("roles", tuple(roles))
    game = make_game("onuw", opts)
    return game.reset(0, list(roles))


def night(game, actions):
    """Play the listed night actions (each must be asked of the expected player and kind)."""
    for player, kind, action in actions:
        d = game.decision()
        assert (d.player, d.kind) == (player, kind), f"expected {player} {kind}, got {d}"
        game.step(action)
    assert game.decision() is None or game.decision().kind in (SPEAK, "vote")
    return game


def talk_and_vote(game, votes):
    while game.decision().kind == SPEAK:
        game.step("Hello.")
    for v in votes:
        game.step(v)
    assert game.decision() is None
    return game.result()


def night_events(game):
    return [(e.type, e.player, e.data, e.visible_to) for e in game.events if e.phase == "night"]


# ---- options and setup ----------------------------------------------------------------------
def test_paper_default():
    game = make_game("onuw")
    cfg = game.config
    assert (cfg.n_players, cfg.center_cards, cfg.discussion_rounds, cfg.allow_self_vote) == (
        5,
        2,
        3,
        False,
    )
    assert Counter(cfg.deck) == Counter(PAPER_ROLES)
    assert Counter(PAPER_ROLES) == Counter(
        ["werewolf", "villager", "villager", "seer", "robber", "troublemaker", "insomniac"]
    )
    game.reset(1)
    deal = game.events[0]
    assert deal.type == "deal" and deal.visible_to == () and deal.player is None
    assert len(deal.data["cards"]) == 5 and len(deal.data["center"]) == 2
    assert [p.role for p in game.players] == deal.data["cards"]
    assert all(p.team == ROLE_TEAM[p.role] for p in game.players)


@pytest.mark.parametrize("n", range(3, 11))
@pytest.mark.parametrize("center", [1, 2, 3])
def test_default_decks_every_size(n, center):
    game = make_game("onuw", {"n_players": n, "center_cards": center})
    assert len(game.config.deck) == n + center
    game.reset(0)
    assert game.n_players == n and len(game.center) == center


def test_default_decks_table():
    assert all(len(deck) == k for k, deck in DEFAULT_DECKS.items())
    assert DEFAULT_DECKS[8].count("werewolf") == 2  # the rulebook's 5-player setup
    assert all(deck.count("mason") in (0, 2) for deck in DEFAULT_DECKS.values())


@pytest.mark.parametrize(
    "opts, message",
    [
        ({"n_players": 2}, "n_players=2"),
        ({"n_players": 11}, "n_players=11"),
        ({"center_cards": 0}, "center_cards=0"),
        ({"center_cards": 4}, "center_cards=4"),
        ({"discussion_rounds": -1}, "discussion_rounds=-1"),
        ({"roles": ("werewolf", "seer")}, "roles has 2 cards"),
        (
            {
                "roles": (
                    "werewolf",
                    "seer",
                    "robber",
                    "wizard",
                    "villager",
                    "villager",
                    "insomniac",
                )
            },
            "wizard",
        ),
        (
            {
                "roles": (
                    "doppelganger",
                    "doppelganger",
                    "seer",
                    "robber",
                    "villager",
                    "werewolf",
                    "insomniac",
                )
            },
            "doppelganger",
        ),
        ({"allow_self_vote": "maybe"}, "allow_self_vote"),
        ({"players": 5}, "unknown option"),
        (
            {"speaking_order": "random"},
            r"^onuw: speaking_order='random'; allowed: seat, shuffled_once$",
        ),
        (
            {"no_werewolf_result": "village"},
            r"^onuw: no_werewolf_result='village'; allowed: village_wins_if_nobody_dies, draw$",
        ),
        ({"lone_wolf_peek": "maybe"}, r"^onuw: option lone_wolf_peek='maybe' is not a valid bool$"),
        (
            {
                "deal_werewolf_to_player": True,
                "roles": "minion,seer,robber,troublemaker,villager,villager,insomniac",
            },
            r"^onuw: deal_werewolf_to_player=true needs a werewolf card in the deck; ",
        ),
    ],
)
def test_bad_options(opts, message):
    with pytest.raises(ConfigError, match=message):
        make_game("onuw", opts)


def test_string_options_are_parsed():
    game = make_game(
        "onuw",
        {
            "n_players": "4",
            "center_cards": "3",
            "discussion_rounds": "1",
            "allow_self_vote": "true",
            "roles": "werewolf, werewolf,seer,robber,troublemaker,villager,tanner",
        },
    )
    cfg = game.config
    assert (cfg.n_players, cfg.center_cards, cfg.discussion_rounds, cfg.allow_self_vote) == (
        4,
        3,
        1,
        True,
    )
    assert cfg.roles == (
        "werewolf",
        "werewolf",
        "seer",
        "robber",
        "troublemaker",
        "villager",
        "tanner",
    )
    assert make_game("onuw", {"roles": "none"}).config.roles is None
    game = make_game(
        "onuw",
        {
            "speaking_order": "shuffled_once",
            "lone_wolf_peek": "false",
            "no_werewolf_result": "draw",
            "deal_werewolf_to_player": "true",
        },
    )
    assert {k: getattr(game.config, k) for k in RELEASE} == RELEASE


def test_fixed_roles_must_be_a_permutation():
    game = make_game("onuw")
    with pytest.raises(ConfigError, match="not a permutation"):
        game.reset(0, ["werewolf"] * 7)
    game.reset(0, PAPER)
    assert game.cards == PAPER[:5] and game.center == PAPER[5:]


# ---- the night -------------------------------------------------------------------------------
NIGHT_TABLE = [
    # (id, roles (players then centre), night actions, expected night events, final roles)
    (
        "paper_full_night",
        PAPER,
        [
            (3, "werewolf_peek", "center:1"),
            (0, "seer", 3),
            (1, "rob", 3),
            (2, "troublemake", (0, 1)),
        ],
        [
            ("werewolves", None, {"werewolves": [3]}, (3,)),
            ("werewolf_peek", 3, {"center_index": 1, "card": "villager"}, (3,)),
            ("seer", 0, {"target": 3, "card": "werewolf"}, (0,)),
            ("rob", 1, {"target": 3, "new_card": "werewolf"}, (1,)),
            ("troublemake", 2, {"targets": [0, 1]}, (2,)),
            ("insomniac", 4, {"card": "insomniac"}, (4,)),
        ],
        ["werewolf", "seer", "troublemaker", "robber", "insomniac"],
    ),
    (
        "seer_center_and_insomniac_swapped",
        PAPER,
        [
            (3, "werewolf_peek", "center:0"),
            (0, "seer", "center:0,1"),
            (1, "rob", 4),
            (2, "troublemake", (3, 4)),
        ],
        [
            ("werewolves", None, {"werewolves": [3]}, (3,)),
            ("werewolf_peek", 3, {"center_index": 0, "card": "villager"}, (3,)),
            ("seer", 0, {"center_indexes": [0, 1], "cards": ["villager", "villager"]}, (0,)),
            ("rob", 1, {"target": 4, "new_card": "insomniac"}, (1,)),
            ("troublemake", 2, {"targets": [3, 4]}, (2,)),
            ("insomniac", 4, {"card": "werewolf"}, (4,)),
        ],
        ["seer", "insomniac", "troublemaker", "robber", "werewolf"],
    ),
    (
        "two_werewolves_no_peek_minion_masons",
        ["werewolf", "minion", "mason", "mason", "werewolf", "seer", "villager", "villager"],
        [],
        [
            ("werewolves", None, {"werewolves": [0, 4]}, (0, 4)),
            ("minion", None, {"werewolves": [0, 4]}, (1,)),
            ("masons", None, {"masons": [2, 3]}, (2, 3)),
        ],
        ["werewolf", "minion", "mason", "mason", "werewolf"],
    ),
    (
        "minion_without_werewolves_and_lone_mason",
        ["minion", "mason", "villager", "drunk", "hunter", "werewolf", "mason"],
        [(3, "drunk", "center:0")],
        [
            ("minion", None, {"werewolves": []}, (0,)),
            ("masons", None, {"masons": [1]}, (1,)),
            ("drunk", 3, {"center_index": 0}, (3,)),
        ],
        ["minion", "mason", "villager", "werewolf", "hunter"],
    ),
    (
        "doppelganger_copies_seer_and_acts_first",
        ["doppelganger", "seer", "werewolf", "villager", "robber", "villager", "insomniac"],
        [
            (0, "doppelganger", 1),
            (0, "seer", 2),
            (2, "werewolf_peek", "center:1"),
            (1, "seer", 0),
            (4, "rob", 0),
        ],
        [
            ("doppelganger", 0, {"target": 1, "card": "seer"}, (0,)),
            ("seer", 0, {"target": 2, "card": "werewolf"}, (0,)),
            ("werewolves", None, {"werewolves": [2]}, (2,)),
            ("werewolf_peek", 2, {"center_index": 1, "card": "insomniac"}, (2,)),
            ("seer", 1, {"target": 0, "card": "doppelganger"}, (1,)),
            ("rob", 4, {"target": 0, "new_card": "doppelganger"}, (4,)),
        ],
        ["robber", "seer", "werewolf", "villager", "seer"],
    ),
    (
        "doppelganger_werewolf_joins_the_pack",
        ["doppelganger", "werewolf", "minion", "villager", "seer", "villager", "robber"],
        [(0, "doppelganger", 1), (4, "seer", 0)],
        [
            ("doppelganger", 0, {"target": 1, "card": "werewolf"}, (0,)),
            ("werewolves", None, {"werewolves": [0, 1]}, (0, 1)),
            ("minion", None, {"werewolves": [0, 1]}, (2,)),
            ("seer", 4, {"target": 0, "card": "doppelganger"}, (4,)),
        ],
        ["werewolf", "werewolf", "minion", "villager", "seer"],
    ),
    (
        "doppelganger_minion_and_mason",
        ["doppelganger", "werewolf", "minion", "mason", "mason", "villager", "seer", "robber"],
        [(0, "doppelganger", 2), (1, "werewolf_peek", "center:0")],
        [
            ("doppelganger", 0, {"target": 2, "card": "minion"}, (0,)),
            ("werewolves", None, {"werewolves": [1]}, (1,)),
            ("werewolf_peek", 1, {"center_index": 0, "card": "villager"}, (1,)),
            ("minion", None, {"werewolves": [1]}, (0, 2)),
            ("masons", None, {"masons": [3, 4]}, (3, 4)),
        ],
        ["minion", "werewolf", "minion", "mason", "mason"],
    ),
    (
        "doppelganger_mason",
        ["doppelganger", "werewolf", "villager", "mason", "villager", "mason", "seer"],
        [(0, "doppelganger", 3), (1, "werewolf_peek", "center:0")],
        [
            ("doppelganger", 0, {"target": 3, "card": "mason"}, (0,)),
            ("werewolves", None, {"werewolves": [1]}, (1,)),
            ("werewolf_peek", 1, {"center_index": 0, "card": "mason"}, (1,)),
            ("masons", None, {"masons": [0, 3]}, (0, 3)),
        ],
        ["mason", "werewolf", "villager", "mason", "villager"],
    ),
    (
        "doppelganger_insomniac_wakes_after_insomniac",
        ["insomniac", "doppelganger", "werewolf", "troublemaker", "villager", "villager", "seer"],
        [(1, "doppelganger", 0), (2, "werewolf_peek", "center:1"), (3, "troublemake", (0, 1))],
        [
            ("doppelganger", 1, {"target": 0, "card": "insomniac"}, (1,)),
            ("werewolves", None, {"werewolves": [2]}, (2,)),
            ("werewolf_peek", 2, {"center_index": 1, "card": "seer"}, (2,)),
            ("troublemake", 3, {"targets": [0, 1]}, (3,)),
            ("insomniac", 0, {"card": "doppelganger"}, (0,)),
            ("insomniac", 1, {"card": "insomniac"}, (1,)),
        ],
        ["insomniac", "insomniac", "werewolf", "troublemaker", "villager"],
    ),
    (
        "doppelganger_robber_and_troublemaker_and_drunk",
        [
            "doppelganger",
            "werewolf",
            "robber",
            "troublemaker",
            "drunk",
            "villager",
            "villager",
            "seer",
        ],
        [
            (0, "doppelganger", 2),
            (0, "rob", 1),
            (1, "werewolf_peek", "center:2"),
            (2, "rob", 1),
            (3, "troublemake", (0, 4)),
            (4, "drunk", "center:0"),
        ],
        [
            ("doppelganger", 0, {"target": 2, "card": "robber"}, (0,)),
            ("rob", 0, {"target": 1, "new_card": "werewolf"}, (0,)),
            # the dealt werewolf still wakes; the doppelganger-robber does not (no new action)
            ("werewolves", None, {"werewolves": [1]}, (1,)),
            ("werewolf_peek", 1, {"center_index": 2, "card": "seer"}, (1,)),
            ("rob", 2, {"target": 1, "new_card": "doppelganger"}, (2,)),
            ("troublemake", 3, {"targets": [0, 4]}, (3,)),
            ("drunk", 4, {"center_index": 0}, (4,)),
        ],
        ["drunk", "robber", "robber", "troublemaker", "villager"],
    ),
    (
        "doppelganger_troublemaker_and_drunk_copies",
        [
            "doppelganger",
            "werewolf",
            "troublemaker",
            "villager",
            "drunk",
            "seer",
            "villager",
            "robber",
        ],
        [
            (0, "doppelganger", 4),
            (0, "drunk", "center:1"),
            (1, "werewolf_peek", "center:1"),
            (2, "troublemake", (0, 1)),
            (4, "drunk", "center:0"),
        ],
        [
            ("doppelganger", 0, {"target": 4, "card": "drunk"}, (0,)),
            ("drunk", 0, {"center_index": 1}, (0,)),
            ("werewolves", None, {"werewolves": [1]}, (1,)),
            ("werewolf_peek", 1, {"center_index": 1, "card": "doppelganger"}, (1,)),
            ("troublemake", 2, {"targets": [0, 1]}, (2,)),
            ("drunk", 4, {"center_index": 0}, (4,)),
        ],
        ["werewolf", "villager", "troublemaker", "villager", "seer"],
    ),
]


@pytest.mark.parametrize("case", NIGHT_TABLE, ids=[c[0] for c in NIGHT_TABLE])
def test_night(case):
    _, roles, actions, expected, final = case
    game = night(new(roles), actions)
    assert night_events(game) == expected
    assert game.final_roles() == final
    assert [p.role for p in game.players] == roles[:5]  # players keep the DEALT card


def test_seer_options_and_one_center_card():
    game = new(["seer", "werewolf", "villager", "villager", "robber", "troublemaker"])
    game.step("center:0")  # lone werewolf peek: one option
    d = game.decision()
    assert d.kind == "seer" and d.options == (1, 2, 3, 4)  # no pair of centre cards exists
    game = new(PAPER)
    game.step("center:0")
    assert game.decision().options == (1, 2, 3, 4, "center:0,1")
    game = new(PAPER + ["villager"])
    assert game.decision().options == ("center:0", "center:1", "center:2")
    game.step("center:0")
    assert game.decision().options[-3:] == ("center:0,1", "center:0,2", "center:1,2")


def test_troublemaker_and_robber_options_exclude_self():
    game = new(PAPER)
    game.step("center:0")
    game.step(1)
    assert game.decision().options == (0, 2, 3, 4)
    game.step(0)
    assert game.decision().options == ((0, 1), (0, 3), (0, 4), (1, 3), (1, 4), (3, 4))


def test_no_decision_for_roles_that_do_not_wake():
    roles = ["villager", "tanner", "hunter", "werewolf", "werewolf", "villager", "seer"]
    game = new(roles)
    assert night_events(game) == [("werewolves", None, {"werewolves": [3, 4]}, (3, 4))]
    assert game.decision().kind == SPEAK and game.phase == "day"


# ---- the day: discussion, vote, deaths, hunter, wins -----------------------------------------
def test_discussion_rounds_in_seat_order_and_next_speaker():
    game = night(
        new(PAPER, discussion_rounds=2),
        [
            (3, "werewolf_peek", "center:0"),
            (0, "seer", 1),
            (1, "rob", 0),
            (2, "troublemake", (0, 1)),
        ],
    )
    seen = []
    while game.decision().kind == SPEAK:
        d = game.decision()
        seen.append((game.round, d.player, game.next_speaker()))
        game.step(f"  I am   Player {d.player + 1}. ")
    assert seen == [(r, p, p + 1 if p < 4 else None) for r in (1, 2) for p in range(5)]
    speeches = [e for e in game.events if e.type == "speech"]
    assert speeches[0].data == {"text": "I am Player 1."} and speeches[0].visible_to == "all"
    assert game.decision().kind == "vote" and game.next_speaker() is None


def test_zero_discussion_rounds():
    game = night(
        new(PAPER, discussion_rounds=0),
        [
            (3, "werewolf_peek", "center:0"),
            (0, "seer", 1),
            (1, "rob", 0),
            (2, "troublemake", (0, 1)),
        ],
    )
    assert game.decision().kind == "vote"


def test_votes_are_secret_until_revealed():
    game = new(
        ["villager", "villager", "villager", "werewolf", "villager", "seer", "robber"],
        discussion_rounds=0,
    )
    game.step("center:0")
    n_before = len(game.events)
    for target in (3, 3, 3, 0):
        game.step(target)
        assert len(game.events) == n_before
    game.step(0)
    votes = game.events[n_before : n_before + 5]
    assert [(e.type, e.player, e.data, e.visible_to) for e in votes] == [
        ("vote", p, {"target": t}, "all") for p, t in enumerate([3, 3, 3, 0, 0])
    ]


def test_self_vote_option():
    game = new(
        ["villager", "villager", "villager", "werewolf", "villager", "seer", "robber"],
        discussion_rounds=0,
    )
    game.step("center:0")
    assert game.decision().options == (1, 2, 3, 4)
    with pytest.raises(IllegalActionError):
        game.step(0)
    game = new(
        ["villager", "villager", "villager", "werewolf", "villager", "seer", "robber"],
        discussion_rounds=0,
        allow_self_vote=True,
    )
    game.step("center:0")
    assert game.decision().options == (0, 1, 2, 3, 4)
    game.step(0)


V5 = ["villager", "villager", "villager", "werewolf", "villager"]

VOTE_TABLE = [
    # (id, player cards (centre: seer, robber), votes of players 0..4, deaths, winner, winners, reason)
    ("werewolf_most_votes", V5, [3, 3, 3, 0, 0], [3], "village", [0, 1, 2, 4], "werewolf_died"),
    ("villager_dies", V5, [1, 0, 0, 0, 0], [0], "werewolf", [3], "werewolves_survived"),
    ("tie_all_die", V5, [3, 0, 3, 0, 1], [0, 3], "village", [0, 1, 2, 4], "werewolf_died"),
    ("nobody_has_two_votes", V5, [1, 2, 3, 4, 0], [], "werewolf", [3], "werewolves_survived"),
    (
        "no_werewolf_nobody_dies",
        ["villager", "villager", "villager", "seer", "villager"],
        [1, 2, 3, 4, 0],
        [],
        "village",
        [0, 1, 2, 3, 4],
        "nobody_died",
    ),
    (
        "no_werewolf_innocent_dies",
        ["villager", "villager", "villager", "seer", "villager"],
        [1, 0, 0, 0, 0],
        [0],
        "draw",
        [],
        "innocent_died",
    ),
    (
        "tanner_dies_alone",
        ["tanner", "villager", "villager", "werewolf", "villager"],
        [1, 0, 0, 0, 0],
        [0],
        "tanner",
        [0],
        "tanner_died",
    ),
    (
        "tanner_and_werewolf_die",
        ["tanner", "villager", "villager", "werewolf", "villager"],
        [3, 0, 3, 0, 1],
        [0, 3],
        "village+tanner",
        [0, 1, 2, 4],
        "werewolf_died",
    ),
    (
        "tanner_alive_werewolves_win",
        ["tanner", "villager", "villager", "werewolf", "minion"],
        [1, 0, 1, 1, 1],
        [1],
        "werewolf",
        [3, 4],
        "werewolves_survived",
    ),
    (
        "tanner_dies_no_werewolf_among_players",
        ["tanner", "villager", "villager", "minion", "villager"],
        [1, 0, 0, 0, 0],
        [0],
        "tanner",
        [0],
        "tanner_died",
    ),
    (
        "minion_wins_without_werewolves",
        ["minion", "villager", "villager", "villager", "villager"],
        [1, 0, 1, 1, 1],
        [1],
        "werewolf",
        [0],
        "minion_survived",
    ),
    (
        "minion_dies_without_werewolves",
        ["minion", "villager", "villager", "villager", "villager"],
        [1, 0, 0, 0, 0],
        [0],
        "draw",
        [],
        "innocent_died",
    ),
    (
        "minion_loses_with_dead_werewolf",
        ["minion", "villager", "villager", "werewolf", "villager"],
        [3, 3, 3, 0, 0],
        [3],
        "village",
        [1, 2, 4],
        "werewolf_died",
    ),
    (
        "minion_dies_werewolves_win",
        ["minion", "villager", "villager", "werewolf", "villager"],
        [1, 0, 0, 0, 0],
        [0],
        "werewolf",
        [0, 3],
        "werewolves_survived",
    ),
    (
        "hunter_takes_werewolf",
        ["hunter", "villager", "villager", "werewolf", "villager"],
        [3, 0, 0, 0, 0],
        [0, 3],
        "village",
        [0, 1, 2, 4],
        "werewolf_died",
    ),
    (
        "hunter_alive_does_nothing",
        ["hunter", "villager", "villager", "werewolf", "villager"],
        [1, 0, 1, 1, 1],
        [1],
        "werewolf",
        [3],
        "werewolves_survived",
    ),
    (
        "hunter_takes_hunter_takes_werewolf",
        ["hunter", "hunter", "villager", "werewolf", "villager"],
        [1, 3, 0, 0, 0],
        [0, 1, 3],
        "village",
        [0, 1, 2, 4],
        "werewolf_died",
    ),
    (
        "two_werewolves_one_dies",
        ["werewolf", "villager", "villager", "werewolf", "villager"],
        [3, 3, 3, 1, 1],
        [3],
        "village",
        [1, 2, 4],
        "werewolf_died",
    ),
]


@pytest.mark.parametrize("case", VOTE_TABLE, ids=[c[0] for c in VOTE_TABLE])
def test_vote_deaths_and_winner(case):
    _, cards, votes, deaths, winner, winners, reason = case
    game = new([*cards, "seer", "robber"], discussion_rounds=1)
    while game.decision().kind != SPEAK:
        game.step(game.decision().options[0])
    res = talk_and_vote(game, votes)
    died = sorted(p for e in game.events if e.type == "death" for p in e.data["players"])
    assert died == deaths
    assert (res["winner"], res["winners"], res["reason"]) == (winner, winners, reason)
    assert res["final_roles"] == cards


# ---- rules where the paper's release differs (options) ---------------------------------------
@pytest.mark.parametrize(
    ("speaking_order", "rounds", "order"),
    [
        ("seat", 2, [0, 1, 2, 3, 4]),
        # one order for the whole day: random.Random(0) shuffles [0..4] (a fixed deal draws nothing)
        ("shuffled_once", 2, [2, 1, 0, 4, 3]),
        ("shuffled_once", 3, [2, 1, 0, 4, 3]),
    ],
)
def test_speaking_order(speaking_order, rounds, order):
    game = night(new(PAPER, discussion_rounds=rounds, speaking_order=speaking_order), PAPER_NIGHT)
    announced = [e for e in game.events if e.type == "speaking_order"]
    if speaking_order == "seat":
        assert not announced
    else:
        (ev,) = announced
        assert game.events[-1] is ev  # right before the first speech
        assert (ev.phase, ev.round, ev.player, ev.visible_to) == ("day", 1, None, "all")
        assert ev.data == {"order": order}
        assert describe_event(game, ev, 0) == (
            "Day: every discussion round goes in this order: "
            "Player 3, Player 2, Player 1, Player 5 and Player 4."
        )
    seen = []
    while game.decision().kind == SPEAK:
        d = game.decision()
        seen.append((game.round, d.player, game.next_speaker()))
        game.step("Hello.")
    assert seen == [
        (r, p, order[i + 1] if i + 1 < len(order) else None)
        for r in range(1, rounds + 1)
        for i, p in enumerate(order)
    ]
    assert game.decision().kind == "vote"


def test_shuffled_order_without_discussion_is_not_announced():
    game = night(new(PAPER, discussion_rounds=0, speaking_order="shuffled_once"), PAPER_NIGHT)
    assert game.decision().kind == "vote"
    assert not [e for e in game.events if e.type == "speaking_order"]


TWO_WOLVES = ["werewolf", "robber", "troublemaker", "werewolf", "insomniac", "seer", "villager"]


@pytest.mark.parametrize(
    ("lone_wolf_peek", "roles", "actions", "expected"),
    [
        (
            True,
            PAPER,
            PAPER_NIGHT[:2],
            [
                ("werewolves", None, {"werewolves": [3]}, (3,)),
                ("werewolf_peek", 3, {"center_index": 0, "card": "villager"}, (3,)),
                ("seer", 0, {"target": 1, "card": "robber"}, (0,)),
            ],
        ),
        (
            False,  # the release: the lone werewolf only learns it is alone
            PAPER,
            PAPER_NIGHT[1:2],
            [
                ("werewolves", None, {"werewolves": [3]}, (3,)),
                ("seer", 0, {"target": 1, "card": "robber"}, (0,)),
            ],
        ),
        (
            True,  # two werewolves never peek
            TWO_WOLVES,
            [(1, "rob", 4)],
            [
                ("werewolves", None, {"werewolves": [0, 3]}, (0, 3)),
                ("rob", 1, {"target": 4, "new_card": "insomniac"}, (1,)),
            ],
        ),
        (
            False,
            TWO_WOLVES,
            [(1, "rob", 4)],
            [
                ("werewolves", None, {"werewolves": [0, 3]}, (0, 3)),
                ("rob", 1, {"target": 4, "new_card": "insomniac"}, (1,)),
            ],
        ),
    ],
)
def test_lone_wolf_peek(lone_wolf_peek, roles, actions, expected):
    game = new(roles, lone_wolf_peek=lone_wolf_peek)
    for player, kind, action in actions:
        d = game.decision()
        assert (d.player, d.kind) == (player, kind)
        game.step(action)
    assert night_events(game) == expected
    wolves = expected[0][2]["werewolves"]
    text = "\n".join(history_lines(game, wolves[0], game.events))
    assert ("you are the only werewolf" in text) == (len(wolves) == 1)
    assert ("centre card" in text) == (len(wolves) == 1 and lone_wolf_peek)


NOBODY = ["villager", "villager", "villager", "seer", "villager"]
MINION = ["minion", "villager", "villager", "villager", "villager"]
#: (id, no_werewolf_result, player cards (centre: seer, robber), votes, deaths, winner,
#:  winners, reason)
NO_WEREWOLF_TABLE = [
    (
        "rulebook_nobody_dies",
        "village_wins_if_nobody_dies",
        NOBODY,
        [1, 2, 3, 4, 0],
        [],
        "village",
        [0, 1, 2, 3, 4],
        "nobody_died",
    ),
    ("release_nobody_dies_draw", "draw", NOBODY, [1, 2, 3, 4, 0], [], "draw", [], "nobody_died"),
    (
        "rulebook_innocent_dies",
        "village_wins_if_nobody_dies",
        NOBODY,
        [1, 0, 0, 0, 0],
        [0],
        "draw",
        [],
        "innocent_died",
    ),
    ("release_innocent_dies", "draw", NOBODY, [1, 0, 0, 0, 0], [0], "draw", [], "innocent_died"),
    (
        "rulebook_minion_nobody_dies",
        "village_wins_if_nobody_dies",
        MINION,
        [1, 2, 3, 4, 0],
        [],
        "village",
        [1, 2, 3, 4],
        "nobody_died",
    ),
    ("release_minion_nobody_dies", "draw", MINION, [1, 2, 3, 4, 0], [], "draw", [], "nobody_died"),
    (
        "release_minion_still_wins",
        "draw",
        MINION,
        [1, 0, 1, 1, 1],
        [1],
        "werewolf",
        [0],
        "minion_survived",
    ),
    (
        "release_tanner_still_wins",
        "draw",
        ["tanner", *NOBODY[1:]],
        [1, 0, 0, 0, 0],
        [0],
        "tanner",
        [0],
        "tanner_died",
    ),
    (
        "release_with_a_werewolf_unchanged",
        "draw",
        V5,
        [3, 3, 3, 0, 0],
        [3],
        "village",
        [0, 1, 2, 4],
        "werewolf_died",
    ),
    (
        "release_werewolf_survives_unchanged",
        "draw",
        V5,
        [1, 2, 3, 4, 0],
        [],
        "werewolf",
        [3],
        "werewolves_survived",
    ),
]


@pytest.mark.parametrize("case", NO_WEREWOLF_TABLE, ids=[c[0] for c in NO_WEREWOLF_TABLE])
def test_no_werewolf_result(case):
    _, option, cards, votes, deaths, winner, winners, reason = case
    game = new([*cards, "seer", "robber"], discussion_rounds=0, no_werewolf_result=option)
    while game.decision().kind != "vote":
        game.step(game.decision().options[0])
    res = talk_and_vote(game, votes)
    died = sorted(p for e in game.events if e.type == "death" for p in e.data["players"])
    assert died == deaths
    assert (res["winner"], res["winners"], res["reason"]) == (winner, winners, reason)


@pytest.mark.parametrize(
    ("seed", "deal_werewolf_to_player", "cards"),
    [
        (2, False, ["villager", "seer", "villager", "robber", "troublemaker"]),  # both in centre
        (2, True, ["insomniac", "robber", "troublemaker", "villager", "werewolf"]),  # redrawn
        (1, False, ["seer", "insomniac", "troublemaker", "villager", "werewolf"]),
        (1, True, ["seer", "insomniac", "troublemaker", "villager", "werewolf"]),  # kept
    ],
)
def test_deal_werewolf_to_player(seed, deal_werewolf_to_player, cards):
    options = {"deal_werewolf_to_player": deal_werewolf_to_player}
    game = make_game("onuw", options).reset(seed)
    assert game.cards == cards
    assert game.events[0].data["cards"] == cards


def test_deal_werewolf_to_player_always_and_at_every_seat():
    seats, centre = Counter(), 0
    for seed in range(300):
        plain = make_game("onuw").reset(seed)
        centre += "werewolf" not in plain.cards
        game = make_game("onuw", {"deal_werewolf_to_player": True}).reset(seed)
        assert "werewolf" in game.cards
        seats[game.cards.index("werewolf")] += 1
        assert sorted(game.cards + game.center) == sorted(PAPER_ROLES)
    assert set(seats) == set(range(5)) and min(seats.values()) > 40
    assert 50 < centre < 120  # about 2/7 of plain deals put the werewolf in the centre
    # a deal given to reset is kept as it is
    game = new(NOBODY + ["werewolf", "seer"], deal_werewolf_to_player=True)
    assert game.center == ["werewolf", "seer"]


def test_release_options_are_recorded_only_when_set():
    agents = [make_agent("random", "onuw") for _ in range(5)]
    rec = play_game(make_game("onuw"), agents, 0)
    assert not set(RELEASE) & set(rec["config"])
    rec = play_game(make_game("onuw", RELEASE), agents, 0)
    assert {k: rec["config"][k] for k in RELEASE} == RELEASE
    assert ONUW.restore(rec).config == make_game("onuw", RELEASE).config


def test_hunter_death_event_names_the_hunter():
    game = new(
        ["hunter", "villager", "villager", "werewolf", "villager", "seer", "robber"],
        discussion_rounds=0,
    )
    game.step("center:0")
    talk_and_vote(game, [3, 0, 0, 0, 0])
    deaths = [(e.player, e.data) for e in game.events if e.type == "death"]
    assert deaths == [(None, {"players": [0]}), (0, {"players": [3]})]
    assert (
        describe_event(game, game.events[-1], 1)
        == "Player 1 was the Hunter and takes Player 4 down too."
    )


def test_team_is_the_final_card():
    # the robber takes the werewolf card: the robber is now a werewolf, the old werewolf a robber
    game = night(
        new(PAPER, discussion_rounds=0),
        [
            (3, "werewolf_peek", "center:0"),
            (0, "seer", 4),
            (1, "rob", 3),
            (2, "troublemake", (0, 4)),
        ],
    )
    assert game.final_roles() == ["insomniac", "werewolf", "troublemaker", "robber", "seer"]
    res = talk_and_vote(game, [3, 3, 3, 0, 3])  # the dealt werewolf dies: it is the robber now
    assert (res["winner"], res["winners"]) == ("werewolf", [1])
    game = night(
        new(PAPER, discussion_rounds=0),
        [
            (3, "werewolf_peek", "center:0"),
            (0, "seer", 4),
            (1, "rob", 3),
            (2, "troublemake", (0, 4)),
        ],
    )
    res = talk_and_vote(game, [1, 3, 1, 1, 1])
    assert (res["winner"], res["winners"]) == ("village", [0, 2, 3, 4])


def test_doppelganger_card_counts_as_its_copy():
    roles = ["doppelganger", "werewolf", "villager", "troublemaker", "villager", "seer", "robber"]
    game = night(
        new(roles, discussion_rounds=0), [(0, "doppelganger", 1), (3, "troublemake", (0, 2))]
    )
    assert game.final_roles() == ["villager", "werewolf", "werewolf", "troublemaker", "villager"]
    res = talk_and_vote(game, [1, 2, 1, 2, 3])  # both werewolves die
    assert res["winner"] == "village" and res["winners"] == [0, 3, 4]


# ---- errors and views ----------------------------------------------------------------------
def test_illegal_action_names_everything_and_changes_nothing():
    game = new(PAPER)
    before = (list(game.events), game.decision(), list(game.cards))
    for bad in (7, "center:5", 3.5, None, "I am the seer"):
        with pytest.raises(IllegalActionError) as err:
            game.step(bad)
        msg = str(err.value)
        assert repr(bad) in msg and "Player 4" in msg and "'center:0', 'center:1'" in msg
        assert (list(game.events), game.decision(), list(game.cards)) == before
    game.step("center:0")
    with pytest.raises(IllegalActionError, match="legal: \\[1, 2, 3, 4, 'center:0,1'\\]"):
        game.step(0)  # the seer may not look at themself
    night(game, [(0, "seer", 1), (1, "rob", 0), (2, "troublemake", (3, 4))])
    with pytest.raises(IllegalActionError, match="must speak"):
        game.step(3)


def test_result_before_the_end_raises():
    with pytest.raises(ValueError, match="not finished"):
        new(PAPER).result()


def test_observations_show_only_own_night():
    game = night(
        new(PAPER),
        [
            (3, "werewolf_peek", "center:1"),
            (0, "seer", 3),
            (1, "rob", 3),
            (2, "troublemake", (0, 1)),
        ],
    )
    texts = {p: "\n".join(history_lines(game, p, game.events)) for p in range(5)}
    assert "Night: you looked at Player 4's card: the Werewolf." in texts[0]
    assert "your new card is the Werewolf" in texts[1]
    assert "you swapped the cards of Player 1 and Player 2" in texts[2]
    assert "you are the only werewolf" in texts[3] and "centre card 2: the Villager" in texts[3]
    assert "your card is the Insomniac" in texts[4]
    for p in range(5):
        assert texts[p].count("Night:") == (2 if p == 3 else 1)
    know = game.private_knowledge(1)
    assert know == {"dealt_role": "robber", "robbed": 3, "card_now": "werewolf"}
    assert game.private_knowledge(0)["seen_players"] == {"3": "werewolf"}
    assert game.private_knowledge(3) == {
        "dealt_role": "werewolf",
        "werewolves": [3],
        "seen_center": {"1": "villager"},
    }
    json.dumps(game.observation(0).data)
    assert game.public_state()["cards_in_play"] == sorted(PAPER)


# ---- properties over whole games ---------------------------------------------------------------
def replay_and_check(rec: dict) -> None:
    """Re-check the rules from the record alone."""
    cfg, events, res = rec["config"], rec["events"], rec["result"]
    n = cfg["n_players"]
    for e in events:
        assert set(e["data"]) == EVENT_FIELDS.get(e["type"], set(e["data"])), e
        if e["type"] == "seer":
            assert set(e["data"]) in ({"target", "card"}, {"center_indexes", "cards"})
    deal = events[0]
    assert deal["type"] == "deal" and deal["visible_to"] == [] and deal["player"] is None
    cards, center = list(deal["data"]["cards"]), list(deal["data"]["center"])
    assert [p["role"] for p in rec["players"]] == cards
    assert "werewolf" in cards or not cfg.get("deal_werewolf_to_player", False)
    assert sorted(cards + center) == sorted(cfg["roles"] or DEFAULT_DECKS[n + cfg["center_cards"]])
    copy = None
    dealt = list(cards)
    peeks = expected_peeks = 0
    for e in events[1:]:
        t, d, p = e["type"], e["data"], e["player"]
        if e["phase"] == "night":
            assert e["visible_to"] != "all"
            if p is not None:
                assert e["visible_to"] == [p]
        if t == "doppelganger":
            assert (
                dealt[p] == "doppelganger" and d["card"] == cards[d["target"]] and d["target"] != p
            )
            copy = d["card"]
        elif t == "werewolves":
            wolves = [
                q
                for q in range(n)
                if dealt[q] == "werewolf" or (dealt[q] == "doppelganger" and copy == "werewolf")
            ]
            assert d["werewolves"] == wolves == e["visible_to"]
            expected_peeks = int(len(wolves) == 1 and cfg.get("lone_wolf_peek", True))
        elif t == "werewolf_peek":
            assert d["card"] == center[d["center_index"]]
            peeks += 1
        elif t == "seer":
            if "target" in d:
                assert d["card"] == cards[d["target"]] and d["target"] != p
            else:
                assert d["cards"] == [center[i] for i in d["center_indexes"]]
        elif t == "rob":
            assert d["target"] != p
            cards[p], cards[d["target"]] = cards[d["target"]], cards[p]
            assert d["new_card"] == cards[p]
        elif t == "troublemake":
            a, b = d["targets"]
            assert p not in (a, b) and a != b
            cards[a], cards[b] = cards[b], cards[a]
        elif t == "drunk":
            i = d["center_index"]
            cards[p], center[i] = center[i], cards[p]
        elif t == "insomniac":
            assert d["card"] == cards[p]
    assert peeks == expected_peeks
    final = [copy if c == "doppelganger" and copy else c for c in cards]
    assert res["final_roles"] == final
    speeches = [e for e in events if e["type"] == "speech"]
    announced = [(i, e) for i, e in enumerate(events) if e["type"] == "speaking_order"]
    order = list(range(n))
    if cfg.get("speaking_order", "seat") == "shuffled_once" and cfg["discussion_rounds"]:
        ((i, ann),) = announced
        order = ann["data"]["order"]
        assert sorted(order) == list(range(n)) and ann["visible_to"] == "all"
        assert events[i + 1] is speeches[0] and events[i - 1]["phase"] in ("setup", "night")
    else:
        assert not announced
    assert [(e["round"], e["player"]) for e in speeches] == [
        (r, q) for r in range(1, cfg["discussion_rounds"] + 1) for q in order
    ]
    votes = [e for e in events if e["type"] == "vote"]
    assert [e["player"] for e in votes] == list(range(n))
    targets = {e["player"]: e["data"]["target"] for e in votes}
    assert all(0 <= t < n and (cfg["allow_self_vote"] or t != v) for v, t in targets.items())
    tally = Counter(targets.values())
    top = max(tally.values())
    deaths = [e for e in events if e["type"] == "death"]
    assert deaths[0]["data"]["players"] == (
        sorted(q for q, c in tally.items() if c == top) if top > 1 else []
    )
    dead = [q for e in deaths for q in e["data"]["players"]]
    for e in deaths[1:]:
        assert final[e["player"]] == "hunter" and e["data"]["players"] == [targets[e["player"]]]
    for h in dead:
        if final[h] == "hunter":
            assert targets[h] in dead
    assert len(dead) == len(set(dead))
    # rule 7
    wolves = [q for q in range(n) if final[q] == "werewolf"]
    tanner = any(final[q] == "tanner" for q in dead)
    won = set()
    for q in range(n):
        team = ROLE_TEAM[final[q]]
        if team == "tanner":
            ok = q in dead
        elif team == "village":
            village_may_win = cfg.get("no_werewolf_result", "") != "draw"
            ok = bool(set(wolves) & set(dead)) if wolves else (not dead and village_may_win)
        else:
            ok = (
                (not set(wolves) & set(dead) and not tanner)
                if wolves
                else (bool(dead) and not tanner and any(final[x] != "minion" for x in dead))
            )
        if ok:
            won.add(q)
    assert res["winners"] == sorted(won)
    assert res["winner"] == (
        "+".join(
            t
            for t in ("village", "werewolf", "tanner")
            if any(ROLE_TEAM[final[q]] == t for q in won)
        )
        or "draw"
    )


CONFIGS = st.fixed_dictionaries(
    {
        "n_players": st.integers(3, 10),
        "center_cards": st.integers(1, 3),
        "discussion_rounds": st.integers(0, 3),
        "allow_self_vote": st.booleans(),
        "speaking_order": st.sampled_from(["seat", "shuffled_once"]),
        "lone_wolf_peek": st.booleans(),
        "no_werewolf_result": st.sampled_from(["village_wins_if_nobody_dies", "draw"]),
    }
)
ALL_CARDS = [
    "doppelganger",
    "werewolf",
    "werewolf",
    "minion",
    "mason",
    "mason",
    "seer",
    "robber",
    "troublemaker",
    "drunk",
    "insomniac",
    "tanner",
    "hunter",
    "villager",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    opts=CONFIGS,
    kind=st.sampled_from(["random", "scripted"]),
    data=st.data(),
)
def test_games_obey_the_rules(seed, opts, kind, data):
    n_cards = opts["n_players"] + opts["center_cards"]
    if data.draw(st.booleans(), label="all_roles"):
        opts = {**opts, "roles": tuple(data.draw(st.permutations(ALL_CARDS))[:n_cards])}
    deck = opts.get("roles") or DEFAULT_DECKS[n_cards]
    if "werewolf" in deck and data.draw(st.booleans(), label="deal_werewolf_to_player"):
        opts = {**opts, "deal_werewolf_to_player": True}
    game = make_game("onuw", opts)
    rec = play_game(game, [make_agent(kind, "onuw") for _ in range(opts["n_players"])], seed)
    replay_and_check(rec)
    again = play_game(
        make_game("onuw", opts), [make_agent(kind, "onuw") for _ in range(opts["n_players"])], seed
    )
    assert json.dumps(rec) == json.dumps(again)
