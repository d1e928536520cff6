"""report: reports/summary.md, the paper-style tables of every game, with the plots, and the
reward ablation across the score.terms runs logged to MLflow."""

from __future__ import annotations

from pathlib import Path

from stackelberg.evaluation.ablation import BASELINE, ablation_from_mlflow, ablation_table
from stackelberg.evaluation.report import load_metrics, markdown_report
from stackelberg.evaluation.tournament import parse_condition
from stackelberg.io import atomic_writer

SUMMARY = Path("reports/summary.md")


def plan(ctx) -> list[dict]:
    return [{"label": "summary"}]


def work(ctx, item) -> dict:
    return {}


def finish(ctx, results) -> dict:
    metrics = load_metrics("reports")
    metrics = {g: metrics[g] for g in ctx.params.games if g in metrics}
    plots = [
        str(png.relative_to(SUMMARY.parent))
        for game in metrics
        for png in sorted(Path(f"reports/{game}/plots").glob("*.png"))
    ]
    import mlflow  # the stage runs inside its MLflow run: the tracking URI is set

    # The paper's ablation is on top of ReAct; without react, the first refined condition.
    refined = [c for c in ctx.params.evaluate.conditions if parse_condition(c).refined]
    treated = "refiner+react" if "refiner+react" in refined else (refined or [None])[0]
    extra = []
    if treated:
        base = parse_condition(treated).kind
        ablation = ablation_from_mlflow(
            ctx.params.tracking.experiment, mlflow.get_tracking_uri(), treated, base
        )
        label = {"react": "ReAct", "direct": "Direct"}.get(base, base)
        if ablation:
            extra.append(ablation_table(ablation, {BASELINE: label}))
    with atomic_writer(SUMMARY) as fh:
        fh.write(markdown_report(metrics, plots, extra, title="Stackelberg Speaker: evaluation"))
    return {"games": len(metrics), "ablation_tables": len(extra)}
