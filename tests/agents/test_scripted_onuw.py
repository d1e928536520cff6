"""Scripted ONUW agent: night actions, claims, parsing, and speech that moves listeners."""

from __future__ import annotations

import pytest

from stackelberg.agents import make_agent
from stackelberg.agents.runner import agent_rng, play_game
from stackelberg.agents.scripted.onuw import ONUWScripted, parse_speech
from stackelberg.games import make_game
from stackelberg.games.base import SPEAK

# players: villager x3, werewolf (Player 4), hunter; centre: seer, robber (no card moves)
QUIET = ["villager", "villager", "villager", "werewolf", "hunter", "seer", "robber"]


@pytest.mark.parametrize(
    "text, key, value",
    [
        ("I am the Seer. I saw Player 3 is a werewolf.", "claim", "seer"),
        ("I am the Seer. I saw Player 3 is a werewolf.", "sightings", ((2, "werewolf"),)),
        ("I'm the seer and Player 2 was the Villager", "sightings", ((1, "villager"),)),
        (
            "I am the Robber. I swapped with Player 2 and became the Villager.",
            "rob",
            (1, "villager"),
        ),
        ("I am the Troublemaker. I swapped Player 1 and Player 4.", "trouble", (0, 3)),
        ("I am the Drunk. I swapped with center card 2.", "drunk", True),
        ("I am the Insomniac. I am still the Insomniac.", "now", "insomniac"),
        ("I am the Insomniac. My card is now the Robber.", "now", "robber"),
        ("I am the Insomniac. I am still the Insomniac.", "claim", "insomniac"),
        ("I am not a werewolf, Player 2 is lying.", "claim", None),
        ("I am not a werewolf, Player 2 is lying.", "liars", (1,)),
        ("Honestly I suspect Player 5. I will vote for Player 5.", "suspects", (4,)),
        ("Player 3 is not a werewolf.", "not_wolf", (2,)),
        ("Player 3 is not a werewolf.", "sightings", ()),
        ("I would rather not say my role.", "hides", True),
    ],
)
def test_parse_speech(text, key, value):
    assert parse_speech(text)[key] == value


def drive(roles, speeches=None, night=None, seed=0, **opts):
    """Play a fixed deal with scripted agents; ``speeches[(round, player)]`` and
    ``night[player]`` replace that agent's action. Returns (game, votes by player)."""
    speeches, night = speeches or {}, night or {}
    game = make_game("onuw", {"roles": tuple(roles), "center_cards": len(roles) - 5, **opts})
    game.reset(seed, list(roles))
    agents = [ONUWScripted() for _ in range(5)]
    for p, a in enumerate(agents):
        a.setup(game, p, agent_rng(seed, p))
    while (d := game.decision()) is not None:
        action = agents[d.player].act(d)
        if d.kind == SPEAK and (game.round, d.player) in speeches:
            action = speeches[(game.round, d.player)]
        elif d.kind not in (SPEAK, "vote") and d.player in night:
            action = night[d.player]
        game.step(action)
    votes = {e.player: e.data["target"] for e in game.events if e.type == "vote"}
    return game, votes


def quiet_table(first_words: str, listeners: list[int]) -> dict:
    """Everyone but the listeners says nothing of use, except Player 2's first speech."""
    talkers = [p for p in range(5) if p not in listeners]
    lines = {(r, p): "Good morning, everyone." for r in (1, 2, 3) for p in talkers}
    lines[(1, 1)] = first_words
    return lines


@pytest.mark.parametrize(
    "words, target",
    [
        ("I am the Seer. I saw Player 4 is a werewolf.", 3),
        ("I am the Seer. I saw Player 5 is a werewolf.", 4),
        ("Good morning. I am sure Player 3 is a werewolf.", 2),  # free text, no role claim
        ("I suspect Player 4, I will vote for Player 4.", 3),
    ],
)
def test_speech_moves_the_listeners(words, target):
    moved = 0
    for seed in range(6):
        listeners = [p for p in (0, 2) if p != target]
        _, before = drive(QUIET, quiet_table("Good morning, everyone.", listeners), seed=seed)
        _, after = drive(QUIET, quiet_table(words, listeners), seed=seed)
        assert all(after[p] == target for p in listeners)
        moved += sum(before[p] != target for p in listeners)
    assert moved > 0


def test_a_contested_seer_claim_weighs_less():
    roles = QUIET
    game = make_game("onuw", {"roles": tuple(roles), "discussion_rounds": 1})
    game.reset(0, roles)
    listener = ONUWScripted()
    listener.setup(game, 0, agent_rng(0, 0))
    lines = {
        1: "I am the Seer. I saw Player 4 is a werewolf.",
        3: "I am the Seer. I saw Player 2 is a werewolf.",
    }
    while (d := game.decision()) is not None and d.kind != "vote":
        game.step(lines.get(d.player, "Hello.") if d.kind == SPEAK else d.options[0])
    listener._read()
    sus = listener.suspicion()
    assert sus[1] > 0 and sus[3] > 0 and sus[2] < min(sus[1], sus[3])


def test_robber_claim_moves_the_suspicion_along():
    # a (trusted) seer saw Player 2 as a werewolf; the robber says he robbed Player 2 and
    # became the werewolf: Player 2 now holds the robber card, so the listener votes the robber
    speeches = {
        (1, 0): "I am the Seer. I saw Player 2 is a werewolf.",
        (1, 3): "I am the Robber. I swapped with Player 2 and became a Werewolf.",
    }
    roles = ["villager", "werewolf", "villager", "robber", "villager", "seer", "hunter"]
    sus = None
    game = make_game("onuw", {"roles": tuple(roles), "discussion_rounds": 1})
    game.reset(0, roles)
    listener = ONUWScripted()
    listener.setup(game, 2, agent_rng(0, 2))
    while (d := game.decision()) is not None and d.kind != "vote":
        if d.kind == SPEAK:
            game.step(speeches.get((game.round, d.player), "Hello."))
        else:
            game.step(1 if d.kind == "rob" else d.options[0])
    listener._read()
    sus = listener.suspicion()
    assert max(range(5), key=lambda q: sus[q]) == 3
    assert sus[1] < sus[3]


def test_werewolves_never_vote_for_each_other_and_never_claim_werewolf():
    game = make_game("onuw", {"center_cards": 3})  # the rulebook deck has two werewolves
    for seed in range(150):
        rec = play_game(game, [make_agent("scripted", "onuw") for _ in range(5)], seed)
        ev = rec["events"]
        known = {}
        for e in ev:
            if e["type"] in ("werewolves", "minion"):
                for p in e["visible_to"]:
                    known[p] = set(e["data"]["werewolves"])
        dealt = ev[0]["data"]["cards"]
        for e in ev:
            p = e["player"]
            if e["type"] == "vote" and dealt[p] in ("werewolf", "minion"):
                assert e["data"]["target"] not in known.get(p, set())
            if e["type"] == "speech" and e["round"] == 1 and dealt[p] == "werewolf":
                assert parse_speech(e["data"]["text"])["claim"] not in ("werewolf", None)


def test_village_claims_tell_the_truth():
    game = make_game("onuw")
    for seed in range(150):
        rec = play_game(game, [make_agent("scripted", "onuw") for _ in range(5)], seed)
        first = {
            e["player"]: parse_speech(e["data"]["text"])
            for e in rec["events"]
            if e["type"] == "speech" and e["round"] == 1
        }
        for e in rec["events"]:
            p, d = e["player"], e["data"]
            if e["type"] == "seer" and "target" in d:
                assert first[p]["claim"] == "seer"
                assert first[p]["sightings"] == ((d["target"], d["card"]),)
            if e["type"] == "rob" and d["new_card"] != "werewolf":
                assert first[p]["claim"] == "robber" and first[p]["rob"] == (
                    d["target"],
                    d["new_card"],
                )
            if e["type"] == "troublemake":
                assert first[p]["claim"] == "troublemaker" and first[p]["trouble"] == tuple(
                    d["targets"]
                )


def test_seer_votes_the_werewolf_it_saw_and_the_village_follows():
    roles = ["seer", "villager", "villager", "werewolf", "villager", "robber", "troublemaker"]
    wins = 0
    for seed in range(20):
        game, votes = drive(roles, night={0: 3}, seed=seed)
        assert votes[0] == 3
        wins += game.result()["winner"] == "village"
    assert wins >= 15


def test_tanner_acts_suspicious():
    roles = ["tanner", "villager", "villager", "werewolf", "villager", "seer", "robber"]
    game, _ = drive(roles)
    texts = [e.data["text"] for e in game.events if e.type == "speech" and e.player == 0]
    assert texts[0] == "I would rather not say my role."
    assert "werewolf" in texts[1]


def test_same_seed_same_play():
    game = make_game("onuw")
    a = play_game(game, [make_agent("scripted", "onuw") for _ in range(5)], 42)
    b = play_game(game, [make_agent("scripted", "onuw") for _ in range(5)], 42)
    assert a == b
