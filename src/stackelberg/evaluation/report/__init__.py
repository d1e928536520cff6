"""The evaluation report: every table of metrics.json in reading order, as markdown or text.

The markdown summary (``reports/summary.md``) and ``stackelberg report`` show the very same
tables, one job a module: the table model and its cells (``tables``), the tournaments' win
rates or scores (``tournament``), the Measurer's reward and the held-out evidence beyond it
(``reward``; ``evaluation.held_out``), the exact follower's (``ground_truth``), the
followers' checks (``followers``) and transfer
(``transfer``). A cell is "rate [low, high]" (Wilson 95%) with the number of games; a
difference whose interval includes 0 says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stackelberg.evaluation.report.followers import behaviour_table, ensemble_table
from stackelberg.evaluation.report.ground_truth import (
    optimum_examples_table,
    optimum_table,
    validity_table,
)
from stackelberg.evaluation.report.reward import (
    REFINER_RUN_NAMES,
    TRAINING_MEASURES,
    ablation_reward_table,
    best_of_calls_table,
    best_of_table,
    examples_table,
    learned_table,
    refiner_outputs_table,
    reward_table,
    training_table,
    unseen_follower_table,
)
from stackelberg.evaluation.report.tables import (
    TextTable,
    diff_cell,
    pct,
    rate_cell,
    render_markdown,
    render_text,
)
from stackelberg.evaluation.report.tournament import (
    camp_table,
    overall_table,
    paired_table,
    role_table,
    score_paired_table,
    score_table,
)
from stackelberg.evaluation.report.transfer import joint_table, views_table

METRICS_FILE = "metrics.json"


def report_tables(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> list[TextTable]:
    """Every table of the report, in reading order (empty ones left out). Scored games
    (Sotopia) have score tables in place of the win-rate ones."""
    won = {g: m for g, m in metrics_by_game.items() if not m.get("scores")}
    tables = [overall_table(won)] if won else []
    for m in metrics_by_game.values():
        if m.get("scores"):
            tables += [score_table(m), score_paired_table(m)]
        else:
            tables += [camp_table(m), role_table(m)]
    tables += [
        paired_table(won),
        reward_table(metrics_by_game),
        training_table(metrics_by_game),
        unseen_follower_table(metrics_by_game),
        optimum_table(metrics_by_game),
        optimum_examples_table(metrics_by_game),
        validity_table(metrics_by_game),
        best_of_table(metrics_by_game),
        best_of_calls_table(metrics_by_game),
        ablation_reward_table(metrics_by_game),
        joint_table(metrics_by_game),
        views_table(metrics_by_game),
        ensemble_table(metrics_by_game),
        behaviour_table(metrics_by_game),
        learned_table(metrics_by_game),
        examples_table(metrics_by_game),
        refiner_outputs_table(metrics_by_game),
    ]
    return [t for t in tables if t.rows]


def markdown_report(
    metrics_by_game: Mapping[str, Mapping[str, Any]],
    plots: Sequence[str] = (),
    extra_tables: Sequence[TextTable] = (),
    title: str = "Evaluation",
) -> str:
    """The markdown summary; ``plots`` are image paths relative to the markdown file."""
    parts = [f"# {title}"]
    parts += [render_markdown(t) for t in [*report_tables(metrics_by_game), *extra_tables]]
    parts += [f"![{Path(p).stem}]({p})" for p in plots]
    return "\n\n".join(parts) + "\n"


def terminal_report(
    metrics_by_game: Mapping[str, Mapping[str, Any]], extra_tables: Sequence[TextTable] = ()
) -> str:
    return "\n\n".join(render_text(t) for t in [*report_tables(metrics_by_game), *extra_tables])


def load_metrics(path: str | Path = "reports") -> dict[str, dict[str, Any]]:
    """metrics.json files by game: a file, a folder holding one, or a folder of game folders."""
    path = Path(path)
    if path.is_file():
        files = [path]
    elif (path / METRICS_FILE).is_file():
        files = [path / METRICS_FILE]
    else:
        files = sorted(path.glob(f"*/{METRICS_FILE}"))
    if not files:
        raise FileNotFoundError(
            f"{path}: no {METRICS_FILE} (expected {path}/{METRICS_FILE} or "
            f"{path}/<game>/{METRICS_FILE}; run the evaluate stage first)"
        )
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        try:
            m = json.loads(f.read_text())
            out[m.get("game") or f.parent.name] = m
        except (json.JSONDecodeError, AttributeError) as err:
            raise ValueError(f"{f}: not a metrics.json object ({err})") from None
    return out


__all__ = [
    "METRICS_FILE",
    "REFINER_RUN_NAMES",
    "TRAINING_MEASURES",
    "TextTable",
    "ablation_reward_table",
    "behaviour_table",
    "best_of_calls_table",
    "best_of_table",
    "camp_table",
    "diff_cell",
    "ensemble_table",
    "examples_table",
    "joint_table",
    "learned_table",
    "optimum_examples_table",
    "optimum_table",
    "load_metrics",
    "markdown_report",
    "overall_table",
    "paired_table",
    "pct",
    "rate_cell",
    "refiner_outputs_table",
    "render_markdown",
    "render_text",
    "report_tables",
    "reward_table",
    "role_table",
    "score_paired_table",
    "score_table",
    "terminal_report",
    "training_table",
    "unseen_follower_table",
    "validity_table",
    "views_table",
]
