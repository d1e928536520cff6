"""`stackelberg play`: output, summary, transcript, seats wrapped in the Refiner, and one-line
errors for bad input."""

from __future__ import annotations

import html
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from tables import squeeze

from stackelberg.cli import main

ROOT = Path(__file__).resolve().parents[1]


def table_rows(printed: str, header: str) -> dict[str, list[str]]:
    """The rows of the printed table whose first column is headed ``header``: first cell ->
    the other cells (split on whitespace)."""
    summary = printed.split("\nwrote ")[0]  # the line after the summary: where records went
    block = next(b for b in summary.split("\n\n") if b.startswith(header))
    return {line.split()[0]: line.split()[1:] for line in block.splitlines()[2:]}


@pytest.mark.parametrize("game", ["werewolf", "avalon", "onuw"])
def test_play_writes_records_and_summary(game, tmp_path, capsys):
    out = tmp_path / "games.jsonl"
    assert (
        main(["play", game, "--games", "3", "--seed", "7", "--out", str(out), "--transcript"]) == 0
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["seed"] for r in records] == [7, 8, 9]
    printed = capsys.readouterr().out
    assert "=== result:" in printed and "--- " in printed and "Player 1:" in printed
    assert "\n3 games\n" in printed
    # each team dealt: the games it won (its name among the winners) of the 3 it played
    teams = table_rows(printed, "wins by team")
    dealt = {p["team"] for r in records for p in r["players"]}
    assert set(teams) == dealt
    for team, (won_of, rate, *_) in teams.items():
        won = sum(team in r["result"]["winner"].split("+") for r in records)
        assert won_of == f"{won}/3" and rate == f"{won / 3:.1%}"
    # each role dealt: the games where one of its holders won, of the games it was dealt in
    roles = table_rows(printed, "wins by role")
    for role, (won_of, _) in roles.items():
        held = [r for r in records if any(p["role"] == role for p in r["players"])]
        won = sum(
            any(p["role"] == role and p["id"] in r["result"]["winners"] for p in r["players"])
            for r in held
        )
        assert won_of == f"{won}/{len(held)}"
    assert set(roles) == {p["role"] for r in records for p in r["players"]}


def test_play_is_reproducible(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path in (a, b):
        assert main(["play", "werewolf", "--games", "4", "--out", str(path)]) == 0
    assert a.read_bytes() == b.read_bytes()


def test_set_option_and_mixed_agents(tmp_path):
    out = tmp_path / "x.jsonl"
    agents = ",".join(["scripted", "random"] * 3 + ["scripted"])
    assert (
        main(["play", "avalon", "--set", "n_players=7", "--agents", agents, "--out", str(out)]) == 0
    )
    rec = json.loads(out.read_text())
    assert len(rec["players"]) == 7
    assert [p["agent"] for p in rec["players"]] == agents.split(",")


@pytest.mark.parametrize(
    "argv, words",
    [
        (["play", "werewolf", "--set", "colour=blue"], "unknown option 'colour'"),
        (["play", "werewolf", "--set", "allow_abstain=maybe"], "allow_abstain"),
        (["play", "avalon", "--set", "n_players=4"], "n_players"),
        (["play", "werewolf", "--set", "roles=werewolf,villager"], "roles"),
        (["play", "werewolf", "--set", "noequals"], "KEY=VALUE"),
        (["play", "werewolf", "--agents", "genius"], "unknown agent 'genius'"),
        (["play", "avalon", "--agents", "llm_ins"], "agent 'llm_ins' plays onuw only, not avalon"),
        (["play", "werewolf", "--agents", "random,random"], "2 kinds listed"),
        (["play", "onuw", "--agents", "rl_ins", "--tactics", "nowhere"], "no tactic policy in"),
        (
            ["play", "avalon", "--agents", "strategist", "--value", "nowhere"],
            "no strategist value model in",
        ),
        (["play", "werewolf", "--agents", "lspo", "--lspo", "nowhere"], "no lspo policy in"),
        (["play", "werewolf", "--games", "0"], "--games"),
        (
            ["play", "werewolf", "--agents", "refiner+scripted"],
            "refiner+scripted seats need --refiner",
        ),
        (
            ["play", "werewolf", "--agents", "best2+genius", "--refiner", "base"],
            "unknown agent 'genius'",
        ),
        (["play", "werewolf", "--agents", "best0+scripted"], "bad condition 'best0+scripted'"),
        (
            ["play", "werewolf", "--agents", "refiner+scripted", "--refiner", "nowhere"],
            "--refiner nowhere: no such folder",
        ),
        (
            ["play", "werewolf", "--agents", "refiner+scripted", "--refiner", str(ROOT / "src")],
            "not a LoRA adapter folder",
        ),
        (
            ["play", "werewolf", "--agents", "best2+scripted", "--refiner", "base"]
            + ["--params", "nowhere.yaml"],
            "nowhere.yaml: no such params file",
        ),
        (
            ["play", "werewolf", "--agents", "best2+scripted", "--refiner", "base"]
            + ["--params", str(ROOT / "src")],
            "cannot read the params file",
        ),
        (
            ["play", "werewolf", "--agents", "scripted", "--refiner", "base"],
            "--refiner is for refiner+X and bestN+X seats",
        ),
        (
            ["play", "onuw", "--agents", "direct", "--backend", "anthropic", "--model", "c"]
            + ["--choice", "score"],
            "choice: score needs log-probabilities",
        ),
        (
            ["play", "onuw", "--agents", "direct", "--backend", "anthropic", "--model", "c"]
            + ["--max-speech-attempts", "0"],
            "max_speech_attempts must be at least 1, got 0",
        ),
    ],
)
def test_bad_input_is_one_line_and_leaves_no_file(argv, words, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    out = tmp_path / "never.jsonl"
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.fixture
def pretend_models(monkeypatch):
    """Every model ``play`` loads is the pretend chat model on the loopback server (it
    writes speeches and scores, as vLLM does); yields the configs it was asked to load."""
    from llm.fake_server import MODEL, FakeServer
    from llm.game_policy import play_answer

    from stackelberg import llm

    make_llm, asked, loaded = llm.make_llm, [], []

    def pretend(config, **overrides):
        asked.append(config.model_copy(update=overrides))
        url = f"{server.url}/v1"
        loaded.append(make_llm({"backend": "openai", "model": MODEL, "base_url": url}))
        return loaded[-1]

    with FakeServer() as server:
        server.answer, server.models = play_answer, {MODEL}
        monkeypatch.setattr(llm, "make_llm", pretend)
        yield asked
        for backend in loaded:
            backend.close()


@pytest.mark.parametrize("adapter", [False, True])
def test_play_wraps_seats_in_the_refiner_and_the_viewer_shows_them(
    adapter, pretend_models, tmp_path
):
    from stackelberg.params import load_params

    folder = tmp_path / "refiner"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
    out = tmp_path / "games.jsonl"
    agents = ",".join(["refiner+scripted", "best2+scripted"] + ["scripted"] * 5)
    refiner = str(folder) if adapter else "base"
    argv = ["play", "werewolf", "--agents", agents, "--refiner", refiner, "--out", str(out)]
    assert main([*argv, "--params", str(ROOT / "params.yaml"), "--no-cache"]) == 0
    # the Refiner as the evaluate stage plays it (adapter or not), once for both seats;
    # the best-of speaker's Measurer from params
    params = load_params(ROOT / "params.yaml")
    assert pretend_models == [
        params.refiner_profile("werewolf", folder if adapter else None).model.model_copy(
            update={"cache": "off"}
        ),
        params.models.measurer.model_copy(update={"cache": "off"}),
    ]
    record = json.loads(out.read_text())
    assert [p["agent"] for p in record["players"]] == agents.split(",")
    speeches = [e for e in record["events"] if e["type"] == "speech"]
    for seat in (0, 1):  # X's speech kept beside the Refiner's
        said = [e["data"] for e in speeches if e["player"] == seat]
        assert said and all(d["text"] != d["base_utterance"] for d in said)
    assert all("base_utterance" not in e["data"] for e in speeches if e["player"] > 1)
    view = tmp_path / "view"
    assert main(["view", str(out), "--out", str(view)]) == 0
    page = (view / "werewolf-0.html").read_text()
    assert all(html.escape(e["data"]["text"]) in page for e in speeches if e["player"] < 2)


def test_unknown_game_exits_nonzero_without_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "stackelberg.cli", "play", "chess"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "invalid choice: 'chess'" in proc.stderr and "Traceback" not in proc.stderr


def test_play_with_a_human_seat(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n" * 200))
    assert main(["play", "onuw", "--human", "2", "--set", "discussion_rounds=1"]) == 0
    out = capsys.readouterr().out
    assert "You are Player 2." in out and "Choose 1-4: " in out
    assert "=== result:" in out and "Player 5:" in out  # roles revealed at the end


@pytest.mark.parametrize(
    "stdin, argv, status, words",
    [
        ("", ["play", "werewolf", "--human", "1"], 1, "the human player left (end of input)"),
        ("", ["play", "werewolf", "--human", "8"], 2, "--human must be a seat from 1 to 7"),
    ],
)
def test_human_seat_errors_are_one_line(monkeypatch, capsys, stdin, argv, status, words):
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    assert main(argv) == status
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and "Traceback" not in err


def test_report_prints_the_tables(tmp_path, capsys):
    from stackelberg.evaluation import game_metrics, play_matrix

    records = play_matrix("werewolf", ["random", "scripted"], range(3), opponent="random")
    (tmp_path / "werewolf").mkdir()
    (tmp_path / "werewolf" / "metrics.json").write_text(json.dumps(game_metrics(records)))
    assert main(["report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Win rate of the agent under test" in out and "werewolf: win rate by role" in out
    assert main(["report", str(tmp_path), "--markdown"]) == 0
    assert "| agent | werewolf |" in squeeze(capsys.readouterr().out)
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "no metrics.json" in capsys.readouterr().err


def test_the_summary_counts_the_llm_seats_speeches_and_choices():
    from stackelberg.cli import summarize

    def seat(i, asks, reasks, fell, role="villager", team="village"):
        facts = {"speech_asks": asks, "speech_reasks": reasks, "fallback_speeches": fell}
        facts |= {"choice_asks": 2, "choice_reasks": 1, "invalid_choices": 0}
        return {"id": i, "role": role, "team": team, **facts}

    result = {"winner": "village", "winners": [0], "reason": "all_wolves_dead"}
    wolf = {"id": 1, "role": "werewolf", "team": "werewolf"}
    records = [
        {
            "game": "werewolf",
            "seed": 0,
            "result": result,
            "players": [seat(0, 12, 4, 2), seat(1, 10, 0, 0)],
        },
        {"game": "werewolf", "seed": 1, "result": result, "players": [seat(0, 3, 2, 1), wolf]},
    ]
    printed = summarize(iter(records))  # an iterator: the summary reads it once
    rows = table_rows(printed, "LLM seats")
    # speeches: 25 asked, 6 of them re-asks, so 19 made; 3 fell back
    assert rows["speeches"] == ["19", "25", "6", "3", "15.8%"]
    assert rows["generated"] == ["choices", "3", "6", "3", "0", "0.0%"]
    assert table_rows(printed, "wins by team") == {
        "village": ["2/2", "100.0%", "all_wolves_dead", "2"],
        "werewolf": ["0/1", "0.0%"],
    }
    scripted = {"game": "werewolf", "seed": 0, "result": result, "players": [wolf]}
    assert "LLM seats" not in summarize([scripted])
