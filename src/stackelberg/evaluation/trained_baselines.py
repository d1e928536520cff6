"""The stage of a trained baseline (``training.baseline``): the tactics, strategist and lspo
stages are this one body over their baseline, in the library because two stages share it.

One work item trains the model and plays its held-out seeds. The finish saves the model into
the stage's folder, writes the held-out judgement beside it (with the training curve, for a
model trained in steps), logs the curve and the folder to MLflow, and returns the metrics.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stackelberg.evaluation.stats import (
    bootstrap_mean_ci,
    held_out_comparison,
    paired_bootstrap_diff,
)
from stackelberg.games import ConfigError
from stackelberg.io import atomic_writer
from stackelberg.training.baseline import HeldOutPredictions, PairedWins, Trained, TrainedBaseline

#: beside a model trained in steps: its curve and its held-out judgement
HISTORY = "history.json"
#: beside a model fitted at once: its held-out judgement
HELD_OUT = "held_out.json"


def prediction_comparison(
    games: Sequence[tuple[float, float, float, float]], seed: int = 0
) -> tuple[dict, dict[str, float]]:
    """A predicting model's accuracy and log loss on held-out games (``HeldOutPredictions``)
    against the base rate's, and its paired gain in log loss: the record and its metrics
    (``held_out_*``), both empty without games."""
    if not games:
        return {}, {}
    accuracy, base_accuracy, loss, base_loss = (list(col) for col in zip(*games, strict=True))
    record = {
        "games": len(games),
        "accuracy": bootstrap_mean_ci(accuracy, seed=seed).to_dict(),
        "base_accuracy": bootstrap_mean_ci(base_accuracy, seed=seed).to_dict(),
        "log_loss": bootstrap_mean_ci(loss, seed=seed).to_dict(),
        "base_log_loss": bootstrap_mean_ci(base_loss, seed=seed).to_dict(),
        # positive: the model's log loss is lower than the base rate's
        "log_loss_gain": paired_bootstrap_diff(loss, base_loss, seed=seed).to_dict(),
    }
    gain = record["log_loss_gain"]
    metrics = {
        "held_out_log_loss": record["log_loss"]["estimate"],
        "held_out_base_log_loss": record["base_log_loss"]["estimate"],
        "held_out_log_loss_gain": gain["estimate"],
        "held_out_log_loss_gain_low": gain["ci"][0],
        "held_out_log_loss_gain_high": gain["ci"][1],
        "held_out_accuracy": record["accuracy"]["estimate"],
        "held_out_base_accuracy": record["base_accuracy"]["estimate"],
    }
    return record, metrics


def held_out_judgement(
    held_out: PairedWins | HeldOutPredictions, seed: int
) -> tuple[dict, dict[str, float]]:
    """The record and the metrics of a baseline's held-out games: the paired win rates of
    its untrained and trained choice, or its predictions against the base rate."""
    if isinstance(held_out, PairedWins):
        return held_out_comparison(held_out.names, held_out.untrained, held_out.trained, seed)
    return prediction_comparison(held_out.games, seed)


@dataclass(frozen=True)
class BaselineStage:
    """The ``plan``, ``work`` and ``finish`` of ``baseline``'s stage, and its ``games``."""

    baseline: TrainedBaseline

    @property
    def games(self) -> tuple[str, ...]:
        return (self.baseline.game,)

    def plan(self, ctx: Any) -> list[dict]:
        if ctx.game not in self.games:
            raise ConfigError(
                f"{self.baseline.name} runs for {self.baseline.game} only, not {ctx.game}"
            )
        return [{"label": self.baseline.verb}]

    def work(self, ctx: Any, item: dict) -> Trained:
        return self.baseline.train(ctx.section, ctx.path)

    def finish(self, ctx: Any, results: list[Trained]) -> dict[str, float]:
        import mlflow

        trained, settings, baseline = results[0], ctx.section, self.baseline
        out = baseline.save(trained.model, ctx.path(), ctx.game, settings.model_dump(mode="json"))
        record, metrics = held_out_judgement(trained.held_out, settings.seed)
        if trained.curve is not None:
            record = {"history": trained.curve, "held_out": record}
        with atomic_writer(out / (HELD_OUT if trained.curve is None else HISTORY)) as fh:
            json.dump(record, fh, indent=1)
        for step, point in enumerate(trained.curve or (), 1):
            curve = {f"{baseline.verb}/{k}": float(v) for k, v in point.items()}
            mlflow.log_metrics(curve, step=step)
        mlflow.log_artifacts(str(out), baseline.name)
        return trained.counts | metrics


__all__ = [
    "HELD_OUT",
    "HISTORY",
    "BaselineStage",
    "held_out_judgement",
    "prediction_comparison",
]
