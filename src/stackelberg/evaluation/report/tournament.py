"""The tournaments' tables: win rates by game, camp and role, paired tests; or a game's scores."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackelberg.evaluation.report.tables import TextTable, diff_cell, pct, rate_cell


def _conditions(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> list[str]:
    names = [c for m in metrics_by_game.values() for c in m["conditions"]]
    return list(dict.fromkeys(names))


def _pairs(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """treated -> base of the paired tests over all camps (X and refiner+X), in any game."""
    return {
        t["treated"]: t["base"]
        for m in metrics_by_game.values()
        for t in m["paired"]
        if t["camp"] == "all"
    }


def _paired_diff(metrics: Mapping[str, Any], base: str, treated: str) -> str:
    """The paired difference over all camps of one game, with its McNemar p ("-": none)."""
    for t in metrics["paired"]:
        if (t["base"], t["treated"], t["camp"]) == (base, treated, "all") and t["n"]:
            return f"{diff_cell(t['diff'], t['ci'])} p={t['p_value']:.2g}"
    return "-"


def overall_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """The headline table in the paper's layout: per game (columns), each agent X, then
    refiner+X right under it and their paired difference on the same seeds."""
    games = list(metrics_by_game)
    conditions, pairs = _conditions(metrics_by_game), _pairs(metrics_by_game)
    order: list[str] = []
    for c in conditions:
        if c in pairs and pairs[c] in conditions:
            continue  # placed under its base
        order.append(c)
        order += [t for t, base in pairs.items() if base == c and t in conditions]
    rows = []
    for c in order:
        conds = (metrics_by_game[g]["conditions"] for g in games)
        rows.append([c, *(rate_cell(cs.get(c, {}).get("overall")) for cs in conds)])
        if c in pairs and pairs[c] in conditions:
            diffs = (_paired_diff(metrics_by_game[g], pairs[c], c) for g in games)
            rows.append([f"{c} - {pairs[c]} (paired)", *diffs])
    opponents = sorted({str(m.get("opponent")) for m in metrics_by_game.values()})
    return TextTable(
        "Win rate of the agent under test (all camps)",
        ["agent", *games],
        rows,
        f"Opponent seats: {', '.join(opponents)}. Cells: win rate [Wilson 95% interval] and "
        "games; under each refiner+X (and bestN+X), its difference from X on the same seeds "
        "in points [paired bootstrap 95% interval] and the exact McNemar p.",
    )


def camp_table(metrics: Mapping[str, Any]) -> TextTable:
    conds = metrics["conditions"]
    camps = list(dict.fromkeys(k for c in conds.values() for k in c["camps"]))
    rows = [
        [c, *(rate_cell(conds[c]["camps"].get(k)) for k in camps), rate_cell(conds[c]["overall"])]
        for c in conds
    ]
    return TextTable(f"{metrics['game']}: win rate by camp", ["agent", *camps, "overall"], rows)


def role_table(metrics: Mapping[str, Any]) -> TextTable:
    conds = metrics["conditions"]
    roles = sorted({k for c in conds.values() for k in c["roles"]})
    rows = [[r, *(rate_cell(conds[c]["roles"].get(r)) for c in conds)] for r in roles]
    return TextTable(
        f"{metrics['game']}: win rate by role held by the agent under test",
        ["role", *conds],
        rows,
        "Role = the role dealt; a game counts once per role.",
    )


def paired_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    rows = [
        [
            game,
            t["camp"],
            f"{t['base']} -> {t['treated']}",
            str(t["n"]),
            pct(t["base_rate"]),
            pct(t["treated_rate"]),
            diff_cell(t["diff"], t["ci"]) if t["n"] else "-",
            f"{t['b']}/{t['c']}",
            f"{t['p_value']:.3g}",
            t["verdict"],
        ]
        for game, m in metrics_by_game.items()
        for t in m["paired"]
    ]
    return TextTable(
        "Paired comparison on the same seeds (X vs refiner+X, bestN+X)",
        [
            "game",
            "camp",
            "pair",
            "games",
            "base",
            "treated",
            "diff [95% CI]",
            "b/c",
            "p",
            "verdict",
        ],
        rows,
        "b/c: games only the base / only the treated won; p: exact McNemar; CI: paired "
        "bootstrap of the win-rate difference in points.",
        align_left=3,
    )


def _score_cell(part: Mapping[str, Any] | None) -> str:
    """``"6.40 [5.10, 7.60] n=12"``: a mean score with its bootstrap interval."""
    if not part or not part["n"]:
        return "-"
    lo, hi = part["ci"]
    return f"{part['estimate']:.2f} [{lo:.2f}, {hi:.2f}] n={part['n']}"


def score_table(metrics: Mapping[str, Any]) -> TextTable:
    """A scored game (Sotopia): rows are conditions, columns dimensions, cells the tested
    seats' mean score."""
    scores = metrics["scores"]
    dims = list(scores["dimensions"])
    rows = [
        [c, *(_score_cell(parts.get(d)) for d in dims), str(parts.get("unscored", 0))]
        for c, parts in scores["conditions"].items()
    ]
    ranges = ", ".join(f"{d} {lo}..{hi}" for d, (lo, hi) in scores["dimensions"].items())
    return TextTable(
        f"{metrics['game']}: scores of the agent under test",
        ["agent", *dims, "unscored"],
        rows,
        f"Mean over games [bootstrap 95% interval] and games scored; ranges: {ranges}. "
        "Unscored: games the evaluator failed on.",
    )


def score_paired_table(metrics: Mapping[str, Any]) -> TextTable:
    rows = [
        [
            t["dimension"],
            f"{t['base']} -> {t['treated']}",
            str(t["n"]),
            "-" if t["base_mean"] is None else f"{t['base_mean']:.2f}",
            "-" if t["treated_mean"] is None else f"{t['treated_mean']:.2f}",
            diff_cell(t["diff"], t["ci"], scale=1.0, digits=2) if t["n"] else "-",
            t["verdict"],
        ]
        for t in metrics["scores"]["paired"]
    ]
    return TextTable(
        f"{metrics['game']}: paired score difference on the same scenarios (X vs refiner+X)",
        ["dimension", "pair", "games", "base", "treated", "diff [95% CI]", "verdict"],
        rows,
        "CI: paired bootstrap of the mean difference (treated - base).",
        align_left=2,
    )
