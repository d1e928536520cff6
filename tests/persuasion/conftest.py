from __future__ import annotations

import pytest

from stackelberg.agents import make_agent
from stackelberg.agents.runner import Table, play_tables
from stackelberg.games import make_game


def _selfplay(name: str, seeds) -> list[tuple[dict, list]]:
    """Scripted games with the speech turns the runner saw (as the selfplay stage keeps them)."""
    out = []
    for seed in seeds:
        game = make_game(name)
        n = game.reset(seed).n_players
        table = Table(game, [make_agent("scripted", name) for _ in range(n)], seed)
        out.append((play_tables([table])[0], table.speech_turns))
    return out


@pytest.fixture
def selfplay():
    return _selfplay
