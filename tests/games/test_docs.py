"""docs/games.md states every option of every game, with its default and its values: the
check runs over the registry, so a new option or game without its documentation fails."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from stackelberg.games import GAME_NAMES, GAMES
from stackelberg.games.base import RECORD_IF_SET

DOC = Path(__file__).resolve().parents[2] / "docs" / "games.md"


def section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def option_rows(title: str) -> dict[str, str]:
    rows = [line for line in section(title).splitlines() if line.startswith("| `")]
    return {row.split("`")[1]: row for row in rows}


def written(value: typing.Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.mark.parametrize("name", GAME_NAMES)
def test_every_option_is_documented_with_its_default_and_values(name):
    spec = GAMES[name]
    rows = option_rows(spec.title)
    fields = spec.options.model_fields
    assert list(rows) == list(fields), "one row per option, in the declaration order"
    for option, field in fields.items():
        cells = [c.strip() for c in rows[option].strip("|").split("|")]
        _, kind, default, values, what = cells
        assert what
        if field.default is not None and option != "roles":
            assert default == f"`{written(field.default)}`", option
        if typing.get_origin(field.annotation) is typing.Literal:
            assert values == ", ".join(f"`{v}`" for v in typing.get_args(field.annotation))
        assert ("(release)" in kind) == (RECORD_IF_SET in field.metadata), option


def test_the_games_table_lists_the_registry():
    rows = [line for line in DOC.read_text().splitlines() if line.startswith("| `")]
    listed = [row.split("`")[1] for row in rows if row.split("`")[1] in GAMES]
    assert listed == list(GAME_NAMES)
    for spec in GAMES.values():
        row = next(r for r in rows if r.startswith(f"| `{spec.name}` |"))
        assert f"| {spec.title} |" in row
        assert ", ".join(spec.camps) in row and row.endswith(f"| {', '.join(spec.tested_camps)} |")
