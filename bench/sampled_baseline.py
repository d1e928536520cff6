"""Winners of scripted play, templated against sampled speech (the exact follower's players).

    python bench/sampled_baseline.py [--seeds 300] [--games werewolf,avalon,onuw]
        [--sampled-camp CAMP]

Plays seeds 0..N-1 of each game with every seat ``scripted`` (the templated players), then
with every seat ``scripted_sampled`` (their role's claims, then one sentence drawn from their
opinion), and prints the winners' counts of each. ``--sampled-camp good`` seats only that
camp's players as ``scripted_sampled`` (the others templated) in the second run: whose own
speech a change of the winners comes from.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import _project_root  # noqa: F401  (the project importable from the root)

from stackelberg.agents import make_agent
from stackelberg.agents.runner import play_game
from stackelberg.agents.scripted import OPINION_GAMES, SAMPLED_KIND
from stackelberg.games import make_game


def winners(game: str, seeds: int, sampled: str | None) -> Counter:
    """Winners over ``seeds`` seeds; ``sampled``: None (all templated), "all", or a camp."""
    out: Counter = Counter()
    for seed in range(seeds):
        deal = make_game(game, {})
        deal.reset(seed)
        kinds = [SAMPLED_KIND if sampled in ("all", p.team) else "scripted" for p in deal.players]
        record = play_game(make_game(game, {}), [make_agent(k, game) for k in kinds], seed)
        out[record["result"]["winner"]] += 1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=300)
    ap.add_argument("--games", default=",".join(OPINION_GAMES))
    ap.add_argument("--sampled-camp", default="all", help="all, or one camp's name")
    args = ap.parse_args(argv)
    for game in [g.strip() for g in args.games.split(",") if g.strip()]:
        if game not in OPINION_GAMES:
            sys.exit(f"sampled_baseline: {game} has no sampled players; choose {OPINION_GAMES}")
        plain = dict(sorted(winners(game, args.seeds, None).items()))
        sampled = dict(sorted(winners(game, args.seeds, args.sampled_camp).items()))
        print(f"{game}: templated {plain}; sampled ({args.sampled_camp}) {sampled}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
