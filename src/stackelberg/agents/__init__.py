"""Agents: map what a player knows and the decision it owes to a legal action."""

from __future__ import annotations

from stackelberg.agents.base import Agent, RandomAgent
from stackelberg.agents.scripted import scripted_agent
from stackelberg.games.base import ConfigError

AGENT_KINDS = ("random", "scripted")


def make_agent(kind: str, game: str, **kwargs) -> Agent:
    """An agent by kind for a game; raises ConfigError naming the allowed kinds."""
    if kind == "random":
        return RandomAgent()
    if kind == "scripted":
        return scripted_agent(game)
    raise ConfigError(f"unknown agent {kind!r}; choose one of: {', '.join(AGENT_KINDS)}")


__all__ = ["AGENT_KINDS", "Agent", "RandomAgent", "make_agent"]
