"""Known-value tests of every Werewolf rule (docs/games.md, "Werewolf") and option."""

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
from stackelberg.games import ConfigError, GameError, IllegalActionError, make_game
from stackelberg.games.base import SPEAK
from stackelberg.games.werewolf import LSPO_ROLES, PAPER_ROLES, XU_ROLES, Werewolf, WerewolfConfig

# seats: wolves 0 and 1, seer 2, guardian 3, villagers 4, 5, 6
PAPER = ["werewolf", "werewolf", "seer", "guardian", "villager", "villager", "villager"]
# seats: wolves 0 and 1, seer 2, witch 3, guardian 4, villagers 5, 6
XU = ["werewolf", "werewolf", "seer", "witch", "guardian", "villager", "villager"]
# seats: wolves 0 and 1, seer 2, doctor 3, villagers 4, 5, 6
LSPO = ["werewolf", "werewolf", "seer", "doctor", "villager", "villager", "villager"]


def play(actions, roles=PAPER, seed=0, **options):
    game = make_game("werewolf", {"roles": roles, **options})
    game.reset(seed, roles)
    for a in actions:
        game.step(a)
    return game


def talk(n):
    return ["Hello."] * n


def of_type(game, type_):
    return [e for e in game.events if e.type == type_]


def last(game, type_):
    return of_type(game, type_)[-1]


# ---- night ---------------------------------------------------------------------------------
# (night-1 actions: wolf 0, wolf 1, guardian, seer) -> (kill target, dawn deaths)
NIGHTS = [
    ([4, 4, 3, 0], 4, [4]),  # agreed victim, not protected: dies
    ([4, 4, 4, 0], 4, []),  # protected victim survives; nobody died
    ([4, 5, 5, 0], 4, [4]),  # disagreement: the lowest-seat wolf's choice
    ([6, 5, 3, 0], 6, [6]),
    ([5, 4, 4, 0], 5, [5]),  # the guardian guessed the other wolf's choice
    ([3, 3, 3, 0], 3, []),  # the guardian may protect self
]


@pytest.mark.parametrize(("acts", "victim", "dead"), NIGHTS)
def test_night_kill_and_protection(acts, victim, dead):
    game = play(acts)
    assert last(game, "kill").data == {"target": victim}
    assert last(game, "death").data == {"players": dead}
    assert game.phase == "day" and game.round == 1
    assert game.decision().kind == SPEAK
    assert [e.data["target"] for e in of_type(game, "wolf_choice")] == acts[:2]


def test_three_wolves_majority_then_lowest_seat():
    roles = ["werewolf"] * 3 + ["seer", "guardian"] + ["villager"] * 4
    # wolves 0, 1, 2; seer 3; guardian 4
    game = play([5, 6, 6, 3, 0], roles)
    assert last(game, "kill").data == {"target": 6}  # majority beats the lowest seat
    game = play([5, 6, 7, 3, 0], roles)
    assert last(game, "kill").data == {"target": 5}  # three-way tie: lowest seat
    game = play([7, 6, 7, 3, 0], roles)
    assert last(game, "kill").data == {"target": 7}


def test_wolf_options_and_order():
    game = play([])
    d = game.decision()
    assert (d.player, d.kind, d.options) == (0, "wolf_kill", (2, 3, 4, 5, 6))
    game.step(4)
    assert game.decision().player == 1
    # the second wolf sees the first wolf's choice, nobody else does
    ev = last(game, "wolf_choice")
    assert (ev.player, ev.data, ev.visible_to) == (0, {"target": 4}, (0, 1))
    assert describe_event(game, ev, 1) == "Night 1: Player 1 wants to kill Player 5."


def test_guardian_cannot_repeat_but_can_change():
    day1 = talk(6) + [None] * 6  # 4 died; everyone abstains
    game = play([4, 4, 5, 0] + day1 + [6, 6])
    d = game.decision()
    assert d.kind == "protect" and d.player == 3
    assert 5 not in d.options and 3 in d.options and 6 in d.options
    with pytest.raises(IllegalActionError):
        game.step(5)
    game.step(6)
    game.step(1)
    assert last(game, "death").data == {"players": []}  # protected on night 2
    assert last(game, "eliminate").data == {"player": None}


# wolves 0, 1, 2; seer 3; guardian 4; villagers 5..8
THREE = ["werewolf"] * 3 + ["seer", "guardian"] + ["villager"] * 4
#: (wolf_victim, roles, the wolves' choices in seat order, victim); after the wolves the
#: guardian protects itself and the seer inspects Player 1
WOLF_VICTIM_TABLE = [
    ("plurality_lowest_seat", PAPER, [4, 5], 4),  # disagreement: the lower seat
    ("last_wolf", PAPER, [4, 5], 5),  # the release: the second wolf has the last word
    ("last_wolf", PAPER, [6, 5], 5),
    ("last_wolf", PAPER, [4, 4], 4),
    ("plurality_lowest_seat", THREE, [6, 6, 5], 6),  # majority
    ("last_wolf", THREE, [6, 6, 5], 5),  # the last wolf, even against a majority
    ("plurality_lowest_seat", THREE, [5, 6, 7], 5),
    ("last_wolf", THREE, [5, 6, 7], 7),
]


@pytest.mark.parametrize(("wolf_victim", "roles", "choices", "victim"), WOLF_VICTIM_TABLE)
def test_wolf_victim(wolf_victim, roles, choices, victim):
    guardian = roles.index("guardian")
    game = play(choices + [guardian, 0], roles, wolf_victim=wolf_victim)
    assert [e.data["target"] for e in of_type(game, "wolf_choice")] == choices
    assert last(game, "kill").data == {"target": victim}
    assert last(game, "death").data == {"players": [victim]}


def test_last_wolf_alone_decides():
    # night 1: the second wolf's choice (5) dies; day 1 eliminates wolf 1; night 2 wolf 0 alone
    day1 = talk(6) + [1, 0, 1, 1, 1, 1]
    game = play([4, 5, 3, 0] + day1 + [6, 2, 4], wolf_victim="last_wolf")
    assert [e.data for e in of_type(game, "eliminate")] == [{"player": 1}]
    assert [(e.player, e.data) for e in of_type(game, "wolf_choice")][-1] == (0, {"target": 6})
    assert [e.data for e in of_type(game, "death")] == [{"players": [5]}, {"players": [6]}]


@pytest.mark.parametrize(
    ("guardian_may_repeat", "options"),
    [(False, (0, 1, 2, 3, 6)), (True, (0, 1, 2, 3, 5, 6))],
)
def test_guardian_may_repeat(guardian_may_repeat, options):
    # night 1: the guardian (3) protects 5 and the wolves kill 4; night 2 they attack 5
    day1 = talk(6) + [None] * 6
    game = play([4, 4, 5, 0] + day1 + [5, 5], guardian_may_repeat=guardian_may_repeat)
    d = game.decision()
    assert (d.kind, d.player, d.options) == ("protect", 3, options)
    if not guardian_may_repeat:
        with pytest.raises(IllegalActionError):
            game.step(5)
        return
    game.step(5)
    game.step(1)
    assert [e.data for e in of_type(game, "protect")] == [{"target": 5}, {"target": 5}]
    assert last(game, "death").data == {"players": []}  # protected twice in a row


def test_release_options_are_recorded_only_when_set():
    agents = [make_agent("random", "werewolf") for _ in range(7)]
    rec = play_game(make_game("werewolf"), agents, 0)
    assert "guardian_may_repeat" not in rec["config"] and "wolf_victim" not in rec["config"]
    options = {"guardian_may_repeat": True, "wolf_victim": "last_wolf"}
    rec = play_game(make_game("werewolf", options), agents, 0)
    assert {k: rec["config"][k] for k in options} == options
    assert Werewolf.restore(rec).config == make_game("werewolf", options).config


def test_seer_inspect():
    game = play([4, 4, 3])
    d = game.decision()
    assert d.kind == "inspect" and d.player == 2 and 2 not in d.options
    game.step(1)
    ev = last(game, "inspect")
    assert (ev.player, ev.data, ev.visible_to) == (2, {"target": 1, "is_werewolf": True}, (2,))
    game = play([4, 4, 3, 6])
    assert last(game, "inspect").data == {"target": 6, "is_werewolf": False}
    assert describe_event(game, last(game, "inspect"), 2) == (
        "Night 1: you inspected Player 7: not a werewolf."
    )


def test_dead_players_do_not_act():
    # night 1 kills the seer; night 2 has no inspect decision
    game = play([2, 2, 3, 0] + talk(6) + [None] * 6 + [4, 4, 5])
    assert last(game, "death").data == {"players": [4]}
    assert game.round == 2 and game.phase == "day"


# ---- day -----------------------------------------------------------------------------------
def test_speech_order_shuffled_each_day_and_next_speaker():
    game = play([4, 4, 3, 0])
    order = []
    while game.decision().kind == SPEAK:
        d = game.decision()
        nxt = game.next_speaker()
        order.append(d.player)
        game.step(f"I am {d.player}.")
        if nxt is not None:
            assert game.decision().player == nxt
        else:
            assert game.decision().kind == "vote"
    assert sorted(order) == [0, 1, 2, 3, 5, 6]
    assert [e.player for e in of_type(game, "speech")] == order
    assert of_type(game, "speech")[0].data == {"text": f"I am {order[0]}."}
    firsts = {play([4, 4, 3, 0], seed=s).decision().player for s in range(20)}
    assert len(firsts) > 1


def test_votes_are_hidden_until_everyone_voted():
    game = play([4, 4, 3, 0] + talk(6))
    d = game.decision()
    assert d.kind == "vote" and d.player == 0
    assert d.options == (1, 2, 3, 5, 6, None)  # no self-vote, abstain allowed
    n = len(game.events)
    for target in [2, 2, 0, 0, 0]:
        game.step(target)
        assert len(game.events) == n  # nothing logged yet
    game.step(None)
    votes = of_type(game, "vote")
    assert [(e.player, e.data["target"]) for e in votes] == [
        (0, 2),
        (1, 2),
        (2, 0),
        (3, 0),
        (5, 0),
        (6, None),
    ]
    assert all(e.visible_to == "all" and e.phase == "vote" for e in votes)
    assert last(game, "eliminate").data == {"player": 0}
    assert describe_event(game, votes[-1], 0) == "Player 7 abstains."


# (options, day-1 votes of players 0..6 after a quiet night) -> eliminated
VOTES = [
    ({}, [4, 4, 4, 0, 0, None, None], 4),  # plurality
    ({}, [None] * 7, None),  # everyone abstains: nobody
    ({"vote_tie": "none"}, [4, 4, 0, 0, None, None, None], None),  # tie: nobody
    ({"vote_tie": "none"}, [4, 4, 0, 0, 0, None, None], 0),
]


@pytest.mark.parametrize(("options", "votes", "out"), VOTES)
def test_vote_outcomes(options, votes, out):
    game = play([4, 4, 4, 0] + talk(7) + votes, **options)
    assert last(game, "eliminate").data == {"player": out}
    if out is not None:
        assert out not in game.living()


def test_vote_tie_random_picks_one_of_the_tied():
    outs = set()
    for seed in range(30):
        game = play([4, 4, 4, 0] + talk(7) + [4, 4, 0, 0, None, None, None], seed=seed)
        outs.add(last(game, "eliminate").data["player"])
    assert outs == {0, 4}


def test_abstain_option_off():
    game = play([4, 4, 4, 0] + talk(7), allow_abstain=False)
    assert None not in game.decision().options
    with pytest.raises(IllegalActionError):
        game.step(None)


# ---- win conditions ------------------------------------------------------------------------
def test_village_wins_when_no_wolf_alive():
    day1 = talk(6) + [2, 0, 0, 0, 0, 0]  # night 1 killed 4; 0 eliminated
    night2 = [5, 6, 1]  # wolf 1 alone kills 5; the guardian protects 6
    day2 = talk(4) + [2, 1, 1, 1]
    game = play([4, 4, 3, 0] + day1 + night2 + day2)
    assert game.decision() is None
    assert game.result() == {
        "winner": "village",
        "winners": [2, 3, 4, 5, 6],
        "reason": "werewolves_dead",
    }
    assert game.phase == "over"


def test_wolves_win_at_parity():
    # 7 -> 6 (night) -> 5 (vote: 2) -> 4 (night) => 2 wolves vs 2: wolves win at dawn
    game = play([4, 4, 3, 0] + talk(6) + [2, 2, 0, 2, 2, 2] + [5, 5, 6])
    assert game.decision() is None
    assert last(game, "death").data == {"players": [5]}
    assert game.result() == {"winner": "werewolf", "winners": [0, 1], "reason": "wolf_parity"}


def test_all_villagers_dead_option_continues_past_parity():
    game = play(
        [4, 4, 3, 0] + talk(6) + [2, 2, 0, 2, 2, 2] + [5, 5, 6], wolf_win="all_villagers_dead"
    )
    assert game.decision() is not None and game.decision().kind == SPEAK
    # day 2: 3 dies by vote; night 3: 6 dies -> no non-werewolf left
    game.step("x")
    for _ in range(3):
        game.step("x")
    for v in [3, 3, 0, 3]:
        game.step(v)
    assert last(game, "eliminate").data == {"player": 3}
    for a in [6, 6]:
        game.step(a)
    assert game.decision() is None
    assert game.result() == {"winner": "werewolf", "winners": [0, 1], "reason": "villagers_dead"}


def test_day_limit_draw():
    game = play([4, 4, 4, 0] + talk(7) + [None] * 7, max_days=1)
    assert game.decision() is None
    assert game.result() == {"winner": "draw", "winners": [], "reason": "day_limit"}
    game = play([4, 4, 4, 0] + talk(7) + [None] * 7)
    assert game.decision().kind == "wolf_kill" and game.round == 2


def test_default_day_limit_is_ten():
    # the doctor (seat 3) saves the wolves' victim every night; everyone abstains every day
    quiet_day = [6, 6, 6, 0] + talk(7) + [None] * 7
    game = play(quiet_day * 9, LSPO)
    assert game.decision().kind == "wolf_kill" and game.round == 10
    game = play(quiet_day * 10, LSPO)
    assert game.decision() is None and game.round == 10
    assert game.result()["reason"] == "day_limit"


def test_result_before_end_raises():
    with pytest.raises(GameError, match=r"^werewolf: the game is not finished$"):
        play([]).result()


# ---- options: reveal, witch, doctor ---------------------------------------------------------
def test_reveal_on_death():
    game = play([4, 4, 3, 0] + talk(6) + [2, 2, 0, 0, 0, 0], reveal_on_death=True)
    reveals = [e.data for e in of_type(game, "role_reveal")]
    assert reveals == [{"player": 4, "role": "villager"}, {"player": 0, "role": "werewolf"}]
    game = play([4, 4, 3, 0] + talk(6) + [2, 2, 0, 0, 0, 0])
    assert of_type(game, "role_reveal") == []


def test_witch_save():
    game = play([5, 5, 4], XU)  # wolves, guardian protects 4
    kill = last(game, "kill")
    assert kill.visible_to == (0, 1, 3)  # the witch is told the victim
    d = game.decision()
    assert (d.player, d.kind, d.options) == (3, "save", (True, False))
    game.step(True)
    assert game.decision().kind == "inspect"  # at most one potion per night
    game.step(0)
    assert last(game, "save").data == {"target": 5} and last(game, "save").visible_to == (3,)
    assert last(game, "death").data == {"players": []}
    # night 2: the save potion is gone; the witch is asked about poison only
    game = play([5, 5, 4, True, 0] + talk(7) + [None] * 7 + [6, 6, 5], XU)
    d = game.decision()
    assert d.kind == "poison" and d.options == (None, 0, 1, 2, 4, 5, 6)
    game.step(0)
    game.step(1)
    assert last(game, "poison").data == {"target": 0}
    assert last(game, "death").data == {"players": [0, 6]}


def test_witch_poison_ignores_protection_and_is_used_once():
    game = play([5, 5, 6, False, 6, 0], XU)  # guardian protects 6, witch poisons 6
    assert last(game, "death").data == {"players": [5, 6]}
    night2 = [2, 2, 4, False, 1, 0]  # witch poisons wolf 1
    game = play([5, 5, 6, False, None, 0] + talk(6) + [None] * 6 + night2, XU)
    assert last(game, "death").data == {"players": [1, 2]}
    game2 = play([5, 5, 6, False, None, 0] + talk(6) + [None] * 6 + night2[:5], XU)
    assert game2.decision().kind == "inspect"  # the seer still acts on the night it dies
    for a in talk(4) + [None] * 4 + [4, 3]:  # night 3: wolf 0 attacks 4, guardian protects 3
        game.step(a)
    assert game.decision().kind == "save"
    game.step(False)  # poison already used: not asked again; seer dead: dawn
    assert last(game, "death").data == {"players": [4]}
    assert last(game, "kill").visible_to == (0, 1, 3)


def test_doctor_may_repeat():
    game = play([5, 5, 5, 0] + talk(7) + [None] * 7 + [6, 6], LSPO)
    d = game.decision()
    assert d.kind == "protect" and d.player == 3 and 5 in d.options and 3 in d.options
    game.step(5)
    assert last(game, "protect").data == {"target": 5}


def test_paper_setups_through_roles_option():
    assert WerewolfConfig().roles == PAPER_ROLES
    assert make_game("werewolf", {"roles": ",".join(XU_ROLES)}).config.roles == XU_ROLES
    assert make_game("werewolf", {"roles": list(LSPO_ROLES)}).config.n_players == 7
    game = make_game("werewolf", {"roles": "werewolf,seer,villager,villager"})
    game.reset(1)
    assert sorted(p.role for p in game.players) == ["seer", "villager", "villager", "werewolf"]


# ---- setup, knowledge, visibility -------------------------------------------------------------
def test_setup_knowledge_and_teams():
    game = play([])
    ev = game.events[0]
    assert (ev.type, ev.phase, ev.round, ev.player, ev.visible_to) == (
        "werewolves",
        "setup",
        0,
        None,
        (0, 1),
    )
    assert ev.data == {"werewolves": [0, 1]}
    assert [p.team for p in game.players] == ["werewolf"] * 2 + ["village"] * 5
    assert [p.name for p in game.players][:2] == ["Player 1", "Player 2"]
    protect = last(play([4, 4, 3]), "protect")
    assert protect.visible_to == (3,) and protect.player == 3


def test_dealing_is_seeded():
    a = make_game("werewolf").reset(7)
    b = make_game("werewolf").reset(7)
    assert [p.role for p in a.players] == [p.role for p in b.players]
    deals = {tuple(p.role for p in make_game("werewolf").reset(s).players) for s in range(10)}
    assert len(deals) > 1


def test_observation_private_and_public():
    game = play([4, 4, 3, 0])
    assert game.private_knowledge(0) == {"role": "werewolf", "werewolves": [0, 1]}
    assert game.private_knowledge(2) == {"role": "seer", "inspected": {"0": True}}
    assert game.private_knowledge(3) == {"role": "guardian", "last_protected": 3}
    assert game.public_state()["alive"] == [0, 1, 2, 3, 5, 6]
    text = "\n".join(history_lines(game, 5, game.events))
    assert "Player 5 died during the night" in text and "inspected" not in text
    assert "inspected Player 1: a werewolf" in "\n".join(history_lines(game, 2, game.events))


# ---- errors -------------------------------------------------------------------------------
def test_illegal_action_names_action_player_and_options():
    game = play([])
    before = (len(game.events), game.decision())
    with pytest.raises(IllegalActionError) as err:
        game.step(1)  # a wolf may not target a wolf
    msg = str(err.value)
    assert "1" in msg and "Player 1" in msg and "[2, 3, 4, 5, 6]" in msg
    assert (len(game.events), game.decision()) == before
    game = play([4, 4, 3, 0])
    with pytest.raises(IllegalActionError):
        game.step(3)  # speech must be a string
    game = play([4, 4, 3, 0] + talk(6))
    with pytest.raises(IllegalActionError):
        game.step(0)  # no self-vote
    with pytest.raises(IllegalActionError):
        game.step(4)  # dead player


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"vote_tie": "coin"}, "vote_tie='coin'"),
        ({"wolf_win": "all"}, "wolf_win='all'"),
        ({"max_days": 0}, "max_days=0"),
        ({"max_days": "ten"}, "max_days='ten'"),
        ({"allow_abstain": "maybe"}, "allow_abstain"),
        ({"roles": "werewolf,seer,hunter"}, "hunter"),
        ({"roles": "werewolf,werewolf,seer,villager"}, "fewer werewolves"),
        ({"roles": "seer,villager,villager"}, "at least one werewolf"),
        ({"roles": "werewolf,seer,seer,villager,villager"}, "2 seer"),
        ({"colour": "red"}, "unknown option"),
        (
            {"wolf_victim": "random"},
            "werewolf: wolf_victim='random'; allowed: plurality_lowest_seat, last_wolf",
        ),
        ({"guardian_may_repeat": "maybe"}, "guardian_may_repeat='maybe'"),
    ],
)
def test_config_errors(options, fragment):
    with pytest.raises(ConfigError, match=None) as err:
        make_game("werewolf", options)
    assert fragment in str(err.value)


def test_string_options_are_parsed():
    game = make_game(
        "werewolf",
        {
            "allow_abstain": "false",
            "vote_tie": "none",
            "reveal_on_death": "true",
            "wolf_win": "all_villagers_dead",
            "max_days": "3",
            "roles": "none",
            "guardian_may_repeat": "yes",
            "wolf_victim": "last_wolf",
        },
    )
    cfg = game.config
    assert (cfg.guardian_may_repeat, cfg.wolf_victim) == (True, "last_wolf")
    assert (cfg.allow_abstain, cfg.vote_tie, cfg.reveal_on_death, cfg.wolf_win, cfg.max_days) == (
        False,
        "none",
        True,
        "all_villagers_dead",
        3,
    )
    assert cfg.roles == PAPER_ROLES


def test_fixed_roles_must_match_configuration():
    with pytest.raises(ConfigError, match="permutation"):
        make_game("werewolf").reset(0, ["werewolf"] * 3 + ["villager"] * 4)
    with pytest.raises(ConfigError):
        make_game("werewolf").reset(0, PAPER[:-1])


# ---- properties of whole games ----------------------------------------------------------------
SETUPS = [None, list(XU_ROLES), list(LSPO_ROLES), ["werewolf", "seer", "villager", "villager"]]
EVENT_FIELDS = {
    "werewolves": {"werewolves"},
    "wolf_choice": {"target"},
    "kill": {"target"},
    "protect": {"target"},
    "save": {"target"},
    "poison": {"target"},
    "inspect": {"target", "is_werewolf"},
    "death": {"players"},
    "speech": {"text"},
    "vote": {"target"},
    "eliminate": {"player"},
    "role_reveal": {"player", "role"},
}


def check_record(rec):
    """Re-check the rules from the record alone."""
    roles = [p["role"] for p in rec["players"]]
    cfg = rec["config"]
    wolves = [i for i, r in enumerate(roles) if r == "werewolf"]
    seat = {r: i for i, r in enumerate(roles) if r != "werewolf"}
    alive = set(range(len(roles)))
    speakers: list[int] = []
    voters: list[int] = []
    last_guard = None
    day = 0
    choices: list[tuple[int, int]] = []  # this night's wolf choices (wolf, target)
    for ev in rec["events"]:
        t, d, vis = ev["type"], ev["data"], ev["visible_to"]
        assert set(d) == EVENT_FIELDS[t], ev
        if t in ("werewolves", "wolf_choice"):
            assert vis == wolves
        if t == "wolf_choice":
            choices.append((ev["player"], d["target"]))
        if t == "kill":
            assert set(wolves) <= set(vis) and d["target"] not in wolves
            assert set(vis) - set(wolves) <= {seat.get("witch")}
            assert [w for w, _ in choices] == sorted(w for w in wolves if w in alive)
            if cfg.get("wolf_victim", "plurality_lowest_seat") == "last_wolf":
                assert d["target"] == choices[-1][1]
            else:
                named = Counter(c for _, c in choices)
                top = max(named.values())
                assert d["target"] == min((w, c) for w, c in choices if named[c] == top)[1]
            choices = []
        if t in ("protect", "save", "poison", "inspect"):
            assert vis == [ev["player"]] and ev["player"] in alive
        if t == "protect" and roles[ev["player"]] == "guardian":
            assert d["target"] != last_guard or cfg.get("guardian_may_repeat", False)
            last_guard = d["target"]
        if t == "inspect":
            assert d["is_werewolf"] == (roles[d["target"]] == "werewolf")
            assert d["target"] != ev["player"]
        if t == "death":
            day += 1
            assert ev["round"] == day and vis == "all" and d["players"] == sorted(d["players"])
            assert set(d["players"]) <= alive
            alive -= set(d["players"])
            speakers = []
        if t == "speech":
            assert ev["player"] in alive and ev["player"] not in speakers
            speakers.append(ev["player"])
        if t == "vote":
            assert sorted(speakers) == sorted(alive)
            voters.append(ev["player"])
            assert d["target"] != ev["player"] and (d["target"] in alive or d["target"] is None)
            assert cfg["allow_abstain"] or d["target"] is not None
        if t == "eliminate":
            assert voters == sorted(alive)
            voters = []
            if d["player"] is not None:
                alive.remove(d["player"])
        if t == "role_reveal":
            assert cfg["reveal_on_death"] and d["role"] == roles[d["player"]]
    res = rec["result"]
    living_wolves = len(alive & set(wolves))
    others = len(alive) - living_wolves
    if res["winner"] == "village":
        assert living_wolves == 0 and res["reason"] == "werewolves_dead"
    elif res["winner"] == "werewolf":
        assert living_wolves > 0
        assert others == 0 or (cfg["wolf_win"] == "parity" and living_wolves >= others)
    else:
        assert res["reason"] == "day_limit" and day == cfg["max_days"] and res["winners"] == []
    if res["winner"] != "draw":
        assert res["winners"] == [p["id"] for p in rec["players"] if p["team"] == res["winner"]]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    kind=st.sampled_from(["random", "scripted"]),
    setup=st.sampled_from(SETUPS),
    abstain=st.booleans(),
    tie=st.sampled_from(["random", "none"]),
    reveal=st.booleans(),
    wolf_win=st.sampled_from(["parity", "all_villagers_dead"]),
    max_days=st.integers(1, 10),
    release=st.fixed_dictionaries(
        {
            "guardian_may_repeat": st.booleans(),
            "wolf_victim": st.sampled_from(["plurality_lowest_seat", "last_wolf"]),
        }
    ),
)
def test_whole_games_obey_the_rules(
    seed, kind, setup, abstain, tie, reveal, wolf_win, max_days, release
):
    options = {
        "roles": setup,
        "allow_abstain": abstain,
        "vote_tie": tie,
        "reveal_on_death": reveal,
        "wolf_win": wolf_win,
        "max_days": max_days,
        **release,
    }
    game = make_game("werewolf", options)
    agents = [make_agent(kind, "werewolf") for _ in range(game.config.n_players)]
    rec = play_game(game, agents, seed)
    check_record(rec)
    assert all(describe_event(game, e, 0) for e in game.events)
    again = play_game(
        make_game("werewolf", options),
        [make_agent(kind, "werewolf") for _ in agents],
        seed,
    )
    assert json.dumps(rec) == json.dumps(again)


def test_random_games_reach_every_outcome():
    reasons = Counter()
    for seed in range(300):
        game = Werewolf(WerewolfConfig(max_days=3))
        rec = play_game(game, [make_agent("random", "werewolf") for _ in range(7)], seed)
        reasons[rec["result"]["reason"]] += 1
    assert set(reasons) == {"werewolves_dead", "wolf_parity", "day_limit"}
