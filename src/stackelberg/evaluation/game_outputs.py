"""What the evaluate stage makes of a game's results: its metrics (win rates, the held-out
reward and its details, the training curves, the Refiner-output rates), written with its
plots as ``metrics.json`` and PNGs, so that the stage only picks inputs and paths."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from stackelberg.evaluation.ablation import TERMS_KEY
from stackelberg.evaluation.ground_truth import ground_truth_summary
from stackelberg.evaluation.held_out import held_out_details
from stackelberg.evaluation.metrics import game_metrics, refiner_runs
from stackelberg.evaluation.mlflow_names import mlflow_metrics
from stackelberg.evaluation.plots import plot_game
from stackelberg.evaluation.settings import EvaluateSettings
from stackelberg.evaluation.training_curve import gain_over_baseline, revisit_pairs
from stackelberg.evaluation.transfer import transfer_details
from stackelberg.io import atomic_writer
from stackelberg.persuasion.candidates import dataset_rates
from stackelberg.training.grpo_outputs import train_history_rates
from stackelberg.training.prompt_rewards import step_prompt_reward_map, step_prompt_rewards

METRICS = "metrics.json"


def training_curves(history: Mapping[str, Any], scores: Callable[[], Any]) -> dict:
    """The GRPO run's prompt rewards by step, the same less each prompt's untrained baseline
    (the mean reward of the score stage's Refiner candidates on it: ``scores`` reads that
    dataset), and each revisited prompt's first and last reward: ``game_metrics``' keyword
    arguments (all None, and nothing read, for a run trained before prompt rewards were
    kept)."""
    by_prompt = step_prompt_reward_map(history)
    if by_prompt is None:
        return {"step_rewards": None, "step_gains": None, "revisits": None}
    dataset = scores()
    refined = dataset.filter(dataset["source"] == "refiner")
    means = refined.group_by("instance_id").agg(refined["reward"].mean())
    baselines = {str(k): float(v) for k, v in means.iter_rows()}
    return {
        "step_rewards": step_prompt_rewards(history),
        "step_gains": gain_over_baseline(by_prompt, baselines),
        "revisits": revisit_pairs(by_prompt),
    }


def refiner_outputs(
    candidates: Any, trained: Mapping[str, Any], reward: Mapping[str, Any], records: Sequence
) -> dict[str, dict]:
    """The Refiner-output rates of a game's Refiner runs (``metrics.refiner_runs``): the
    sample stage's ``candidates`` (None if absent), the GRPO run's train history
    (``trained``), the held-out reward's and the tournament ``records``'."""
    sample = dataset_rates(candidates) if candidates is not None else None
    grpo = train_history_rates(trained["history"], trained.get("completions_per_step", 0))
    return refiner_runs(sample, grpo, reward, records)


def evaluation_metrics(
    records: Sequence[dict],
    reward: Mapping[str, Any],
    trained: Mapping[str, Any],
    curves: Mapping[str, Any],
    candidates: Any,
    settings: EvaluateSettings,
    game: str,
    transfer: Mapping[str, Any],
) -> dict:
    """metrics.json of one game: ``game_metrics`` of the tournament ``records`` and the
    held-out ``reward``, with the Refiner-output rates (``candidates``: the sample stage's,
    None if absent; ``trained``: the GRPO run's train history) and the held-out details,
    the joint and views tables (``transfer``: ``transfer_details``' keyword arguments) and
    the ground truth where scored."""
    p = settings
    metrics = game_metrics(
        records,
        reward["before"],
        reward["after"],
        resamples=p.bootstrap,
        seed=p.seed,
        game=game,
        refiner_outputs=refiner_outputs(candidates, trained, reward, records),
        **curves,
    )
    scored = reward.get("scored")
    if scored:
        rows, stats = reward["rows"], (p.bootstrap, p.seed)
        details = held_out_details(rows, scored, p.n, p.best_of, p.examples, *stats)
        details |= transfer_details(scored, p.n, *stats, **transfer)
        if reward.get("optima"):
            optima = reward["optima"]
            details["ground_truth"] = ground_truth_summary(
                rows, scored, optima, p.n, p.best_of, *stats
            )
        metrics["held_out"] = details
    return metrics


def write_evaluation(
    out: Path,
    metrics: Mapping[str, Any],
    trained: Mapping[str, Any],
    curves: Mapping[str, Any],
    reward: Mapping[str, Any],
    terms: str,
) -> None:
    """The plots (``out``/plots) and ``out``/metrics.json (written whole or not at all),
    logged to the active MLflow run with the metrics' MLflow names and the reward ``terms``
    the Refiner trained on (the tag by which the reward ablation finds the run)."""
    import mlflow

    plots = out / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    pngs = plot_game(
        metrics,
        trained["history"],
        curves["step_rewards"],
        reward["before"],
        reward["after"],
        plots,
    )
    with atomic_writer(out / METRICS) as fh:
        json.dump(metrics, fh, indent=1)
    for png in pngs:
        mlflow.log_artifact(str(png), "plots")
    mlflow.log_artifact(str(out / METRICS))
    mlflow.log_metrics(mlflow_metrics(metrics))
    mlflow.set_tag(TERMS_KEY, terms)
