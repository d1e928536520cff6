"""Layer 6: win-rate evaluation by camp on paired seeds, statistics, reports and plots.

    from stackelberg.evaluation import play_matrix, game_metrics, markdown_report
    records = play_matrix("onuw", ["react", "refiner+react"], seeds=range(32),
                          llm_routes={"default": llm, "refiner": refiner_llm})
    metrics = game_metrics(records)          # the metrics.json of one game
    print(markdown_report({"onuw": metrics}))

``stackelberg.evaluation.plots`` (matplotlib) is imported only when plots are made.
"""

from __future__ import annotations

from stackelberg.evaluation.ablation import AblationResult, ablation_from_mlflow, ablation_table
from stackelberg.evaluation.metrics import game_metrics, reward_summary
from stackelberg.evaluation.mlflow_names import mlflow_metrics
from stackelberg.evaluation.report import (
    TextTable,
    load_metrics,
    markdown_report,
    render_markdown,
    render_text,
    terminal_report,
)
from stackelberg.evaluation.stats import (
    Interval,
    bootstrap_diff,
    bootstrap_mean_ci,
    mcnemar_exact,
    paired_bootstrap_diff,
    wilson,
)
from stackelberg.evaluation.tournament import (
    build_agent,
    camp_seats,
    parse_condition,
    play_matrix,
    play_tournament,
)
from stackelberg.evaluation.tournament_stats import paired_test, paired_tests, win_rates

__all__ = [
    "AblationResult",
    "Interval",
    "TextTable",
    "ablation_from_mlflow",
    "ablation_table",
    "bootstrap_diff",
    "bootstrap_mean_ci",
    "build_agent",
    "camp_seats",
    "game_metrics",
    "load_metrics",
    "markdown_report",
    "mcnemar_exact",
    "mlflow_metrics",
    "paired_bootstrap_diff",
    "paired_test",
    "paired_tests",
    "parse_condition",
    "play_matrix",
    "play_tournament",
    "render_markdown",
    "render_text",
    "reward_summary",
    "terminal_report",
    "win_rates",
    "wilson",
]
