"""PNG plots of an evaluation: win rate by condition and role (a scored game: its dimensions),
the GRPO reward curve (its prompts, step means and compared windows), and the reward
distribution before and after training. Matplotlib with the Agg backend (no display).

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

from stackelberg.evaluation.training_curve import MIN_STEPS, WINDOW_SHARE, window_steps  # noqa: E402


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


def reward_curve_figure(
    rewards: Mapping[int, float] | Sequence[float],
    prompt_rewards: Mapping[int, Sequence[float]] | None = None,
    rise: Mapping[str, Any] | None = None,
    share: float = WINDOW_SHARE,
) -> Figure:
    """The GRPO run's mean reward per step (``rewards``: step -> mean, or a list from step 1)
    as a line, each prompt's mean reward as a point (``prompt_rewards``: step -> rewards),
    and the first and last windows the rise compares shaded; ``rise`` (metrics.json's
    ``training.reward_rise``) puts the difference and its interval in the title, so the
    curve is read with its evidence."""
    means = rewards if isinstance(rewards, Mapping) else dict(enumerate(rewards, 1))
    fig, ax = plt.subplots(figsize=(7, 4))
    if prompt_rewards:
        xs = [s for s, rs in prompt_rewards.items() for _ in rs]
        ys = [r for rs in prompt_rewards.values() for r in rs]
        ax.scatter(xs, ys, s=8, alpha=0.35, color="tab:gray", label="prompt (mean of its group)")
    ax.plot(list(means), list(means.values()), color="tab:blue", label="step mean")
    steps = sorted(prompt_rewards or means)
    if len(steps) >= MIN_STEPS:
        k = window_steps(len(steps), share)
        for (a, b), name, color in (
            ((steps[0], steps[k - 1]), "first", "tab:orange"),
            ((steps[-k], steps[-1]), "last", "tab:green"),
        ):
            label = f"{name} {share:.0%} ({k} step{'s' if k > 1 else ''})"
            ax.axvspan(a - 0.5, b + 0.5, alpha=0.15, color=color, label=label)
    title = "Training reward"
    if rise and rise.get("estimate") is not None:
        lo, hi = rise["ci"]
        title += f": last - first {rise['estimate']:+.3f} [{lo:.3f}, {hi:.3f}], {rise['verdict']}"
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("Measurer reward")
    ax.set_title(title, fontsize="medium")
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


def plot_reward_curve(
    rewards: Mapping[int, float] | Sequence[float],
    path: str | Path,
    prompt_rewards: Mapping[int, Sequence[float]] | None = None,
    rise: Mapping[str, Any] | None = None,
) -> Path:
    return _save(reward_curve_figure(rewards, prompt_rewards, rise), path)


def plot_reward_distribution(
    before: Sequence[float], after: Sequence[float], path: str | Path, bins: int = 20
) -> Path:
    return _save(reward_distribution_figure(before, after, bins), path)


def plot_game(
    metrics: Mapping[str, Any],
    history: Sequence[Mapping[str, Any]],
    prompt_rewards: Mapping[int, Sequence[float]] | None,
    before: Sequence[float],
    after: Sequence[float],
    folder: str | Path,
) -> list[Path]:
    """The plots of one game's evaluation (``metrics``: its metrics.json) in ``folder``: the
    GRPO reward curve (``history``: the training's steps; ``prompt_rewards``: its prompts'
    rewards by step), the held-out rewards ``before`` and ``after`` training, and, when
    tournament games were played, the win rates (a scored game: its dimensions)."""
    folder = Path(folder)
    curve = {h.get("step", i): h["reward"] for i, h in enumerate(history, 1) if "reward" in h}
    rise = (metrics["training"] or {}).get("reward_rise")
    paths = [
        plot_reward_curve(curve, folder / "reward_curve.png", prompt_rewards, rise),
        plot_reward_distribution(before, after, folder / "reward_distribution.png"),
    ]
    if metrics["seeds"] and metrics.get("scores"):  # seeds: those of the games played
        paths.append(plot_scores(metrics, folder / "scores.png"))
    elif metrics["seeds"]:
        paths.append(plot_win_rates(metrics, folder / "win_rates.png"))
    return paths


__all__ = [
    "plot_game",
    "plot_reward_curve",
    "plot_reward_distribution",
    "plot_scores",
    "plot_win_rates",
    "reward_curve_figure",
    "reward_distribution_figure",
    "scores_figure",
    "win_rates_figure",
]
