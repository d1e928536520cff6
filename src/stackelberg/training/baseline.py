"""The shape of a trained baseline: a model trained without an LLM on scripted self-play of
one game, which one agent kind plays with (rl_ins's tactic policy, ``training/tactics.py``;
the strategist's value model, ``training/strategist.py``; lspo's policy, ``training/lspo.py``).

Each is a ``TrainedBaseline`` whose settings share three keys (``baseline_settings.py``):
one stage body trains, saves and judges all three (``evaluation/trained_baselines.py``) and
one loader table reads them back for tournaments (``evaluation/routes.py``), so a fourth is
one more instance rather than a fourth copy of a stage, a settings block and a loader.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from stackelberg.settings import Settings
from stackelberg.training.baseline_settings import BaselineSettings


@dataclass(frozen=True)
class PairedWins:
    """Outcomes (win 1, draw 0.5, loss 0) of the untrained and of the trained choice on the
    same held-out seeds; ``names`` (untrained, trained) title them in the record and metrics."""

    names: tuple[str, str]
    untrained: list[float]
    trained: list[float]


@dataclass(frozen=True)
class HeldOutPredictions:
    """Per held-out game, over its rows: (the model's accuracy, the base rate's accuracy,
    the model's log loss, the base rate's log loss), for a model that predicts outcomes."""

    games: list[tuple[float, float, float, float]]


@dataclass(frozen=True)
class Trained:
    """A baseline trained and played on its held-out seeds, as plain data: its stage's work
    returns it, persisted, and its finish (maybe in another process) saves and judges it."""

    #: the model, as its baseline's ``save`` reads it
    model: Any
    held_out: PairedWins | HeldOutPredictions
    #: one entry per training step; None for a model fitted at once
    curve: list[dict[str, float]] | None = None
    #: its metrics beside the held-out ones
    counts: dict[str, int] = field(default_factory=dict)


class TrainedBaseline(ABC):
    """A model trained on scripted self-play of ``game``, read by its agent kind on the route
    ``name`` (the kind's ``route_args``); ``name`` is also its stage, its params section, its
    folder under models/ and its folder of MLflow artifacts."""

    name: ClassVar[str]
    game: ClassVar[str]
    settings_class: ClassVar[type[Settings]]
    #: what its stage does ("train", "fit", "solve"): the label of the stage's one work item
    #: and the MLflow prefix of its curve
    verb: ClassVar[str]

    @abstractmethod
    def train(self, settings: BaselineSettings, path_of: Callable[[str], Path]) -> Trained:
        """Train on ``settings``, then play the held-out seeds (``path_of(stage)``: where an
        earlier stage wrote for this game, for a baseline that learns from its output)."""

    @abstractmethod
    def save(self, model: Any, folder: Path, game: str, settings: dict[str, Any]) -> Path:
        """Write ``Trained.model`` into ``folder`` with the game and settings it was trained
        on; the folder."""

    @abstractmethod
    def load(self, folder: str | Path) -> Any:
        """The model saved in ``folder``, as its agent kind plays with it; ConfigError (one
        line) when the folder holds none."""


__all__ = [
    "HeldOutPredictions",
    "PairedWins",
    "Trained",
    "TrainedBaseline",
]
