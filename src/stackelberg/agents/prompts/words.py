"""Words every game's prompts share (and the scripted players' sentences): a speech as the
history shows it, a list of players as a sentence says it."""

from __future__ import annotations

from collections.abc import Sequence

from stackelberg.games.base import player_name


def names(ids: Sequence[int]) -> str:
    """A list of players as a sentence says it: "Player 1, Player 2 and Player 4"."""
    said = [player_name(p) for p in ids]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def speech_line(player: int, text: str) -> str:
    """A speech as every game's history shows it, and as the Measurer's follower reads the
    candidate it scores."""
    return f"{player_name(player)} says: {text}"
