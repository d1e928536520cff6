"""Plots draw the data they are given, with their titles and axis labels, and are written
as PNG files."""

from __future__ import annotations

import pytest
from matplotlib.patches import Rectangle

from stackelberg.evaluation.metrics import game_metrics
from stackelberg.evaluation.plots import (
    plot_reward_curve,
    plot_reward_distribution,
    plot_win_rates,
    reward_curve_figure,
    reward_distribution_figure,
    win_rates_figure,
)
from stackelberg.evaluation.tournament import play_matrix

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def metrics():
    records = play_matrix("werewolf", ["random", "scripted"], range(3), opponent="random")
    return game_metrics(records, resamples=200)


def bar_heights(ax, label):
    (container,) = [c for c in ax.containers if c.get_label() == label]
    return [bar.get_height() for bar in container]


def texts(ax) -> tuple[str, str, str, list[str]]:
    """What a reader sees besides the data: title, axis labels and legend entries."""
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    return ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), legend


def test_win_rates_draw_each_condition_over_overall_camps_and_roles(metrics):
    ax = win_rates_figure(metrics).axes[0]
    conds = metrics["conditions"]
    camps = list(dict.fromkeys(k for c in conds.values() for k in c["camps"]))
    roles = sorted({k for c in conds.values() for k in c["roles"]})
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["overall", *(f"camp {k}" for k in camps), *roles]
    assert texts(ax) == (
        "werewolf: win rate of the agent under test",
        "",
        "win rate (95% Wilson interval)",
        ["random", "scripted"],
    )
    assert ax.get_ylim() == (0, 1)
    for name, cond in conds.items():
        drawn = [cond["overall"], *(cond["camps"].get(k) for k in camps)]
        drawn += [cond["roles"].get(k) for k in roles]
        expected = [r["rate"] for r in drawn if r and r["n"]]
        assert bar_heights(ax, name) == pytest.approx(expected)


def test_reward_curve_draws_prompts_step_means_and_the_compared_windows():
    means = {s: 0.1 * s for s in range(1, 11)}
    prompts = {s: [0.1 * s - 0.05, 0.1 * s + 0.05] for s in range(1, 11)}
    rise = {"estimate": 0.8, "ci": [0.6, 1.0], "verdict": "rises"}
    ax = reward_curve_figure(means, prompts, rise).axes[0]
    (line,) = ax.get_lines()
    assert list(line.get_xdata()) == list(range(1, 11))
    assert list(line.get_ydata()) == pytest.approx([0.1 * s for s in range(1, 11)])
    (points,) = ax.collections
    drawn = [float(x) for p in points.get_offsets() for x in p]  # step, reward, step, ...
    assert drawn == pytest.approx([x for s, rs in prompts.items() for r in rs for x in (s, r)])
    spans = [(p.get_x(), p.get_x() + p.get_width()) for p in ax.patches]
    assert spans == [(0.5, 2.5), (8.5, 10.5)]  # steps 1-2 and 9-10: a fifth of ten each
    assert texts(ax) == (
        "Training reward: last - first +0.800 [0.600, 1.000], rises",
        "GRPO step",
        "Measurer reward",
        [
            "prompt (mean of its group)",
            "step mean",
            "first 20% (2 steps)",
            "last 20% (2 steps)",
        ],
    )


def test_a_history_without_prompt_rewards_draws_its_step_means_and_windows():
    ax = reward_curve_figure([0.0, 1.0, 2.0]).axes[0]
    (line,) = ax.get_lines()
    assert list(line.get_xdata()) == [1, 2, 3] and list(line.get_ydata()) == [0.0, 1.0, 2.0]
    assert not ax.collections and ax.get_title() == "Training reward"
    assert [(p.get_x(), p.get_width()) for p in ax.patches] == [(0.5, 1.0), (2.5, 1.0)]


def test_a_single_step_has_no_windows():
    ax = reward_curve_figure({4: 1.0}, {4: [0.5, 1.5]}).axes[0]
    assert list(ax.get_lines()[0].get_ydata()) == [1.0] and not ax.patches


def test_reward_distribution_draws_both_histograms_with_their_means():
    before, after = [0.1, 0.4, -0.2, 0.0], [0.5, 0.9, 0.3]
    ax = reward_distribution_figure(before, after, bins=4).axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(bars) == 8  # 4 bins each, on common edges from the lowest to the highest
    # edges -0.2, 0.075, 0.35, 0.625, 0.9
    assert [b.get_height() for b in bars[:4]] == [2, 1, 1, 0]
    assert [b.get_height() for b in bars[4:]] == [0, 1, 1, 1]
    assert bars[0].get_x() == pytest.approx(-0.2)
    assert texts(ax) == (
        "Held-out reward distribution",
        "Measurer reward",
        "candidates",
        ["before training (mean 0.07, n=4)", "after training (mean 0.57, n=3)"],
    )


def test_plots_are_written_as_pngs(tmp_path, metrics):
    paths = [
        plot_win_rates(metrics, tmp_path / "a" / "win_rates.png"),
        plot_reward_curve(
            [0.1 * i for i in range(30)], tmp_path / "curve.png", {1: [0.0, 0.2], 30: [3.0]}
        ),
        plot_reward_distribution([1.0], [1.0], tmp_path / "same.png"),
    ]
    for p in paths:
        data = p.read_bytes()
        assert data.startswith(PNG) and len(data) > 1000
