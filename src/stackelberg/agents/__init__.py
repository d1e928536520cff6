"""Agents: map what a player knows and the decision it owes to a legal action."""

from __future__ import annotations

from typing import Any

from stackelberg.agents.base import Agent, RandomAgent
from stackelberg.agents.scripted import scripted_agent
from stackelberg.games.base import ConfigError

AGENT_KINDS = ("random", "scripted", "direct", "react")
LLM_AGENT_KINDS = ("direct", "react")


def make_agent(kind: str, game: str, llm: Any = None, **options: Any) -> Agent:
    """An agent by kind for a game; LLM kinds need a backend. Raises ConfigError on bad names."""
    if kind == "random":
        return RandomAgent()
    if kind == "scripted":
        return scripted_agent(game)
    if kind in LLM_AGENT_KINDS:
        if llm is None:
            raise ConfigError(f"agent {kind!r} needs an LLM backend (e.g. --backend local)")
        from stackelberg.agents.llm_agents import LLMAgent, ReactAgent

        return (LLMAgent if kind == "direct" else ReactAgent)(llm, **options)
    raise ConfigError(f"unknown agent {kind!r}; choose one of: {', '.join(AGENT_KINDS)}")


def seat_agents(spec: str, n_players: int) -> list[str]:
    """One agent kind per seat from ``spec``: one kind for every seat, or a comma-separated
    kind per seat."""
    kinds = [k.strip() for k in spec.split(",") if k.strip()]
    for kind in kinds:  # an unknown name is the mistake to report, before any count
        if kind not in AGENT_KINDS:
            raise ConfigError(f"unknown agent {kind!r}; choose one of: {', '.join(AGENT_KINDS)}")
    if len(kinds) == 1:
        return kinds * n_players
    if len(kinds) != n_players:
        raise ConfigError(
            f"agents: {len(kinds)} kinds listed but the game has {n_players} players; "
            "give one kind for all seats or one per seat"
        )
    return kinds


__all__ = ["AGENT_KINDS", "LLM_AGENT_KINDS", "Agent", "RandomAgent", "make_agent", "seat_agents"]
