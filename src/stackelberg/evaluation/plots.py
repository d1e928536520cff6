"""PNG plots of an evaluation: win rate by condition and role (a scored game: its dimensions), the GRPO reward curve, and the
reward distribution before and after training. Matplotlib with the Agg backend (no display).

Each ``*_figure`` function draws and returns the Figure (so tests can read what is drawn);
each ``plot_*`` writes it as a PNG.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def _save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=120)
    plt.close(fig)
    return path


def win_rates_figure(metrics: Mapping[str, Any]) -> Figure:
    """Grouped bars: overall, each camp and each role; one bar per condition; Wilson bars."""
    conds = metrics["conditions"]
    groups: list[tuple[str, str, str]] = [("overall", "overall", "")]
    groups += [
        ("camps", k, f"camp {k}")
        for k in dict.fromkeys(k for c in conds.values() for k in c["camps"])
    ]
    groups += [("roles", k, k) for k in sorted({k for c in conds.values() for k in c["roles"]})]
    width = 0.8 / max(len(conds), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(groups) * max(len(conds), 1) ** 0.5), 4))
    for j, name in enumerate(conds):
        xs, ys, errs = [], [], [[], []]
        for i, (bucket, key, _) in enumerate(groups):
            r = conds[name]["overall"] if bucket == "overall" else conds[name][bucket].get(key)
            if not r or not r["n"]:
                continue
            xs.append(i + (j - (len(conds) - 1) / 2) * width)
            ys.append(r["rate"])
            errs[0].append(max(0.0, r["rate"] - r["ci"][0]))
            errs[1].append(max(0.0, r["ci"][1] - r["rate"]))
        ax.bar(xs, ys, width, yerr=errs, capsize=3, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([label or key for _, key, label in groups], rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("win rate (95% Wilson interval)")
    ax.set_title(f"{metrics.get('game', '')}: win rate of the agent under test")
    ax.legend(fontsize="small")
    return fig


def scores_figure(metrics: Mapping[str, Any]) -> Figure:
    """A scored game (Sotopia): one bar per condition for each dimension, each dimension
    divided by the width of its range so that all share one axis; bootstrap bars."""
    scores = metrics["scores"]
    dims = list(scores["dimensions"])
    conds = scores["conditions"]
    width = 0.8 / max(len(conds), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(dims)), 4))
    for j, name in enumerate(conds):
        xs, ys, errs = [], [], [[], []]
        for i, dim in enumerate(dims):
            part = conds[name].get(dim)
            if not part or not part["n"]:
                continue
            low, high = scores["dimensions"][dim]
            span = float(high - low)
            xs.append(i + (j - (len(conds) - 1) / 2) * width)
            ys.append(part["estimate"] / span)
            errs[0].append(max(0.0, (part["estimate"] - part["ci"][0]) / span))
            errs[1].append(max(0.0, (part["ci"][1] - part["estimate"]) / span))
        ax.bar(xs, ys, width, yerr=errs, capsize=3, label=name)
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_xticks(range(len(dims)))
    ax.set_xticklabels(
        [f"{d} ({lo}..{hi})" for d, (lo, hi) in scores["dimensions"].items()],
        rotation=30,
        ha="right",
    )
    ax.set_ylabel("mean score / range width (95% bootstrap)")
    ax.set_title(f"{metrics.get('game', '')}: scores of the agent under test")
    ax.legend(fontsize="small")
    return fig


def reward_curve_figure(rewards: Sequence[float], window: int = 10) -> Figure:
    """Mean reward per GRPO step, with a moving average over ``window`` steps."""
    fig, ax = plt.subplots(figsize=(6, 4))
    steps = list(range(1, len(rewards) + 1))
    ax.plot(steps, rewards, alpha=0.4, label="per step")
    if len(rewards) >= 2:
        w = max(1, min(window, len(rewards)))
        smooth = [
            sum(rewards[max(0, i - w + 1) : i + 1]) / len(rewards[max(0, i - w + 1) : i + 1])
            for i in range(len(rewards))
        ]
        ax.plot(steps, smooth, label=f"moving average ({w})")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("mean Measurer reward")
    ax.set_title("Training reward")
    ax.legend(fontsize="small")
    return fig


def reward_distribution_figure(
    before: Sequence[float], after: Sequence[float], bins: int = 20
) -> Figure:
    """Overlaid histograms of held-out rewards of the base and the trained Refiner."""
    fig, ax = plt.subplots(figsize=(6, 4))
    values = [*before, *after]
    edges = (
        bins
        if not values or min(values) == max(values)
        else [min(values) + (max(values) - min(values)) * i / bins for i in range(bins + 1)]
    )
    for data, label in ((before, "before training"), (after, "after training")):
        if data:
            mean = sum(data) / len(data)
            ax.hist(data, bins=edges, alpha=0.5, label=f"{label} (mean {mean:.2f}, n={len(data)})")
    ax.set_xlabel("Measurer reward")
    ax.set_ylabel("candidates")
    ax.set_title("Held-out reward distribution")
    ax.legend(fontsize="small")
    return fig


def plot_win_rates(metrics: Mapping[str, Any], path: str | Path) -> Path:
    return _save(win_rates_figure(metrics), path)


def plot_scores(metrics: Mapping[str, Any], path: str | Path) -> Path:
    return _save(scores_figure(metrics), path)


def plot_reward_curve(rewards: Sequence[float], path: str | Path, window: int = 10) -> Path:
    return _save(reward_curve_figure(rewards, window), path)


def plot_reward_distribution(
    before: Sequence[float], after: Sequence[float], path: str | Path, bins: int = 20
) -> Path:
    return _save(reward_distribution_figure(before, after, bins), path)


__all__ = [
    "plot_reward_curve",
    "plot_reward_distribution",
    "plot_scores",
    "plot_win_rates",
    "reward_curve_figure",
    "reward_distribution_figure",
    "scores_figure",
    "win_rates_figure",
]
