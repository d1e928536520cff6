"""The prose LLM players read about a game, one module per game named after it.

A game's module states ``RULES`` (the rules at the default options) and ``RULE_CHANGES``:
for an option whose value changes a stated rule, the words replaced and their replacement;
and ``event_line``, the words of the events its engine logs (``words``: those every game
shares). Engines log facts only; what a player is told lives here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from stackelberg.agents.prompts.words import speech_line
from stackelberg.games.base import Event, Game

#: the event type of a speech, in every game
SPEECH = "speech"


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


def describe_event(game: Game, event: Event, viewer: int) -> str | None:
    """One line for an event as ``viewer`` reads it (-1: the game master, who is told every
    event), or None for an event told in no words: a speech reads the same in every game,
    and the game's module words the rest (``event_line``). Whether ``viewer`` may see the
    event at all is the caller's check (``Event.visible``)."""
    if event.type == SPEECH:
        return speech_line(event.player, event.data["text"])
    return prompts_of(game.name).event_line(game, event, viewer)


__all__ = ["SPEECH", "describe_event", "prompts_of", "rules_text"]
