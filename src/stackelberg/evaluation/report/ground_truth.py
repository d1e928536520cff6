"""The held-out Refiners against the exact follower: the Stackelberg headroom each one
reaches, and how well each model of the follower ranks candidates as the exact one does
(metrics.json ``held_out.ground_truth``; ``evaluation.ground_truth``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackelberg.evaluation.report.tables import TextTable, interval_cell, mean_cell_or_dash


def _truth(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {
        g: gt
        for g, m in metrics_by_game.items()
        if (gt := (m.get("held_out") or {}).get("ground_truth"))
    }


def optimum_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """Per game, the headroom (the optimum's exact reward minus the base speech's), then
    per Refiner the exact reward it gains over the base speech and its share of the
    headroom."""
    rows = []
    for game, gt in _truth(metrics_by_game).items():
        rows.append([game, "optimum (headroom)", mean_cell_or_dash(gt["headroom"]), "100%"])
        for name, cells in gt["refiners"].items():
            rows.append(
                [
                    game,
                    name,
                    mean_cell_or_dash(cells["gain"]),
                    interval_cell(cells["share"], percent=True),
                ]
            )
    return TextTable(
        "Held out under the exact follower: the Stackelberg headroom and each Refiner's share",
        ["game", "speech", "exact reward - base speech", "share of headroom"],
        rows,
        "Terms only (no length or format penalty). The optimum: every one- and two-sentence "
        "speech of the speaker's grammar, scored under the exact follower. A share is a ratio "
        "of means over instances with a bootstrap 95% interval; best_of_K: the Measurer's pick "
        "among the untrained Refiner's first K.",
    )


def validity_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """Per game and model of the follower: its rank correlation with the exact follower
    within an instance, how often its best candidate is an exact best one, and its pick's
    share of the best exact gain."""
    rows = []
    for game, gt in _truth(metrics_by_game).items():
        for follower, cells in gt["validity"].items():
            rows.append(
                [
                    game,
                    f"{follower} ({cells['model']})",
                    mean_cell_or_dash(cells["rank_correlation"]),
                    mean_cell_or_dash(cells["same_best"]),
                    interval_cell(cells["pick_share"], percent=True),
                ]
            )
    return TextTable(
        "Held out: the LLM Measurer against the exact follower",
        ["game", "model", "rank correlation", "same best", "pick's share of best gain"],
        rows,
        "Over each instance's held-out candidates (all Refiners), in the instances where the "
        "exact follower does not score them all alike. Rank correlation: Spearman within an "
        "instance, mean with a bootstrap 95% interval (n: the instances where the model does "
        "not either). Pick's share: the exact gain of the model's best candidate over the instance's "
        "mean candidate, as a share of the exact best candidate's (ratio of means).",
    )


def optimum_examples_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """A few held-out instances per game: the base speech, each Refiner's first candidate
    and the optimum, each with its exact reward."""
    rows = []
    for game, gt in _truth(metrics_by_game).items():
        for i, e in enumerate(gt.get("examples", []), 1):
            said = [("base speech", e["base"], e.get("base_reward"))]
            said += [
                (name, c["speech"], c["reward"])
                for name, c in e.items()
                if isinstance(c, Mapping) and "speech" in c
            ]
            said.append(("optimum", e["optimum"], e.get("optimum_reward")))
            rows += [
                [f"{game} #{i}", who, text, "-" if reward is None else f"{reward:.2f}"]
                for who, text, reward in said
            ]
    return TextTable(
        "Held-out examples under the exact follower: what each Refiner said, and the optimum",
        ["instance", "speech", "text", "exact reward"],
        rows,
        "Each Refiner's first candidate; exact rewards are terms only.",
        align_left=3,
    )
