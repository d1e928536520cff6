"""Fast rule-of-thumb agents for every role, one module per game; no LLM."""

from __future__ import annotations

import importlib

from stackelberg.agents.base import Agent

SCRIPTED: dict[str, str] = {
    "werewolf": "stackelberg.agents.scripted.werewolf:WerewolfScripted",
    "avalon": "stackelberg.agents.scripted.avalon:AvalonScripted",
    "onuw": "stackelberg.agents.scripted.onuw:ONUWScripted",
}


def scripted_agent(game: str) -> Agent:
    module, cls = SCRIPTED[game].split(":")
    return getattr(importlib.import_module(module), cls)()
