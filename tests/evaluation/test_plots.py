"""Plots are written as valid PNG files."""

from __future__ import annotations

from stackelberg.evaluation.metrics import game_metrics
from stackelberg.evaluation.plots import (
    plot_reward_curve,
    plot_reward_distribution,
    plot_win_rates,
)
from stackelberg.evaluation.tournament import play_matrix

PNG = b"\x89PNG\r\n\x1a\n"


def test_plots_are_pngs(tmp_path):
    metrics = game_metrics(
        play_matrix("werewolf", ["random", "scripted"], range(3), opponent="random"),
        resamples=200,
    )
    paths = [
        plot_win_rates(metrics, tmp_path / "a" / "win_rates.png"),
        plot_reward_curve([0.1 * i for i in range(30)], tmp_path / "curve.png"),
        plot_reward_curve([1.0], tmp_path / "one.png"),
        plot_reward_distribution([0.1, 0.4, -0.2, 0.0], [0.5, 0.9, 0.3], tmp_path / "dist.png"),
        plot_reward_distribution([1.0], [1.0], tmp_path / "same.png"),
    ]
    for p in paths:
        data = p.read_bytes()
        assert data.startswith(PNG) and len(data) > 1000
