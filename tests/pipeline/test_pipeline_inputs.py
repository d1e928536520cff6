"""A ``games`` list that leaves out a game another stage reads is refused before Prefect
starts, in one line; the stages a user names are checked alone."""

from __future__ import annotations

import sys

import pytest
from project import ROOT, make_project, sh

pytestmark = pytest.mark.slow  # a git + DVC project


@pytest.fixture(scope="module")
def onuw_only(tmp_path_factory):
    root = tmp_path_factory.mktemp("onuw_only")
    params = (ROOT / "tests/pipeline/micro_params.yaml").read_text()
    params = params.replace("games: [werewolf, avalon, onuw, sotopia]", "games: [onuw]")
    assert "games: [onuw]" in params
    params = params.replace("joint: [werewolf, avalon]", "joint: []")  # trains on other games
    assert "joint: []" in params
    env = make_project(root, params, {"PREFECT_API_URL": "http://0.0.0.0:9/api"})
    return root, env


def test_a_game_list_without_a_game_another_stage_reads_is_refused_in_one_line(onuw_only):
    root, env = onuw_only
    proc = sh([sys.executable, "-m", "flows.pipeline"], root, env, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith(
        "pipeline: error: lspo@werewolf reads data/selfplay/werewolf.parquet"
    )
    assert "games: [onuw]" in lines[0]
    assert not (root / "data").exists()  # refused before any stage ran


def test_named_stages_are_checked_alone(onuw_only, monkeypatch):
    from flows.pipeline import stage_order, unmade_inputs

    root, _ = onuw_only
    monkeypatch.chdir(root)
    monkeypatch.delenv("STACKELBERG_PARAMS", raising=False)
    assert unmade_inputs(stage_order(["select@onuw"])) == []  # its self-play runs first
    assert ("report", "reports/werewolf/metrics.json") in unmade_inputs(stage_order())
