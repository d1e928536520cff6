"""`stackelberg view`: a page per game with every speech in order, escaped model output,
the Refiner's base speech and the pipeline's notes beside a speech, one-line errors that
write nothing, and a real browser drawing a page."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from record_checks import check_record

from stackelberg.agents import make_agent
from stackelberg.agents.runner import play_game
from stackelberg.cli import main
from stackelberg.datasets import from_rows, write_dataset
from stackelberg.evaluation.tournament import play_matrix
from stackelberg.games import GAME_NAMES, make_game
from stackelberg.persuasion.context import speech_instances
from stackelberg.viewer import (
    Entry,
    ViewError,
    load_entries,
    render_game,
    render_pages,
    tournament_entries,
)


class PageText(HTMLParser):
    """The text a reader sees (style sheets left out) and the links of a page."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.chunks: list[str] = []
        self.links: list[str] = []
        self._in_style = False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self._in_style = tag == "style"
        if tag == "a":
            self.links.append(dict(attrs)["href"])

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if not self._in_style:
            self.chunks.append(data)

    @property
    def text(self) -> str:
        return " ".join(self.chunks)


def scripted_record(game_name: str, seed: int) -> dict:
    game = make_game(game_name)
    n = len(game.reset(seed).players)
    return play_game(game, [make_agent("scripted", game_name) for _ in range(n)], seed)


def speeches(record: dict) -> list[str]:
    return [e["data"]["text"] for e in record["events"] if e["type"] == "speech"]


def entry(record: dict) -> Entry:
    return Entry(record, json.dumps(record))


def assert_in_order(text: str, parts: list[str]) -> None:
    at = 0
    for part in parts:
        found = text.find(part, at)
        assert found >= 0, f"missing or out of order: {part!r}"
        at = found + len(part)


@pytest.mark.parametrize("game_name", GAME_NAMES)
def test_a_page_shows_every_speech_in_order_and_the_result(game_name):
    record = scripted_record(game_name, 3)
    page = PageText(render_game(entry(record)))
    assert speeches(record)
    assert_in_order(page.text, speeches(record))
    result = record["result"]
    assert result["winner"].replace("_", " ") in page.text
    assert "<details>" in render_game(entry(record))  # roles stay folded without --reveal
    if "final_roles" in result:
        assert "card at the end" in page.text


def test_model_output_is_escaped():
    record = scripted_record("werewolf", 1)
    first = next(e for e in record["events"] if e["type"] == "speech")
    first["data"]["text"] = 'I am <script>alert("x")</script> & honest'
    page = render_game(entry(record))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert 'I am <script>alert("x")</script> & honest' in PageText(page).text


def test_refiner_seats_keep_the_base_speech_and_the_page_shows_both(fake_llm, make_fake_llm):
    refiner = make_fake_llm("Analysis: firm.\nResponse: Player 3 is lying, vote Player 3.")
    records = play_matrix(
        "werewolf",
        ["refiner+direct"],
        seeds=[0],
        camps=["werewolf"],
        llm_routes={"default": fake_llm, "refiner": refiner},
        agent_options={"speech_tokens": 8},
        keep_games=True,
    )
    game = records[0]["game_record"]
    check_record(game, "werewolf")
    refined = [e for e in game["events"] if e["type"] == "speech" and "base_utterance" in e["data"]]
    assert refined and {e["player"] for e in refined} == set(records[0]["seats"])
    [loaded] = [Entry(game, json.dumps(game), "refiner+direct holds the werewolf camp")]
    text = PageText(render_game(loaded)).text
    assert_in_order(text, ["before the Refiner", refined[0]["data"]["base_utterance"]])
    assert "Player 3 is lying, vote Player 3." in text


def test_tournament_records_need_their_game(tmp_path):
    path = tmp_path / "t.jsonl"
    record = scripted_record("avalon", 2)
    summary = {"condition": "direct", "camp": "good", "seed": 2}
    path.write_text(json.dumps({**summary, "game_record": record}) + "\n")
    [kept] = load_entries(path)
    assert kept.record == record and kept.label == "direct holds the good camp"
    path.write_text(json.dumps(summary) + "\n")
    with pytest.raises(ViewError, match="without its game_record"):
        load_entries(path)


def test_the_evaluate_stage_shows_the_first_games_of_each_condition_in_turn():
    records = [
        {"condition": c, "camp": "good", "game_record": {"game": "avalon", "seed": s}}
        for c in ("direct", "refiner+direct")
        for s in (1, 2, 3)
    ]
    picked = tournament_entries(records, 3)
    assert [(e.label, e.record["seed"]) for e in picked] == [
        ("direct, good", 1),
        ("refiner+direct, good", 1),
        ("direct, good", 2),
    ]
    assert json.loads(picked[0].source) == records[0]["game_record"]
    assert tournament_entries(records, 0) == [] and len(tournament_entries(records, 9)) == 6


def test_repeated_seeds_get_their_own_pages():
    record = scripted_record("onuw", 4)
    pages = render_pages([entry(record), entry(record)], "x")
    assert sorted(pages) == ["index.html", "onuw-4-2.html", "onuw-4.html"]
    assert PageText(pages["index.html"]).links == ["onuw-4.html", "onuw-4-2.html"]


def test_view_cli_writes_a_page_per_game_and_an_index(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["play", "avalon", "--games", "2", "--seed", "5", "--out", "games.jsonl"]) == 0
    assert main(["view", "games.jsonl", "--reveal"]) == 0  # default out: view/games
    out = tmp_path / "view" / "games"
    assert sorted(p.name for p in out.iterdir()) == ["avalon-5.html", "avalon-6.html", "index.html"]
    index = PageText((out / "index.html").read_text())
    assert index.links == ["avalon-5.html", "avalon-6.html"]
    assert "<details><summary>show role" not in (out / "avalon-5.html").read_text()
    assert "wrote 2 game pages" in capsys.readouterr().out
    assert main(["view", "games.jsonl"]) == 0  # its own folder is replaced
    assert not [p for p in tmp_path.joinpath("view").iterdir() if p.name.startswith(".")]


def test_view_cli_reads_selfplay_with_intents_and_rewards_beside_it(tmp_path):
    record = scripted_record("werewolf", 6)
    data = tmp_path / "data"
    row = {
        "game": "werewolf",
        "seed": 6,
        "winner": record["result"]["winner"],
        "agents": ",".join(p["agent"] for p in record["players"]),
        "models": ",".join("" for _ in record["players"]),
        "record": json.dumps(record),
        "speech_turns": "[]",
    }
    write_dataset(from_rows([row], "selfplay"), data / "selfplay" / "werewolf.parquet", "selfplay")
    index = next(i for i, e in enumerate(record["events"]) if e["type"] == "speech")
    speaker = record["events"][index]["player"]
    [instance] = speech_instances(record, [(index, speaker, (speaker + 1) % 7)], min_words=1)
    intents = {
        **instance,
        "desired": ["I agree with you."],
        "undesired": ["You are a <b>wolf</b>."],
        "label_attempts": 1,
        "labeler_model": "m",
    }
    write_dataset(from_rows([intents], "intents"), data / "intents" / "werewolf.parquet", "intents")
    score = {
        "instance_id": instance["instance_id"],
        "candidate_index": -1,
        "source": "base",
        "candidate": instance["base_utterance"],
        "reward": 0.42,
        "positive": -1.5,
        "negative": -1.92,
        "raw": 0.42,
        "clamped": 0.42,
        "length_penalty": 0.0,
        "words": 3,
        **{k: [-1.0] for k in ("pos_means", "neg_means", "pos_sums", "neg_sums")},
        "variant": "both",
        "aggregation": "mean",
        "history_cut": 0,
    }
    write_dataset(from_rows([score], "scores"), data / "scores" / "werewolf.parquet", "scores")
    out = tmp_path / "pages"
    assert main(["view", str(data / "selfplay" / "werewolf.parquet"), "--out", str(out)]) == 0
    page = (out / "werewolf-6.html").read_text()
    text = PageText(page).text
    assert_in_order(text, [instance["base_utterance"], "Measurer reward", "+0.420"])
    assert "I agree with you." in text and "You are a <b>wolf</b>." in text
    assert "(labeler: m)" in text
    assert "<b>wolf</b>" not in page


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "not found"),
        ("", "no game records"),
        ('{"a": 1}\n', "not a game record"),
        ("not json\n", "not JSON"),
        (
            '{"game": "onuw", "seed": 1, "players": [], "events": [{}], "result": {}}',
            "not a valid record",
        ),
        (b"\xff\xfe\x00", "not a text file"),
        ("dir", "is a folder"),
        ("parquet", "not a readable parquet"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(content, words, tmp_path, capsys):
    path = tmp_path / ("in.parquet" if content == "parquet" else "in.jsonl")
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text("junk" if content == "parquet" else content)
    before = sorted(tmp_path.iterdir())
    assert main(["view", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert sorted(tmp_path.iterdir()) == before


def test_a_folder_not_written_by_the_viewer_is_not_replaced(tmp_path, capsys):
    games = tmp_path / "g.jsonl"
    games.write_text(json.dumps(scripted_record("onuw", 1)) + "\n")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert main(["view", str(games), "--out", str(mine)]) == 2
    assert "was not written by" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


def chromium() -> str:
    """The chromium binary, installed with apt when missing (skips when that fails)."""
    found = shutil.which("chromium")
    if found is None and shutil.which("apt-get") and os.geteuid() == 0:
        quiet = {"capture_output": True, "timeout": 600, "check": False}
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env, **quiet)
        install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"]
        subprocess.run(install, env=env, **quiet)
        found = shutil.which("chromium")
    if found is None:
        reason = "chromium is not installed and could not be installed with apt"
        print(reason)
        pytest.skip(reason)
    return found


@pytest.mark.slow
def test_a_headless_browser_draws_a_page(tmp_path):
    page = tmp_path / "game.html"
    page.write_text(render_game(entry(scripted_record("onuw", 5))))
    png = tmp_path / "game.png"
    subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        + [f"--screenshot={png}", "--window-size=1200,1600", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    head = Path(png).read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    assert struct.unpack(">II", head[16:24]) == (1200, 1600)
