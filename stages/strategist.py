"""strategist: fit the strategist's value model (logistic regressions on scripted Avalon
self-play), then judge it on held-out seeds against the camp's base rate.

One work item. Writes models/strategist/avalon (the model and, in held_out.json, the
held-out comparison); logs the comparison to MLflow. Avalon only.
"""

from __future__ import annotations

import json

from stackelberg.agents.lookahead.value import ValueModel, save_value
from stackelberg.evaluation.stats import bootstrap_mean_ci, paired_bootstrap_diff
from stackelberg.games import ConfigError
from stackelberg.io import atomic_writer
from stackelberg.training.strategist import GAME, eval_seeds, fit_strategist_value, judge, play_rows

#: the games this stage runs for (flows/run.py refuses the others)
GAMES = (GAME,)
#: the held-out comparison, beside the model
HELD_OUT = "held_out.json"


def plan(ctx) -> list[dict]:
    if ctx.game not in GAMES:
        raise ConfigError(f"strategist: it plays {GAME} only; no value model for {ctx.game}")
    return [{"label": "fit"}]


def work(ctx, item) -> dict:
    settings = ctx.section
    model, rates = fit_strategist_value(settings)
    held_out = judge(model, rates, play_rows(eval_seeds(settings), settings.options))
    weights = {camp: w.tolist() for camp, w in model.weights.items()}
    return {"weights": weights, "rates": rates, "held_out": held_out}


def finish(ctx, results) -> dict:
    import mlflow

    res = results[0]
    settings = ctx.section
    out = save_value(
        ValueModel(res["weights"]),
        ctx.path(),
        game=ctx.game,
        base_rates=res["rates"],
        settings=settings.model_dump(mode="json"),
    )
    games = res["held_out"]
    comparison = {}
    if games:
        accuracy, base_accuracy, loss, base_loss = (list(col) for col in zip(*games, strict=True))
        comparison = {
            "games": len(games),
            "accuracy": bootstrap_mean_ci(accuracy, seed=settings.seed).to_dict(),
            "base_accuracy": bootstrap_mean_ci(base_accuracy, seed=settings.seed).to_dict(),
            "log_loss": bootstrap_mean_ci(loss, seed=settings.seed).to_dict(),
            "base_log_loss": bootstrap_mean_ci(base_loss, seed=settings.seed).to_dict(),
            # positive: the model's log loss is lower than the base rate's
            "log_loss_gain": paired_bootstrap_diff(loss, base_loss, seed=settings.seed).to_dict(),
        }
    with atomic_writer(out / HELD_OUT) as fh:
        json.dump(comparison, fh, indent=1)
    mlflow.log_artifacts(str(out), "strategist")
    metrics = {}
    if comparison:
        gain = comparison["log_loss_gain"]
        metrics = {
            "held_out_log_loss": comparison["log_loss"]["estimate"],
            "held_out_base_log_loss": comparison["base_log_loss"]["estimate"],
            "held_out_log_loss_gain": gain["estimate"],
            "held_out_log_loss_gain_low": gain["ci"][0],
            "held_out_log_loss_gain_high": gain["ci"][1],
            "held_out_accuracy": comparison["accuracy"]["estimate"],
            "held_out_base_accuracy": comparison["base_accuracy"]["estimate"],
        }
    return metrics
