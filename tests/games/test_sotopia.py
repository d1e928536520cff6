"""Sotopia: the turn protocol, the ending rules, what each character may see, the
scenario files (the project's format and the public dataset's) and their errors, and the
rule-based evaluator."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

import pytest
import yaml

from stackelberg.agents import make_agent
from stackelberg.agents.prompting import history_lines, identity
from stackelberg.agents.runner import play_game
from stackelberg.cli import main
from stackelberg.games import ConfigError, make_game
from stackelberg.games.sotopia import parse_action
from stackelberg.games.sotopia_scenarios import (
    BUILTIN,
    CATEGORIES,
    ScenarioError,
    load_public,
    load_scenarios,
)
from stackelberg.games.sotopia_scores import DIMENSIONS, rule_scores
from stackelberg.params import ParamsError, load_params

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ROOT / "tests/data/sotopia_public"


def text_of(event: dict) -> str:
    """The turn text that logs ``event`` (the inverse of ``parse_action``)."""
    t, d = event["type"], event["data"]
    return {
        "speech": lambda: d["text"],
        "act": lambda: f"*{d['text']}*",
        "none": lambda: "[none]",
        "leave": lambda: f"[leave] {d['text']}".strip(),
    }[t]()


def replay_and_check(record: dict) -> None:
    """Replay a record's turns in a fresh engine: the same events and result, alternating
    seats, and the episode ended by one of its rules."""
    game = make_game("sotopia", record["config"]).reset(record["seed"])
    turns = [e for e in record["events"] if e["type"] in ("speech", "act", "none", "leave")]
    for i, ev in enumerate(turns):
        assert ev["player"] == i % 2
        game.step(text_of(ev))
    assert game.done
    assert [e.to_dict() for e in game.events] == record["events"]
    assert game.result() == record["result"]
    cfg = game.config
    reason = record["result"]["reason"]
    if reason == "left":
        assert turns[-1]["type"] == "leave"
    elif reason == "max_turns":
        assert len(turns) == 2 * cfg.max_turns
    else:
        assert all(e["type"] == "none" for e in turns[-2 * cfg.max_stale_turns :])


def test_actions_are_read_from_the_turn_text():
    assert parse_action("  Hello   there ") == ("speak", "Hello there")
    assert parse_action("*hands over the keys*") == ("act", "hands over the keys")
    assert parse_action("[action] shrugs") == ("act", "shrugs")
    assert parse_action("") == ("none", "")
    assert parse_action("[NONE]") == ("none", "")
    assert parse_action("[leave] Bye now.") == ("leave", "Bye now.")
    assert parse_action("[leave]") == ("leave", "")


def test_turns_alternate_and_each_action_logs_its_event():
    game = make_game("sotopia").reset(5)
    assert game.n_players == 2 and [p.team for p in game.players] == ["first", "second"]
    for text, player, kind in [
        ("Hi, could we talk?", 0, "speech"),
        ("*nods*", 1, "act"),
        ("[none]", 0, "none"),
        ("Sure.", 1, "speech"),
    ]:
        assert game.decision().player == player
        assert game.next_speaker() == 1 - player  # the follower is the other character
        game.step(text)
        assert game.events[-1].type == kind and game.events[-1].player == player
        assert game.events[-1].visible_to == "all"
    game.step("[leave] Thanks, bye.")
    assert game.done and game.result()["reason"] == "left"
    assert game.events[-1].type == "end"


def test_the_episode_ends_after_max_turns_per_character():
    game = make_game("sotopia", {"max_turns": 2}).reset(0)
    for i in range(3):
        game.step(f"Line {i}.")
        assert not game.done
    assert game.next_speaker() is None  # the last turn has no follower
    game.step("Line 3.")
    assert game.done and game.result()["reason"] == "max_turns"


def test_the_episode_ends_after_stale_rounds_and_words_reset_the_count():
    game = make_game("sotopia", {"max_stale_turns": 2}).reset(0)
    for text in ["[none]", "[none]", "[none]", "Wait, one thing.", "[none]", "[none]", "[none]"]:
        game.step(text)
        assert not game.done
    game.step("[none]")
    assert game.done and game.result()["reason"] == "stale"


def test_a_view_never_holds_the_other_characters_goal_or_secret():
    for seed in range(12):
        game = make_game("sotopia").reset(seed)
        game.step("Hello.")
        chars = [e.data for e in game.events if e.type == "character"]
        for me in range(2):
            other = chars[1 - me]
            obs = game.observation(me)
            seen = "\n".join(
                [
                    json.dumps(obs.data),
                    identity(game, me),
                    *history_lines(game, me, game.events),
                ]
            )
            assert chars[me]["goal"] in identity(game, me)
            assert other["goal"] not in seen
            if other["secret"]:
                assert other["secret"] not in seen
            assert all(
                me in e.visible_to for e in game.events if e.type == "character" and e.player == me
            )


def test_consecutive_seeds_play_distinct_scenarios_of_the_split():
    train = {s.id for s in load_scenarios() if s.split == "train"}
    ids = [
        make_game("sotopia", {"split": "train"}).reset(seed).public_state()["scenario"]
        for seed in range(len(train))
    ]
    assert set(ids) == train  # every train scenario once, no test scenario
    assert (
        make_game("sotopia").reset(3).public_state() == make_game("sotopia").reset(3).public_state()
    )


def test_the_shipped_scenarios_cover_the_categories_in_both_splits():
    scenarios = load_scenarios()
    assert len(scenarios) >= 40
    for split in ("train", "test"):
        assert {s.category for s in scenarios if s.split == split} == set(CATEGORIES)


def test_scripted_self_play_replays_and_scores_every_dimension():
    for seed in range(6):
        game = make_game("sotopia", {"max_turns": 6})
        record = play_game(game, [make_agent("scripted", "sotopia") for _ in range(2)], seed)
        replay_and_check(record)
        for part in record["result"]["scores"]:
            assert set(part["scores"]) == set(DIMENSIONS) == set(part["reasons"])
            for dim, (low, high) in DIMENSIONS.items():
                assert low <= part["scores"][dim] <= high


def test_the_rule_based_evaluator_credits_keywords_the_other_said_and_leaked_secrets():
    chars = [
        {"goal_keywords": ["300", "deal"], "secret_words": ["budget"]},
        {"goal_keywords": ["350"], "secret_words": []},
    ]
    turns = [
        {"player": 0, "action": "speak", "text": "Would you take 300? My budget is tight."},
        {"player": 1, "action": "speak", "text": "300 is too low, you idiot."},
        {"player": 0, "action": "speak", "text": "Would you take 300? My budget is tight."},
        {"player": 1, "action": "leave", "text": ""},
    ]
    first, second = rule_scores(turns, chars, "negotiation")
    assert first["scores"]["goal"] == 5.0  # "300" said by the other; "deal" by nobody
    assert first["scores"]["secret"] == -10.0
    assert first["scores"]["believability"] == 5.0  # one of two turns repeated
    assert first["scores"]["knowledge"] == 4
    assert first["scores"]["financial_and_material_benefits"] == 0
    assert second["scores"]["goal"] == 0.0 and second["scores"]["secret"] == 0
    assert second["scores"]["social_rules"] == -2 and second["scores"]["relationship"] == -1
    assert "300" in first["reasons"]["goal"]


# ---- scenario files ----------------------------------------------------------------------
@functools.cache
def first_builtin() -> dict:
    """The first shipped scenario, parsed once (the file's 42 take a pure-Python YAML parse)."""
    return yaml.safe_load(BUILTIN.read_text())["scenarios"][0]


def scenario(**change) -> dict:
    return {**copy.deepcopy(first_builtin()), **change}


def write(tmp_path, scenarios, name="s.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"scenarios": scenarios}))
    return path


def test_a_user_file_in_the_projects_format_is_played(tmp_path):
    path = write(tmp_path, [scenario(id="mine", split="test")])
    game = make_game("sotopia", {"scenarios": str(path)})
    record = play_game(game, [make_agent("scripted", "sotopia") for _ in range(2)], 7)
    assert record["result"]["scenario"] == "mine"
    assert record["config"]["scenarios"] == str(path)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ([scenario(id="x", characters=[scenario()["characters"][0]])], ["'x'", "characters"]),
        (
            [scenario(id="y", characters=[{**scenario()["characters"][0], "goal": ""}] * 2)],
            ["'y'", "characters.0.goal"],
        ),
        (
            [
                scenario(
                    id="z", characters=[{**scenario()["characters"][0], "goal_keywords": []}] * 2
                )
            ],
            ["'z'", "goal_keywords"],
        ),
        ([scenario(id="w", split="dev")], ["'w'", "split"]),
        ([scenario(id="v"), scenario(id="v")], ["'v'", "id", "earlier"]),
        ([scenario(id="u", mood="tense")], ["'u'", "mood"]),
    ],
)
def test_a_bad_scenario_is_one_line_naming_the_scenario_and_the_field(tmp_path, content, words):
    path = write(tmp_path, content)
    with pytest.raises(ScenarioError) as err:
        make_game("sotopia", {"scenarios": str(path)})
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    for w in words:
        assert w in message, message


def test_unreadable_files_and_empty_splits_are_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenarios: [unclosed\n")
    for options, words in [
        ({"scenarios": str(tmp_path / "none.yaml")}, "no such file"),
        ({"scenarios": str(bad)}, "not valid"),
        ({"scenarios": str(write(tmp_path, [scenario(split="train")])), "split": "test"}, "split"),
        ({"split": "dev"}, "allowed: train, test, all"),
    ]:
        with pytest.raises(ConfigError) as err:
            make_game("sotopia", options)
        assert words in str(err.value) and "\n" not in str(err.value)


def test_params_refuse_a_bad_scenarios_file_at_load(tmp_path):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["game_overrides"]["sotopia"]["evaluate"]["options"]["scenarios"] = "missing.yaml"
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    with pytest.raises(ParamsError) as err:
        load_params(path)
    assert "missing.yaml" in str(err.value) and "\n" not in str(err.value)


def test_the_public_format_loads_each_split():
    hard = load_public(PUBLIC, "hard")["scenarios"]
    assert [s["id"] for s in hard] == ["bargain_lamp-1", "split_chores-2"]
    lamp = hard[0]
    assert lamp["relationship"] == "strangers" and lamp["category"] == "craigslist"
    seller, buyer = lamp["characters"]
    assert seller["name"] == "Noor Hassan" and "extra_info" not in seller["goal"]
    assert "60" in seller["goal_keywords"] and "45" in buyer["goal_keywords"]
    assert "sailing" in seller["secret_words"] and buyer["secret_words"] == []
    assert hard[1]["characters"][0]["name"] == "Jasper Quinn"  # the task's agent order
    assert len(load_public(PUBLIC, "all")["scenarios"]) == 3


def test_the_public_format_errors_name_the_task_and_the_field(tmp_path):
    import shutil

    folder = tmp_path / "public"
    shutil.copytree(PUBLIC, folder)
    tasks = json.loads((folder / "hard_tasks_90.json").read_text())
    tasks[1]["agent_ids"] = ["agent-b", "agent-x"]
    (folder / "hard_tasks_90.json").write_text(json.dumps(tasks))
    with pytest.raises(ScenarioError, match=r"'split_chores'.*agent_ids.*'agent-x'"):
        load_public(folder, "hard")
    (folder / "testing_tasks_450.json").unlink()
    with pytest.raises(ScenarioError, match="testing_tasks_450.json"):
        load_public(folder, "all")


def test_import_writes_a_file_that_the_game_plays(tmp_path, capsys):
    out = tmp_path / "hard.yaml"
    assert main(["sotopia", "import", str(PUBLIC), "--split", "hard", "--out", str(out)]) == 0
    assert "wrote 2 scenarios" in capsys.readouterr().err
    game = make_game("sotopia", {"scenarios": str(out), "split": "test"})
    record = play_game(game, [make_agent("scripted", "sotopia") for _ in range(2)], 1)
    assert record["result"]["scenario"] in {"bargain_lamp-1", "split_chores-2"}
    assert record["config"]["scenarios"] == str(out)
    assert main(["sotopia", "import", str(tmp_path)]) == 2  # no records: one line, status 2
    assert "EnvironmentProfile" in capsys.readouterr().err


def test_play_prints_distinct_scenarios_and_the_dimensions(capsys):
    assert main(["play", "sotopia", "--games", "4", "--set", "max_turns=3", "--transcript"]) == 0
    out = capsys.readouterr().out
    assert "4 games (4 distinct scenarios)" in out
    assert "mean score by seat" in out and "goal:" in out


def test_a_human_seat_reads_its_own_goal_only_and_acts_in_text(monkeypatch, capsys):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO("Hello, what do you need?\n*shrugs*\n"))
    assert main(["play", "sotopia", "--human", "2", "--set", "max_turns=2", "--seed", "4"]) == 0
    out = capsys.readouterr().out
    game = make_game("sotopia").reset(4)
    mine, theirs = (
        e.data["goal"]
        for e in sorted((e for e in game.events if e.type == "character"), key=lambda e: -e.player)
    )
    assert f"Your private goal: {mine}" in out and theirs not in out.split("=== result")[0]
    assert "Player 2 says: Hello, what do you need?" in out
    assert "=== result:" in out and "goal:" in out  # the human sees the scores at the end
