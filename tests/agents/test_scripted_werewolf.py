"""Behaviour of the scripted Werewolf players: what they say, hear, and do."""

from __future__ import annotations

import pytest

from stackelberg.agents.runner import agent_rng, play_game
from stackelberg.agents.scripted.werewolf import (
    WerewolfScripted,
    parse_claims_seer,
    parse_suspects,
    parse_trusts,
    parse_verdicts,
)
from stackelberg.games import make_game
from stackelberg.games.base import SPEAK

# seats: wolves 0 and 1, seer 2, guardian 3, villagers 4, 5, 6
PAPER = ["werewolf", "werewolf", "seer", "guardian", "villager", "villager", "villager"]


@pytest.mark.parametrize(
    ("text", "seer", "verdicts", "suspects", "trusts"),
    [
        ("I am the Seer. Player 3 is a werewolf.", True, [(2, True)], [], []),
        ("I am the Seer. Player 5 is not a werewolf.", True, [(4, False)], [], []),
        ("i am the seer. player 1 is a werewolf. Player 2 is not a werewolf.", True,
         [(0, True), (1, False)], [], []),
        ("I think Player 2 is a wolf, honestly.", False, [(1, True)], [], []),
        ("I suspect Player 4. Let's vote for Player 6.", False, [], [3, 5], []),
        ("I trust Player 1.", False, [], [], [0]),
        ("Player 9 is a werewolf.", False, [], [], []),  # no such player in a 7-player game
        ("I have no information yet.", False, [], [], []),
    ],
)  # fmt: skip
def test_speech_parsing(text, seer, verdicts, suspects, trusts):
    assert parse_claims_seer(text) is seer
    assert parse_verdicts(text, 7) == verdicts
    assert parse_suspects(text, 7) == suspects
    assert parse_trusts(text, 7) == trusts


def scripted_table(seed, roles=PAPER):
    game = make_game("werewolf", {"roles": roles})
    game.reset(seed, roles)
    agents = [WerewolfScripted() for _ in roles]
    for pid, agent in enumerate(agents):
        agent.setup(game, pid, agent_rng(seed, pid))
    return game, agents


def day_one_votes(seed, line):
    """Play to the day-1 vote; seat 2 (the seer) says ``line`` instead of its own speech."""
    game, agents = scripted_table(seed)
    votes = {}
    while (d := game.decision()) is not None and game.round == 1:
        action = agents[d.player].act(d)
        if d.kind == SPEAK and d.player == 2:
            action = line
        if d.kind == "vote":
            votes[d.player] = action
        game.step(action)
    return votes


def test_a_seer_claim_moves_scripted_listeners():
    """'I am the Seer. Player 5 is a werewolf.' makes the listeners vote for Player 5 (id 4)."""
    moved = quiet = listeners = 0
    for seed in range(40):
        with_claim = day_one_votes(seed, "I am the Seer. Player 5 is a werewolf.")
        without = day_one_votes(seed, "I have no information yet.")
        for voter in (3, 5, 6):  # guardian and villagers, if alive and not the accused
            if voter in with_claim and {2, 4} <= set(with_claim) and voter in without:
                listeners += 1
                moved += with_claim[voter] == 4
                quiet += without[voter] == 4
    assert listeners > 30
    assert moved > 0.75 * listeners
    assert quiet < 0.4 * listeners


def test_plain_free_text_accusation_moves_a_listener():
    """An LLM-style line without a claim shifts suspicion too (less than a Seer claim)."""
    game, agents = scripted_table(0)
    listener = agents[5]
    listener._hear(6, "Honestly, I think Player 5 is a wolf.")
    plain = listener.suspicion()[4]
    listener._hear(2, "I am the Seer. Player 5 is a werewolf.")
    claimed = listener.suspicion()[4]
    assert 0 < plain < claimed


def test_votes_against_confirmed_good_players_are_suspicious():
    game, agents = scripted_table(0)
    me = agents[5]
    me.known[4] = False  # e.g. a player killed at night
    me.votes += [(0, 4), (3, 6)]
    score = me.suspicion()
    assert score[0] > score[3] == 0
    me.votes.append((3, 5))  # voted for me; I know I am good
    assert me.suspicion()[3] > 0


def test_a_claimer_who_accuses_me_is_a_liar():
    game, agents = scripted_table(0)
    me = agents[5]
    me._hear(1, "I am the Seer. Player 6 is a werewolf.")  # Player 6 is me
    me._hear(2, "I am the Seer. Player 2 is a werewolf.")
    score = me.suspicion()
    assert score[1] > 5 and score[1] > score[2]
    assert me._credible_claimers() == [2]


def scripted_records(n, roles=PAPER, **options):
    for seed in range(n):
        game = make_game("werewolf", {"roles": roles, **options})
        yield play_game(game, [WerewolfScripted() for _ in roles], seed, roles)


def test_wolves_agree_and_never_target_each_other():
    for rec in scripted_records(150):
        wolves = {p["id"] for p in rec["players"] if p["role"] == "werewolf"}
        by_night: dict[int, set[int]] = {}
        for ev in rec["events"]:
            if ev["type"] == "wolf_choice":
                assert ev["data"]["target"] not in wolves
                by_night.setdefault(ev["round"], set()).add(ev["data"]["target"])
            if ev["type"] == "vote" and ev["player"] in wolves:
                assert ev["data"]["target"] not in wolves
        assert all(len(targets) == 1 for targets in by_night.values())


def test_seer_inspects_fresh_players_and_reveals_findings():
    for rec in scripted_records(100):
        seer = next(p["id"] for p in rec["players"] if p["role"] == "seer")
        seen: list[int] = []
        for ev in rec["events"]:
            if ev["type"] == "inspect":
                assert ev["data"]["target"] not in seen
                seen.append(ev["data"]["target"])
            if ev["type"] == "speech" and ev["player"] == seer:
                text = ev["data"]["text"]
                assert text.startswith("I am the Seer.")
                assert parse_verdicts(text, 7) == [
                    (e["data"]["target"], e["data"]["is_werewolf"])
                    for e in rec["events"][: rec["events"].index(ev)]
                    if e["type"] == "inspect"
                ]


def test_guardian_protects_a_lone_seer_claimer():
    checked = 0
    for rec in scripted_records(150):
        seer = next(p["id"] for p in rec["players"] if p["role"] == "seer")
        claimers: set[int] = set()
        dead: set[int] = set()
        last = None
        for ev in rec["events"]:
            t, d = ev["type"], ev["data"]
            if t == "speech" and parse_claims_seer(d["text"]):
                claimers.add(ev["player"])
            if t in ("death", "eliminate"):
                dead |= set(d.get("players", [d.get("player")]))
            if t == "protect":
                if claimers == {seer} and seer not in dead and last != seer:
                    assert d["target"] == seer
                    checked += 1
                last = d["target"]
    assert checked > 10


def test_guardian_keeps_protecting_the_seer_claimer_where_repeats_are_allowed():
    checked = repeats = 0
    for rec in scripted_records(150, guardian_may_repeat=True):
        seer = next(p["id"] for p in rec["players"] if p["role"] == "seer")
        claimers: set[int] = set()
        dead: set[int] = set()
        last = None
        for ev in rec["events"]:
            t, d = ev["type"], ev["data"]
            if t == "speech" and parse_claims_seer(d["text"]):
                claimers.add(ev["player"])
            if t in ("death", "eliminate"):
                dead |= set(d.get("players", [d.get("player")]))
            if t == "protect":
                if claimers == {seer} and seer not in dead:
                    assert d["target"] == seer
                    checked += 1
                    repeats += last == seer
                last = d["target"]
    assert checked > 10 and repeats > 5


@pytest.mark.parametrize("wolf_victim", ["plurality_lowest_seat", "last_wolf"])
def test_wolves_agree_whatever_the_victim_rule(wolf_victim):
    for rec in scripted_records(60, wolf_victim=wolf_victim):
        night: list[int] = []
        for ev in rec["events"]:
            if ev["type"] == "wolf_choice":
                night.append(ev["data"]["target"])
            elif ev["type"] == "kill":
                assert set(night) == {ev["data"]["target"]}
                night = []


def test_wolves_sometimes_fake_claim_and_accuse_villagers():
    fake = accuse = 0
    for rec in scripted_records(150):
        wolves = {p["id"] for p in rec["players"] if p["role"] == "werewolf"}
        for ev in rec["events"]:
            if ev["type"] == "speech" and ev["player"] in wolves:
                text = ev["data"]["text"]
                fake += parse_claims_seer(text)
                named = [t for t, w in parse_verdicts(text, 7) if w] + parse_suspects(text, 7)
                assert not set(named) & wolves
                accuse += bool(named)
    assert fake > 10 and accuse > 100


@pytest.mark.parametrize(
    "roles",
    [
        ["werewolf", "werewolf", "seer", "witch", "guardian", "villager", "villager"],
        ["werewolf", "werewolf", "seer", "doctor", "villager", "villager", "villager"],
    ],
)
def test_witch_and_doctor_setups_play_sensibly(roles):
    saves = poisons = wins = 0
    for rec in scripted_records(100, roles):
        saves += sum(e["type"] == "save" for e in rec["events"])
        poisons += sum(e["type"] == "poison" for e in rec["events"])
        wins += rec["result"]["winner"] == "village"
    if "witch" in roles:
        assert saves > 50 and poisons > 3
    assert 10 < wins < 90  # neither side always wins
