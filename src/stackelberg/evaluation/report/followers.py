"""The followers' tables (docs/followers.md): ensemble vs one member, and judged responses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackelberg.evaluation.report.tables import TextTable, diff_cell, mean_cell_or_dash, pct


def _refiner_row(held_out: Mapping[str, Any], name: str) -> str:
    """A held-out Refiner's row label (``held_out.refiner_labels``; metrics written before
    them: its name)."""
    return (held_out.get("refiner_labels") or {}).get(name, name)


def ensemble_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """Ensemble vs single Measurer: the Refiner trained against the whole ensemble and each
    trained against one member alone, on the same held-out instances, scored by the ensemble,
    each member and the unseen follower (which none trained against); then the paired
    difference ensemble-trained minus member-trained under each."""
    games = {
        g: m["held_out"]["ensemble"]
        for g, m in metrics_by_game.items()
        if (m.get("held_out") or {}).get("ensemble")
    }
    followers = list(
        dict.fromkeys(f for e in games.values() for r in e["refiners"].values() for f in r)
    )
    rows = []
    for game, e in games.items():
        held_out = metrics_by_game[game]["held_out"]
        for refiner, cells in e["refiners"].items():
            label = _refiner_row(held_out, refiner)
            rows.append([game, label, *(mean_cell_or_dash(cells.get(f)) for f in followers)])
        for single, cells in e["diff"].items():
            rows.append(
                [
                    game,
                    f"{_refiner_row(held_out, 'after')} - {_refiner_row(held_out, single)}",
                    *(
                        diff_cell(c["estimate"], c["ci"], scale=1.0, digits=3)
                        if (c := cells.get(f)) and c.get("n")
                        else "-"
                        for f in followers
                    ),
                ]
            )
    unseen = sorted({str(e["unseen_model"]) for e in games.values() if e.get("unseen_model")})
    headers = ["game", "Refiner"] + [
        f"{f} ({', '.join(unseen)})" if f == "unseen" and unseen else f for f in followers
    ]
    return TextTable(
        "Ensemble vs single Measurer: held-out reward under each follower",
        headers,
        rows,
        "Mean held-out reward [bootstrap 95% interval] n=instances, each the mean of its "
        "candidates: 'ensemble' is the Measurer the first trained Refiner trained against (the "
        "members' weighted mean), then each member alone, then the unseen follower, which no "
        "Refiner trained against. A Refiner trained against a member alone is scored by the "
        "other members too, which it never trained against. The paired rows: the "
        "ensemble-trained Refiner minus the one trained against that member alone, by instance; "
        "under the unseen follower it says whether training against more followers carries "
        "to another one.",
        align_left=2,
    )


def behaviour_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """Behaviour: a follower's sampled responses to each Refiner's held-out candidates,
    judged against the instance's desired and undesired responses."""
    rows = []
    for game, m in metrics_by_game.items():
        held_out = m.get("held_out") or {}
        for follower, entry in (held_out.get("behaviour") or {}).items():
            for refiner, x in entry["refiners"].items():
                rate, diff = x["rate"], x.get("diff")
                rows.append(
                    [
                        game,
                        f"{follower} ({entry['model']})",
                        _refiner_row(held_out, refiner),
                        str(x["responses"]),
                        pct(x["desired"]),
                        pct(x["undesired"]),
                        pct(x["unjudged"]),
                        mean_cell_or_dash(rate),
                        diff_cell(diff["estimate"], diff["ci"], scale=1.0, digits=3)
                        if diff and diff.get("n")
                        else "-",
                    ]
                )
    return TextTable(
        "Behaviour: the follower's responses matching a desired or an undesired response",
        [
            "game",
            "follower",
            "Refiner",
            "responses",
            "desired",
            "undesired",
            "unjudged",
            "desired - undesired [95% CI]",
            "minus untrained [95% CI]",
        ],
        rows,
        "After each held-out candidate the follower says its next speech as the game's LLM "
        "player would (evaluate.behaviour.responses samples), and the labeler judges it: the "
        "scripted labeler by the stance and the player (or team, or goal) the speech names, "
        "matched against the desired and undesired responses; an LLM labeler by naming the "
        "response it says the same as. Unjudged: no stance read (or no speech, or an LLM "
        "judge's answer naming none). The rate is per instance, then averaged [bootstrap 95% "
        "interval] n=instances; the last column pairs each trained Refiner's rate with the "
        "untrained one's by instance.",
        align_left=3,
    )
