"""Rules engines for the social deduction games (no LLM, seeded, pure)."""

from __future__ import annotations

import importlib
from typing import Any

from stackelberg.games.base import (
    ConfigError,
    Decision,
    Event,
    Game,
    GameError,
    IllegalActionError,
    Observation,
    Player,
)

#: game name -> "module:Class"
GAMES: dict[str, str] = {
    "werewolf": "stackelberg.games.werewolf:Werewolf",
    "avalon": "stackelberg.games.avalon:Avalon",
    "onuw": "stackelberg.games.onuw:ONUW",
}


def game_class(name: str) -> type[Game]:
    if name not in GAMES:
        raise ConfigError(f"unknown game {name!r}; choose one of: {', '.join(GAMES)}")
    module, cls = GAMES[name].split(":")
    return getattr(importlib.import_module(module), cls)


def make_game(name: str, options: dict[str, Any] | None = None) -> Game:
    """A game engine by name, its options validated (unknown keys and bad values raise)."""
    return game_class(name).from_options(options)


__all__ = [
    "GAMES",
    "ConfigError",
    "Decision",
    "Event",
    "Game",
    "GameError",
    "IllegalActionError",
    "Observation",
    "Player",
    "game_class",
    "make_game",
]
