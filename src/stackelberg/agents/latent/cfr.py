"""Regret matching over information sets, and the solved policy of ``lspo``.

``RegretTables`` holds, per information set, the cumulative regret of each action and
the cumulative strategy; the current strategy is regret matching (positive regrets,
normalised; uniform when none is positive) and the solution is the average strategy.
``training.lspo`` updates them by outcome-sampling Monte Carlo CFR on the abstract game;
``LatentPolicy`` is what an ``lspo`` seat plays: the latent strategies of each role and
the average strategy per information set, saved as a folder (``strategies.json``,
``policy.json``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from stackelberg.agents.latent.clusters import Strategy
from stackelberg.games.base import ConfigError
from stackelberg.io import atomic_writer

STRATEGIES = "strategies.json"
POLICY = "policy.json"


def uniform(n: int) -> list[float]:
    return [1.0 / n] * n


def normalised(values: list[float]) -> list[float]:
    total = sum(values)
    return [v / total for v in values] if total > 0 else uniform(len(values))


@dataclass
class RegretTables:
    """Cumulative regrets and strategies per information set (key -> one value per action)."""

    regret: dict[str, list[float]] = field(default_factory=dict)
    strategy_sum: dict[str, list[float]] = field(default_factory=dict)

    def current(self, key: str, n: int) -> list[float]:
        """Regret matching: the positive regrets normalised (uniform when none is)."""
        regrets = self.regret.get(key)
        return normalised([max(r, 0.0) for r in regrets]) if regrets else uniform(n)

    def add_regret(self, key: str, values: list[float]) -> None:
        old = self.regret.setdefault(key, [0.0] * len(values))
        for i, v in enumerate(values):
            old[i] += v

    def add_strategy(self, key: str, probs: list[float], weight: float = 1.0) -> None:
        old = self.strategy_sum.setdefault(key, [0.0] * len(probs))
        for i, p in enumerate(probs):
            old[i] += weight * p

    def average(self) -> dict[str, list[float]]:
        """The average strategy of every information set reached."""
        return {key: normalised(list(s)) for key, s in sorted(self.strategy_sum.items())}


@dataclass(frozen=True)
class LatentPolicy:
    """The latent strategies of each role and the solved choice among them per
    information set (an information set never reached: the uniform choice)."""

    strategies: dict[str, tuple[Strategy, ...]]
    table: dict[str, list[float]]

    def probabilities(self, role: str, key: str) -> list[float]:
        n = len(self.strategies.get(role, ()))
        probs = self.table.get(key)
        return list(probs) if probs is not None and len(probs) == n else uniform(n)

    def choose(self, role: str, key: str, rng: random.Random) -> Strategy:
        options = self.strategies[role]
        probs = self.probabilities(role, key)
        return options[rng.choices(range(len(options)), weights=probs)[0]]


def save_policy(policy: LatentPolicy, folder: str | Path, **facts: object) -> Path:
    """Write the strategies and the policy table (atomically, file by file) with ``facts``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    strategies = {r: [s.to_dict() for s in ss] for r, ss in sorted(policy.strategies.items())}
    with atomic_writer(folder / STRATEGIES) as fh:
        json.dump(strategies, fh, indent=1)
    with atomic_writer(folder / POLICY) as fh:
        json.dump({"table": policy.table, **facts}, fh, indent=1)
    return folder


def load_policy(folder: str | Path) -> LatentPolicy:
    """The policy saved in ``folder``; ConfigError (one line) when there is none."""
    folder = Path(folder)
    try:
        strategies = json.loads((folder / STRATEGIES).read_text())
        table = json.loads((folder / POLICY).read_text())["table"]
    except FileNotFoundError:
        raise ConfigError(
            f"no lspo policy in {folder} (solve one: python -m flows.run lspo werewolf)"
        ) from None
    return LatentPolicy(
        {r: tuple(Strategy.from_dict(s) for s in ss) for r, ss in strategies.items()}, table
    )


__all__ = ["POLICY", "STRATEGIES", "LatentPolicy", "RegretTables", "load_policy", "save_policy"]
