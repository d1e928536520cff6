"""report: reports/summary.md, the paper-style tables of every game, with the plots."""

from __future__ import annotations

from pathlib import Path

from stackelberg.evaluation.report import load_metrics, markdown_report
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
    with atomic_writer(SUMMARY) as fh:
        fh.write(markdown_report(metrics, plots, title="Stackelberg Speaker: evaluation"))
    return {"games": len(metrics)}


if __name__ == "__main__":
    from stages._cli import stage_main

    stage_main("report", per_game=False)
