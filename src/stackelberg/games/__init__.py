"""Rules engines for the social deduction games and Sotopia (no LLM, seeded, pure).

The registry: ``ENGINES`` lists the engines in the order reports show the games, and every
other list of games (params, command lines, tournaments, tables) derives from it. Adding a
game is one engine module with its ``GameSpec`` and one entry here.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator

from stackelberg.games.avalon import Avalon
from stackelberg.games.base import (
    ConfigError,
    Decision,
    Event,
    Game,
    GameError,
    GameSpec,
    IllegalActionError,
    Observation,
    Player,
)
from stackelberg.games.onuw import ONUW
from stackelberg.games.sotopia import Sotopia
from stackelberg.games.werewolf import Werewolf

ENGINES: tuple[type[Game], ...] = (Werewolf, Avalon, ONUW, Sotopia)
#: game name -> its facts, in the registry's order
GAMES: dict[str, GameSpec] = {engine.spec.name: engine.spec for engine in ENGINES}
GAME_NAMES: tuple[str, ...] = tuple(GAMES)
_ENGINE_OF: dict[str, type[Game]] = {engine.spec.name: engine for engine in ENGINES}


def check_game_name(name: str) -> str:
    """``name`` if it is a registered game, else a one-line ConfigError listing the games."""
    if name not in GAMES:
        raise ConfigError(f"unknown game {name!r}; choose one of: {', '.join(GAME_NAMES)}")
    return name


#: a settings field that holds a game's name, checked against the registry
GameName = Annotated[str, AfterValidator(check_game_name)]


def game_spec(name: str) -> GameSpec:
    return GAMES[check_game_name(name)]


def game_class(name: str) -> type[Game]:
    return _ENGINE_OF[check_game_name(name)]


def make_game(name: str, options: dict[str, Any] | None = None) -> Game:
    """A game engine by name, its options validated (unknown keys and bad values raise)."""
    return game_class(name).from_options(options)


__all__ = [
    "ENGINES",
    "GAMES",
    "GAME_NAMES",
    "ConfigError",
    "Decision",
    "Event",
    "Game",
    "GameError",
    "GameSpec",
    "IllegalActionError",
    "Observation",
    "Player",
    "check_game_name",
    "game_class",
    "game_spec",
    "make_game",
]
