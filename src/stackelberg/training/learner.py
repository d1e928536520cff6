"""Scripted self-play of the models trained without an LLM (rl_ins's tactic policy, lspo's
policy, the strategist's value model): tables of scripted players with at most one learner
seat, drawn from the seed, and the held-out seeds the trained model is judged on.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stackelberg.agents import Agent, make_agent
from stackelberg.agents.runner import Table, play_tables
from stackelberg.games import make_game
from stackelberg.training.baseline_settings import BaselineSettings

#: held-out seeds start here, apart from the training games' seeds (each training stage
#: keeps its number of training games below this)
EVAL_SEEDS = 1_000_000


def eval_seeds(settings: BaselineSettings) -> range:
    """The ``settings.eval_games`` held-out seeds of a training stage, from ``EVAL_SEEDS``
    plus its ``settings.seed``."""
    start = EVAL_SEEDS + settings.seed
    return range(start, start + settings.eval_games)


def learner_seat(seed: int, n_players: int) -> int:
    """The learner's seat in the game of ``seed``."""
    return random.Random(f"learner:{seed}").randrange(n_players)


def learner_table(
    game_name: str,
    seed: int,
    options: Mapping[str, Any] | None = None,
    learner: Callable[[], Agent] | None = None,
) -> tuple[Table, int | None]:
    """A table on ``seed`` of scripted players and, with ``learner``, the learner's seat
    (``learner_seat``) played by a new ``learner()``; and that seat (None without one)."""
    game = make_game(game_name, dict(options or {}))
    n = game.reset(seed).n_players
    seat = learner_seat(seed, n) if learner is not None else None
    agents = [learner() if i == seat else make_agent("scripted", game_name) for i in range(n)]
    return Table(game, agents, seed), seat


def play_learner_games(
    game_name: str,
    seeds: Iterable[int],
    options: Mapping[str, Any] | None,
    learner: Callable[[], Agent],
) -> list[tuple[int, dict[str, Any], Table]]:
    """The games on ``seeds``, each with a learner seat (``learner_table``), played together:
    per game, the learner's seat, the game record and the table (its agents)."""
    tables, seats = [], []
    for seed in seeds:
        table, seat = learner_table(game_name, seed, options, learner)
        tables.append(table)
        seats.append(seat)
    records = play_tables(tables)
    return list(zip(seats, records, tables, strict=True))


__all__ = ["EVAL_SEEDS", "eval_seeds", "learner_seat", "learner_table", "play_learner_games"]
