"""Games per second of the engines with random and scripted agents, on one core.

    python bench/games.py [--games 1000] [--game werewolf ...]

Prints one JSON line per game and agent kind:
{"game", "agents", "games", "seconds", "games_per_s", "decisions_per_s"}.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from stackelberg.agents import make_agent
from stackelberg.agents.runner import Table
from stackelberg.games import GAMES, make_game


def bench(game_name: str, kind: str, n_games: int) -> dict:
    game = make_game(game_name)
    game.reset(0)
    n_players = game.n_players
    decisions = 0
    start = time.perf_counter()
    for seed in range(n_games):
        table = Table(game, [make_agent(kind, game_name) for _ in range(n_players)], seed)
        table.start()
        assert table.advance() is None
        decisions += table.decisions
    seconds = time.perf_counter() - start
    return {
        "game": game_name,
        "agents": kind,
        "games": n_games,
        "seconds": round(seconds, 3),
        "games_per_s": round(n_games / seconds, 1),
        "decisions_per_s": round(decisions / seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--game", action="append", choices=sorted(GAMES))
    parser.add_argument("--core", type=int, default=0, help="CPU core to pin to")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})
    for game_name in args.game or list(GAMES):
        for kind in ("random", "scripted"):
            print(json.dumps(bench(game_name, kind, args.games)), flush=True)


if __name__ == "__main__":
    main()
