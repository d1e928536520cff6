"""Instances from records: followers, balanced selection, and a split with no shared game."""

from __future__ import annotations

import json

import pytest

from stackelberg.persuasion.context import (
    instance_view,
    select_balanced,
    speech_instances,
    split_seeds,
)


@pytest.mark.parametrize("name", ["werewolf", "avalon", "onuw"])
def test_instances_are_speeches_with_the_next_speaker_as_follower(name, selfplay):
    for rec, turns in selfplay(name, range(3)):
        rows = speech_instances(rec, turns, min_words=1)
        assert rows, "every game has speech turns with a follower"
        for r in rows:
            ev = rec["events"][r["event_index"]]
            assert ev["type"] == "speech" and ev["player"] == r["speaker"]
            assert ev["data"]["text"] == r["base_utterance"]
            later = [e for e in rec["events"][r["event_index"] + 1 :] if e["type"] == "speech"]
            assert later and later[0]["player"] == r["follower"] != r["speaker"]
        last_speakers = {t[0] for t in turns if t[2] is None}
        assert not last_speakers & {r["event_index"] for r in rows}


def test_split_keeps_games_apart_and_selection_balances_roles(selfplay):
    games = selfplay("werewolf", range(12))
    rows = [r for rec, turns in games for r in speech_instances(rec, turns, min_words=3)]
    test = split_seeds([rec["seed"] for rec, _ in games], 0.25, seed=0)
    assert len(test) == 3
    chosen = select_balanced(rows, 20, test, seed=0)
    assert len(chosen) == 20
    assert {r["seed"] for r in chosen if r["split"] == "test"} <= test
    assert not {r["seed"] for r in chosen if r["split"] == "train"} & test
    keys = [(r["speaker_role"], r["follower_role"], r["base_utterance"].lower()) for r in chosen]
    assert len(keys) == len(set(keys)), "duplicates were not removed"
    roles = {r["speaker_role"] for r in chosen if r["split"] == "train"}
    assert {"werewolf", "villager", "seer"} <= roles
    assert select_balanced(rows, 20, test, seed=0) == chosen


def test_views_rebuild_what_each_player_had_seen(selfplay):
    rec, turns = selfplay("werewolf", [4])[0]
    row = speech_instances(rec, turns, min_words=1)[0]
    view = instance_view(json.dumps(rec), row)
    follower_lines = view.lines(view.follower)
    assert all(row["base_utterance"] not in line for line in follower_lines[-1:])
    wolves = [p["id"] for p in rec["players"] if p["role"] == "werewolf"]
    villager = next(p["id"] for p in rec["players"] if p["role"] == "villager")
    assert any("werewolves" in line.lower() for line in view.lines(wolves[0]))
    assert not any("werewolves are" in line.lower() for line in view.lines(villager))
