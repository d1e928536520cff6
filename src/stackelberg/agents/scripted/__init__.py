"""Fast rule-of-thumb agents for every role, one module per game named after it; no LLM.

Each game's module names its agent class ``AGENT``, so that the registry of games
(``stackelberg.games``) is the only list of games. What they say is defined once in
``phrases`` (the scripted intent labeler writes with the same sentences).
"""

from __future__ import annotations

import importlib

from stackelberg.agents.base import Agent
from stackelberg.games import check_game_name


def scripted_agent(game: str) -> Agent:
    module = importlib.import_module(f"{__name__}.{check_game_name(game)}")
    return module.AGENT()
