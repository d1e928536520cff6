"""The strategist's value model, fitted on scripted Avalon self-play (no LLM).

Each game is played by scripted players on every seat. At the start of every discussion
(every team cycle) each seat's features are taken from that seat's own bookkeeping
(``lookahead.value.features``), labelled with whether its camp went on to win; one logistic
regression per camp is fitted on the rows of ``games`` games, and judged on ``eval_games``
other seeds against the camp's base rate (always predicting the camp's more frequent
outcome, and its win rate as the probability), the chance level of this prediction.
``STRATEGIST`` is this fit as a ``TrainedBaseline`` (its stage, its file, its loader).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from stackelberg.agents.lookahead.value import (
    CAMPS,
    ValueModel,
    features,
    fit_value,
    load_value,
    save_value,
)
from stackelberg.games.base import SPEAK
from stackelberg.settings import Settings
from stackelberg.training.baseline import HeldOutPredictions, Trained, TrainedBaseline
from stackelberg.training.baseline_settings import EvalGames, GameOptions, Seed
from stackelberg.training.learner import EVAL_SEEDS, eval_seeds, learner_table

#: the game the value model is for (``strategist`` plays Avalon only)
GAME = "avalon"

Row = tuple[list[float], str, bool]


class StrategistSettings(Settings):
    """The ``strategist`` section of params.yaml: how its value model is fitted."""

    games: int = Field(
        1500, ge=1, lt=EVAL_SEEDS, description="scripted self-play games the value is fitted on"
    )
    eval_games: EvalGames = 500
    ridge: float = Field(1.0, ge=0, description="L2 penalty of the logistic regressions")
    seed: Seed = 0
    options: GameOptions


def play_rows(seeds: Sequence[int], options: dict[str, Any] | None = None) -> list[list[Row]]:
    """Scripted games on ``seeds``; per game, a row per seat at the start of each discussion."""
    games = []
    for seed in seeds:
        table, _ = learner_table(GAME, seed, options)  # no learner: every seat scripted
        table.start()
        game, agents = table.game, table.agents
        states, cycle = [], None
        while (decision := game.decision()) is not None:
            if decision.kind == SPEAK and (game.quest, game.attempt) != cycle:
                cycle = (game.quest, game.attempt)
                for agent in agents:
                    agent.observe()
                    states.append((features(agent), agent.team))
            game.step(agents[decision.player].act(decision))
        winner = game.result()["winner"]
        games.append([(v, camp, camp == winner) for v, camp in states])
    return games


def base_rates(rows: Sequence[Row]) -> dict[str, float]:
    """Each camp's share of won rows (0.5 for a camp without rows)."""
    out = {}
    for camp in CAMPS:
        won = [w for _, c, w in rows if c == camp]
        out[camp] = sum(won) / len(won) if won else 0.5
    return out


def judge(model: ValueModel, rates: dict[str, float], games: Sequence[Sequence[Row]]):
    """Per held-out game: (the model's accuracy, the base rate's accuracy, the model's log
    loss, the base rate's log loss) over its rows."""

    def loss(p: float, won: bool) -> float:
        p = min(max(p, 1e-6), 1 - 1e-6)
        return -math.log(p if won else 1 - p)

    out = []
    for rows in games:
        if not rows:
            continue
        scores = [0.0, 0.0, 0.0, 0.0]
        for vector, camp, won in rows:
            p, base = model.value(vector, camp), rates[camp]
            scores[0] += (p > 0.5) == won
            scores[1] += (base > 0.5) == won
            scores[2] += loss(p, won)
            scores[3] += loss(base, won)
        out.append(tuple(s / len(rows) for s in scores))
    return out


class Strategist(TrainedBaseline):
    """The value model as a trained baseline: fitted at once (no curve), then judged on the
    held-out games against the camp's base rate; saved as ``lookahead.value`` saves it, with
    the base rates."""

    name = "strategist"
    game = GAME
    settings_class = StrategistSettings
    verb = "fit"

    def train(self, settings: StrategistSettings, path_of: Callable[[str], Path]) -> Trained:
        model, rates = fit_strategist_value(settings)
        held_out = judge(model, rates, play_rows(eval_seeds(settings), settings.options))
        weights = {camp: w.tolist() for camp, w in model.weights.items()}
        return Trained({"weights": weights, "rates": rates}, HeldOutPredictions(held_out))

    def save(self, model: Any, folder: Path, game: str, settings: dict[str, Any]) -> Path:
        value = ValueModel(model["weights"])
        return save_value(value, folder, game=game, base_rates=model["rates"], settings=settings)

    def load(self, folder: str | Path) -> ValueModel:
        return load_value(folder)


#: the strategist's value model, the trained baseline of the strategist stage
STRATEGIST = Strategist()


def fit_strategist_value(settings: StrategistSettings) -> tuple[ValueModel, dict[str, float]]:
    """The fitted model and each camp's base rate on the training rows."""
    first = settings.seed
    rows = [r for g in play_rows(range(first, first + settings.games), settings.options) for r in g]
    return fit_value(rows, settings.ridge), base_rates(rows)


__all__ = [
    "EVAL_SEEDS",
    "GAME",
    "STRATEGIST",
    "Strategist",
    "StrategistSettings",
    "base_rates",
    "eval_seeds",
    "fit_strategist_value",
    "judge",
    "play_rows",
]
