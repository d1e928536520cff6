"""The prose LLM players read about a game, one module per game named after it.

A game's module states ``RULES`` (the rules at the default options) and ``RULE_CHANGES``:
for an option whose value changes a stated rule, the words replaced and their replacement.
Engines hold only the rules logic; what a player is told lives here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from stackelberg.games.base import Game


def prompts_of(game_name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{game_name}")


def rules_text(game: Game) -> str:
    """The rules of ``game`` as stated to players, adapted to its options."""
    prompts = prompts_of(game.name)
    text = prompts.RULES
    for option, value, old, new in prompts.RULE_CHANGES:
        if getattr(game.config, option) == value:
            assert old in text, old
            text = text.replace(old, new)
    return text


__all__ = ["prompts_of", "rules_text"]
