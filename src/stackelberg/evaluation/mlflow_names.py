"""metrics.json flattened to MLflow metric names, the ones ``ablation_from_mlflow`` reads back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackelberg.evaluation.ground_truth import ground_truth_mlflow
from stackelberg.evaluation.held_out import held_out_mlflow
from stackelberg.evaluation.tournament import BEST_OF_COUNTS, CHOICE_COUNTS, SPEECH_COUNTS
from stackelberg.evaluation.transfer import transfer_mlflow


def metric_key(name: str) -> str:
    """A condition, camp or role as an MLflow metric-name part (no '+' allowed there)."""
    return name.replace("+", "-")


def mlflow_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """metrics.json flattened to MLflow metric names ``stat/game/condition/scope``.

    ``stat`` is winrate, wins or games; scope is ``overall``, ``camp.X`` or ``role.X``;
    the LLM seats' counts ``choices/game/condition/KEY`` (``CHOICE_COUNTS``) and
    ``speeches/game/condition/KEY`` (``SPEECH_COUNTS``), a best-of speaker's
    ``best_of_calls/game/condition/KEY`` (``BEST_OF_COUNTS``);
    paired tests give ``paired/game/base_vs_treated/{diff,p_value}`` (all camps), rewards
    ``reward/game/{before,after,diff}``, Refiner outputs
    ``refiner/game/run/{ended_rate,parse_rate}``, the training reward's rise
    held-out details ``held_out/game/...`` (``held_out.held_out_mlflow``; the joint Refiner's
    and both views': ``transfer.transfer_mlflow``; the exact follower's:
    ``ground_truth.ground_truth_mlflow``),
    ``training/game/{reward_rise,reward_rise_low,reward_rise_high,reward_first,reward_last,
    steps,reward_gain,reward_gain_low,reward_gain_high,reward_revisit,reward_revisit_low,
    reward_revisit_high}``. ``ablation_from_mlflow`` reads these names.
    """
    game = metrics["game"]
    out: dict[str, float] = {}
    for condition, rates in metrics["conditions"].items():
        scopes = {"overall": rates["overall"]}
        scopes |= {f"camp.{k}": v for k, v in rates["camps"].items()}
        scopes |= {f"role.{k}": v for k, v in rates["roles"].items()}
        for scope, r in scopes.items():
            stem = f"{game}/{metric_key(condition)}/{metric_key(scope)}"
            out[f"wins/{stem}"] = float(r["wins"])
            out[f"games/{stem}"] = float(r["n"])
            if r["rate"] is not None:
                out[f"winrate/{stem}"] = float(r["rate"])
    blocks = (
        ("choices", CHOICE_COUNTS),
        ("speeches", SPEECH_COUNTS),
        ("best_of_calls", BEST_OF_COUNTS),
    )
    for block, keys in blocks:
        for condition, counts in (metrics.get(block) or {}).items():
            for key in keys:
                out[f"{block}/{game}/{metric_key(condition)}/{key}"] = float(counts[key])
    for t in metrics["paired"]:
        if t["camp"] == "all" and t["n"]:
            stem = f"paired/{game}/{metric_key(t['base'])}_vs_{metric_key(t['treated'])}"
            out[f"{stem}/diff"] = float(t["diff"])
            out[f"{stem}/p_value"] = float(t["p_value"])
    scores = metrics.get("scores") or {}
    for condition, dims in (scores.get("conditions") or {}).items():
        for dim, part in dims.items():
            if isinstance(part, dict) and part["n"]:
                out[f"score/{game}/{metric_key(condition)}/{dim}"] = float(part["estimate"])
    for t in scores.get("paired") or ():
        if t["n"]:
            stem = f"paired/{game}/{metric_key(t['base'])}_vs_{metric_key(t['treated'])}"
            out[f"{stem}/{t['dimension']}_diff"] = float(t["diff"])
    if metrics.get("reward"):
        for part in ("before", "after", "diff"):
            out[f"reward/{game}/{part}"] = float(metrics["reward"][part]["estimate"])
    for run, rates in (metrics.get("refiner_outputs") or {}).items():
        for key in ("ended_rate", "parse_rate"):
            if rates.get(key) is not None:
                out[f"refiner/{game}/{run}/{key}"] = float(rates[key])
    rise = (metrics.get("training") or {}).get("reward_rise") or {}
    if rise.get("estimate") is not None:
        stem = f"training/{game}"
        out[f"{stem}/reward_rise"] = float(rise["estimate"])
        out[f"{stem}/reward_rise_low"], out[f"{stem}/reward_rise_high"] = map(float, rise["ci"])
        out[f"{stem}/reward_first"] = float(rise["first"])
        out[f"{stem}/reward_last"] = float(rise["last"])
        out[f"{stem}/steps"] = float(rise["steps"])
    for key in ("reward_gain", "reward_revisit"):
        entry = (metrics.get("training") or {}).get(key) or {}
        if entry.get("estimate") is not None:
            stem = f"training/{game}/{key}"
            out[stem] = float(entry["estimate"])
            out[f"{stem}_low"], out[f"{stem}_high"] = map(float, entry["ci"])
    held_out = metrics.get("held_out") or {}
    out |= held_out_mlflow(game, held_out)
    if held_out.get("ground_truth"):
        out |= ground_truth_mlflow(f"held_out/{game}", held_out["ground_truth"])
    out |= transfer_mlflow(game, metrics.get("held_out") or {})
    return out


__all__ = ["metric_key", "mlflow_metrics"]
