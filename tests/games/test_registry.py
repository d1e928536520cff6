"""The registry of games is the one list of games: every game's facts come from its
``GameSpec``, and no other code states a list of games."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from stackelberg.agents import make_agent
from stackelberg.agents.prompts import prompts_of
from stackelberg.agents.runner import Table, play_tables
from stackelberg.games import ENGINES, GAME_NAMES, GAMES, ConfigError, game_class, make_game

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("src", "stages", "flows")


def game_lists(path: Path) -> list[str]:
    """Places in ``path`` that spell out two or more game names in one literal collection
    (list, tuple, set, dict, ``Literal[...]``): a list of games that is not the registry."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [*node.keys, *node.values]
        else:
            continue
        names = {i.value for i in items if isinstance(i, ast.Constant) and i.value in GAMES}
        if len(names) >= 2:
            found.append(f"{path}:{node.lineno} {sorted(names)}")
    return found


def test_no_other_list_of_games_in_the_code():
    files = [p for top in SCANNED for p in sorted((ROOT / top).rglob("*.py"))]
    found = [hit for p in files for hit in game_lists(p)]
    assert not found, "lists of games outside the registry (derive them from it): " + "; ".join(
        found
    )


def test_the_scan_finds_a_list_of_games(tmp_path):
    sample = tmp_path / "games.py"
    sample.write_text(
        'ORDER = ("werewolf", "avalon")\nKIND = Literal["onuw", "avalon"]\nONE = ["onuw"]\n'
    )
    assert len(game_lists(sample)) == 2


def test_the_registry_lists_each_engine_once_in_order():
    assert GAME_NAMES == tuple(engine.spec.name for engine in ENGINES)
    assert len(set(GAME_NAMES)) == len(GAME_NAMES)
    for engine in ENGINES:
        assert game_class(engine.spec.name) is engine
        assert (engine.name, engine.Config) == (engine.spec.name, engine.spec.options)


def test_an_unknown_game_is_one_line_naming_the_games():
    games = ", ".join(GAME_NAMES)
    with pytest.raises(ConfigError, match=rf"^unknown game 'chess'; choose one of: {games}$"):
        make_game("chess")


@pytest.mark.parametrize("name", GAME_NAMES)
def test_the_tested_camps_are_the_teams_of_the_default_deal(name):
    """``tested_camps`` are the teams players hold at the default options, within ``camps``."""
    spec = GAMES[name]
    teams = set()
    for seed in range(30):
        game = make_game(name).reset(seed)
        teams |= {p.team for p in game.players}
    assert teams == set(spec.tested_camps) <= set(spec.camps)
    assert spec.title


@pytest.mark.parametrize("name", GAME_NAMES)
def test_every_game_has_a_scripted_agent_and_prompts(name):
    scripted = importlib.import_module(f"stackelberg.agents.scripted.{name}")
    assert isinstance(make_agent("scripted", name), scripted.AGENT)
    assert prompts_of(name).RULES
    seats = make_game(name).reset(0).n_players
    table = Table(make_game(name), [make_agent("scripted", name) for _ in range(seats)], 0)
    (record,) = play_tables([table], None)
    assert record["game"] == name


def test_the_registry_is_cheap_to_import():
    """params, command lines and DVC checks read the registry: it must not load torch."""
    code = "import sys, stackelberg.games, stackelberg.params; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
