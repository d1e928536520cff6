"""Agents: map what a player knows and the decision it owes to a legal action."""

from __future__ import annotations

import importlib
from typing import Any

from stackelberg.agents.base import Agent, RandomAgent
from stackelberg.agents.scripted import OPINION_GAMES, SAMPLED_KIND, sampled_agent, scripted_agent
from stackelberg.games.base import ConfigError

#: LLM agent kinds -> (module in stackelberg.agents, class); imported when first built
LLM_AGENTS = {
    "direct": ("llm_agents", "LLMAgent"),
    "react": ("llm_agents", "ReactAgent"),
    "recon": ("baselines", "ReconAgent"),
    "lasi": ("baselines", "LasiAgent"),
    "belief": ("baselines", "BeliefAgent"),
    "llm_ins": ("baselines", "LLMInstructedAgent"),
    "rl_ins": ("rl_ins", "RLInstructedAgent"),
    "metamind": ("baselines", "MetaMindAgent"),
    "strategist": ("strategist", "StrategistAgent"),
    "lspo": ("lspo", "LSPOAgent"),
}
LLM_AGENT_KINDS = tuple(LLM_AGENTS)
AGENT_KINDS = ("random", "scripted", SAMPLED_KIND, *LLM_AGENT_KINDS)


def llm_agent_class(kind: str) -> type[Agent]:
    module, name = LLM_AGENTS[kind]
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def check_kind(kind: str, game: str) -> None:
    """Refuse (ConfigError, one line) an unknown kind, or a kind that does not play ``game``
    (an agent class names the games it plays in ``games``; None: every game)."""
    if kind not in AGENT_KINDS:
        raise ConfigError(f"unknown agent {kind!r}; choose one of: {', '.join(AGENT_KINDS)}")
    if kind == SAMPLED_KIND and game not in OPINION_GAMES:
        raise ConfigError(f"agent {kind!r} plays {', '.join(OPINION_GAMES)} only, not {game}")
    games = getattr(llm_agent_class(kind), "games", None) if kind in LLM_AGENTS else None
    if games is not None and game not in games:
        raise ConfigError(f"agent {kind!r} plays {', '.join(games)} only, not {game}")


def make_agent(kind: str, game: str, llm: Any = None, **options: Any) -> Agent:
    """An agent by kind for a game; LLM kinds need a backend. Raises ConfigError on bad names."""
    if kind == "random":
        return RandomAgent()
    if kind == "scripted":
        return scripted_agent(game)
    if kind == SAMPLED_KIND:
        check_kind(kind, game)
        return sampled_agent(game)
    if kind in LLM_AGENT_KINDS:
        check_kind(kind, game)
        cls = llm_agent_class(kind)
        if llm is None and cls.needs_llm(options):
            raise ConfigError(f"agent {kind!r} needs an LLM backend (e.g. --backend local)")
        return cls(llm, **options)
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


__all__ = [
    "AGENT_KINDS",
    "LLM_AGENTS",
    "LLM_AGENT_KINDS",
    "check_kind",
    "llm_agent_class",
    "Agent",
    "RandomAgent",
    "make_agent",
    "seat_agents",
]
