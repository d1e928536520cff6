"""The transfer tables (docs/limits.md): one Refiner for all games, and the speaker's own view."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackelberg.evaluation.report.tables import TextTable, diff_cell, mean_cell_or_dash


def _diff_or_dash(part: Mapping[str, Any] | None) -> str:
    """A paired difference with its interval and n, ``"+0.123 [-0.100, 0.300] n=55"``."""
    if not part or not part.get("n"):
        return "-"
    return f"{diff_cell(part['estimate'], part['ci'], scale=1.0, digits=3)} n={part['n']}"


def joint_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """One Refiner for all games (``grpo.joint``) against each game's own, on the game's
    held-out instances: whether the joint Refiner trained on the game (a game it never saw:
    transfer), each Refiner's mean reward, and the paired differences."""
    rows, trained_on = [], set()
    for game, m in metrics_by_game.items():
        joint = (m.get("held_out") or {}).get("joint")
        if joint:
            trained_on.add(", ".join(joint["trained_on"]))
            rows.append(
                [
                    game,
                    "yes" if joint["seen"] else "no (held out)",
                    mean_cell_or_dash(joint["untrained"]),
                    mean_cell_or_dash(joint["own"]),
                    mean_cell_or_dash(joint["joint"]),
                    _diff_or_dash(joint["joint_minus_own"]),
                    _diff_or_dash(joint["joint_minus_untrained"]),
                ]
            )
    return TextTable(
        "One Refiner for all games: the joint Refiner vs each game's own, held out",
        [
            "game",
            "joint trained on it",
            "untrained",
            "game's own Refiner",
            "joint Refiner",
            "joint - own [95% CI]",
            "joint - untrained [95% CI]",
        ],
        rows,
        f"The joint Refiner trained on {' / '.join(sorted(trained_on))}, one LoRA on their "
        "train instances pooled, each prompt naming its game. Mean held-out Measurer reward "
        "[bootstrap 95% interval] n=instances; differences paired by instance. On a game it "
        "did not train on, joint - untrained is transfer to an unseen game.",
        align_left=2,
    )


#: the views of the information table, as its rows and columns name them
_VIEW_LABELS = {"full_information": "full information", "speaker_only": "speaker's view only"}


def views_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """The 2x2 information table, per game: rows the Refiner by the intents it trained on
    (and the untrained one), columns the intents it is scored against, on the same held-out
    instances; then the speaker-view Refiner minus the full-information one, per column."""
    rows = []
    for game, m in metrics_by_game.items():
        views = (m.get("held_out") or {}).get("views")
        if not views:
            continue
        for refiner, cells in views["cells"].items():
            label = "untrained" if refiner == "untrained" else f"trained on {_VIEW_LABELS[refiner]}"
            rows.append([game, label, *(mean_cell_or_dash(cells.get(v)) for v in _VIEW_LABELS)])
        diff = views.get("other_minus_own")
        if diff:
            own = views["own_view"]
            other = next(v for v in _VIEW_LABELS if v != own)
            rows.append(
                [
                    game,
                    f"{_VIEW_LABELS[other]} - {_VIEW_LABELS[own]} Refiner (paired)",
                    *(_diff_or_dash(diff.get(v)) for v in _VIEW_LABELS),
                ]
            )
    return TextTable(
        "Training on the speaker's own view: Refiners by the intents they trained on (rows) "
        "and are scored against (columns), held out",
        ["game", "Refiner", *(f"scored against {label}" for label in _VIEW_LABELS.values())],
        rows,
        "Intents labeled with every role known (the paper) or with only what the speaker knows "
        "(what a player has at play time; label.both_views). Mean held-out Measurer reward "
        "[bootstrap 95% interval] n=instances; the difference is paired by instance.",
        align_left=2,
    )
