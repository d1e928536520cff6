"""Checks of the game-record contract, shared by the tests of engines and of LLM players."""

from __future__ import annotations

import json

from stackelberg.evaluation.tournament import parse_condition

#: what the record adds for a seat played by an LLM (``Agent.seat_facts``)
LLM_SEAT_FACTS = (
    "model",
    "choice",
    "choice_asks",
    "choice_reasks",
    "invalid_choices",
    "speech_asks",
    "speech_reasks",
    "fallback_speeches",
)


def check_record(rec: dict, name: str) -> None:
    assert rec["game"] == name
    assert set(rec) == {"game", "seed", "config", "players", "events", "result"}
    n = len(rec["players"])
    assert [p["id"] for p in rec["players"]] == list(range(n))
    for p in rec["players"]:
        assert (
            {"id", "name", "role", "team", "agent"}
            <= set(p)
            <= {"id", "name", "role", "team", "agent", *LLM_SEAT_FACTS}
        )
        assert p["role"] == p["role"].lower() and " " not in p["role"]
    for ev in rec["events"]:
        assert set(ev) == {"type", "phase", "round", "player", "visible_to", "data"}
        assert ev["player"] is None or 0 <= ev["player"] < n
        assert ev["visible_to"] == "all" or all(0 <= i < n for i in ev["visible_to"])
        assert isinstance(ev["round"], int) and isinstance(ev["phase"], str)
        if ev["type"] == "reasoning":  # a player's private reasoning: its own, seen by it only
            assert ev["visible_to"] == [ev["player"]] and set(ev["data"]) == {"step", "text"}
            assert isinstance(ev["data"]["text"], str) and ev["data"]["text"]
        if ev["type"] == "speech":
            refined = parse_condition(rec["players"][ev["player"]]["agent"]).wrapped
            keys = {"text", "base_utterance"} if refined else {"text"}
            assert set(ev["data"]) == keys and ev["visible_to"] == "all"
    res = rec["result"]
    assert {"winner", "winners", "reason"} <= set(res)
    assert set(res["winners"]) <= set(range(n))
    assert json.loads(json.dumps(rec)) == rec


def rule_check(rec: dict) -> None:
    """The engine's own rule checks, replayed from a record (imported here, not at the top:
    the engines' test modules import this one); players' reasoning events are not game
    events, so the checks read the record without them."""
    from games.test_avalon import check_record as check_avalon
    from games.test_onuw import replay_and_check as check_onuw
    from games.test_sotopia import replay_and_check as check_sotopia
    from games.test_werewolf import check_record as check_werewolf

    checks = {
        "avalon": check_avalon,
        "onuw": check_onuw,
        "sotopia": check_sotopia,
        "werewolf": check_werewolf,
    }
    events = [e for e in rec["events"] if e["type"] != "reasoning"]
    checks[rec["game"]]({**rec, "events": events})
