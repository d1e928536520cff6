"""The settings keys every trained baseline's params section has beside its training's own
(``tactics``, ``strategist``, ``lspo``): the held-out games, the seed, the game's options.

Each key is defined once here and declared by each section where it stands. They are field
types, not fields of a base class: a base class's fields come first, and the saved models
record their settings in each section's own key order (the strategist's ``eval_games`` sits
before ``ridge``), whose bytes must not change.
"""

from __future__ import annotations

from typing import Annotated, Any, Protocol

from pydantic import Field

EvalGames = Annotated[
    int,
    Field(
        ge=0,
        description="held-out seeds the trained model is judged on against its untrained "
        "baseline, paired (rl_ins, lspo: the uniform choice; strategist: the camp's base rate)",
    ),
]
Seed = Annotated[
    int,
    Field(
        description="seed of the first training game and of the training's other draws "
        "(the tactic policy's weights, lspo's clusters)"
    ),
]
GameOptions = Annotated[
    dict[str, Any],
    Field(
        default_factory=dict,
        description="options of the game's tables, in training and held out (docs/games.md)",
    ),
]


class BaselineSettings(Protocol):
    """The settings of a trained baseline, as its held-out seeds, its tables and its stage
    read them: a ``Settings`` class that declares ``EvalGames``, ``Seed`` and ``GameOptions``."""

    eval_games: int
    seed: int
    options: dict[str, Any]


__all__ = ["BaselineSettings", "EvalGames", "GameOptions", "Seed"]
