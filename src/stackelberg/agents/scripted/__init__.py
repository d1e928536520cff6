"""Fast rule-of-thumb agents for every role, one module per game named after it; no LLM.

Each game's module names its agent class ``AGENT``, so that the registry of games
(``stackelberg.games``) is the only list of games. What they say is defined once in
``phrases`` (the scripted intent labeler writes with the same sentences).
"""

from __future__ import annotations

import copy
import importlib
import random
from collections.abc import Sequence
from typing import Any

from stackelberg.agents.base import Agent
from stackelberg.agents.scripted.opinion import OPINION_TEMPERATURE, Listening, Sayings
from stackelberg.games import GAME_NAMES, check_game_name
from stackelberg.games.base import Event, Game, GameError

#: the kind of a scripted player that says its role's claims and then one sentence drawn
#: from its opinion (``opinion``): the follower the exact Measurer models
SAMPLED_KIND = "scripted_sampled"


def _module(game: str) -> Any:
    return importlib.import_module(f"{__name__}.{check_game_name(game)}")


#: the games whose scripted players have an opinion to draw from (their modules' ``SAYINGS``)
OPINION_GAMES = tuple(g for g in GAME_NAMES if hasattr(_module(g), "SAYINGS"))


def sayings(game: str) -> Sayings:
    """What a listener of ``game`` says to vouch for (+1) or accuse (-1) one player."""
    return _module(game).SAYINGS


def scripted_agent(game: str, **options: Any) -> Agent:
    """The scripted agent of ``game``; ``options`` (``speech``, ``temperature``) for the
    games whose players speak by opinion (``OPINION_GAMES``)."""
    return _module(game).AGENT(**options)


def sampled_agent(game: str, temperature: float = OPINION_TEMPERATURE) -> Agent:
    """A scripted player of ``game`` that speaks by its opinion (``SAMPLED_KIND``)."""
    if check_game_name(game) not in OPINION_GAMES:
        raise GameError(
            f"{game}: scripted players speak by opinion in {', '.join(OPINION_GAMES)} only"
        )
    agent = scripted_agent(game, speech="sampled", temperature=temperature)
    agent.kind = SAMPLED_KIND
    return agent


def listener_after(
    game: Game, follower: int, events: Sequence[Event], temperature: float = OPINION_TEMPERATURE
) -> Listening:
    """The scripted player in ``follower``'s seat having heard ``events`` (a game's log up
    to some point, e.g. a record's events and a candidate speech): what it would say next
    is its ``opinion()``. Its choices would be its own; it only listens here."""
    heard = copy.copy(game)
    heard.events = list(events)
    agent = sampled_agent(game.name, temperature)
    agent.setup(heard, follower, random.Random(0))
    agent.listen()
    return agent
