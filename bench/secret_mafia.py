"""Benchmark: this project's agents in TextArena's own SecretMafia-v0, on the embedded model.

The agent under test holds every seat of one camp (``--camp``), this project's ``random``
agent the others, on the same seeds for each condition (``interop.mafia_tournament``). LLM
players and the Refiner play as the evaluate stage plays them (params.yaml: the players'
options and dtype, the Refiner's prompt, sampling and dtype, its trained adapter from
``--refiner``). Prints one JSON line per game as it ends, then per condition the win rate
with its Wilson 95% interval, the paired bootstrap interval of each condition's difference
from the first, and the wall time.

    python bench/secret_mafia.py --games 10 --refiner models/refiner/werewolf
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from stackelberg.evaluation.stats import paired_bootstrap_diff, wilson
from stackelberg.evaluation.tournament import build_agent, parse_condition
from stackelberg.games import GameError
from stackelberg.interop import MissingExtra
from stackelberg.llm import LLMError, make_llm
from stackelberg.params import load_params

FIRST_SEED = 300_000
#: the project's game whose prompts and trained Refiner the seats play SecretMafia with
AS_GAME = "werewolf"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=10, help="seeds per condition")
    parser.add_argument("--first-seed", type=int, default=FIRST_SEED)
    parser.add_argument("--camp", default="village", help="village or mafia")
    parser.add_argument("--conditions", default="direct,refiner+direct")
    parser.add_argument("--refiner", help="the trained Refiner's adapter folder (refiner+X)")
    parser.add_argument("--model", default="embedded", help="the players' and Refiner's model")
    parser.add_argument("--params", default="params.yaml")
    args = parser.parse_args()
    try:
        from stackelberg.interop.mafia_tournament import play_mafia

        conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
        refined = any(parse_condition(c).refined for c in conditions)
        if refined and not args.refiner:
            raise GameError("a refiner+X condition needs --refiner FOLDER (a trained adapter)")
        if args.games < 1:
            raise GameError(f"--games must be at least 1, got {args.games}")
        params = load_params(args.params)
        player = make_llm(params.models.player.model_copy(update={"model": args.model}))
        routes = {"default": player}
        profile = params.refiner_profile(AS_GAME, args.refiner)
        if refined:
            routes["refiner"] = make_llm(profile.model.model_copy(update={"model": args.model}))
        evaluate = params.for_game("evaluate", AS_GAME)

        def build(condition: str):
            return build_agent(
                condition,
                AS_GAME,
                routes,
                evaluate.agent_options(),
                profile,  # as the evaluate stage plays the Refiner
            )

        for condition in conditions:
            build(condition)  # a bad name stops before any game
        seeds = range(args.first_seed, args.first_seed + args.games)
        start = time.perf_counter()
        records = play_mafia(
            conditions,
            seeds,
            args.camp,
            build,
            routes,
            on_game=lambda r: print(json.dumps(r), flush=True),
        )
        wall = time.perf_counter() - start
    except (GameError, LLMError, MissingExtra, ValueError) as exc:
        print(f"secret_mafia: error: {exc}", file=sys.stderr)
        return 2
    win = {(r["condition"], r["seed"]): float(r["win"]) for r in records}
    summary = {"camp": args.camp, "seeds": len(seeds), "wall_seconds": round(wall, 1)}
    for condition in conditions:
        wins = [win[condition, s] for s in seeds]
        rate = wilson(int(sum(wins)), len(wins))
        summary[condition] = rate.to_dict()
        print(
            f"{condition}: won {int(sum(wins))}/{len(wins)} = {rate.estimate:.1%} "
            f"[{rate.low:.1%}, {rate.high:.1%}]"
        )
    for condition in conditions[1:]:
        base = [win[conditions[0], s] for s in seeds]
        diff = paired_bootstrap_diff(base, [win[condition, s] for s in seeds], 2000, seed=0)
        summary[f"{condition} - {conditions[0]}"] = diff.to_dict()
        print(
            f"{condition} - {conditions[0]}: {diff.estimate:+.1%} [{diff.low:+.1%}, {diff.high:+.1%}]"
        )
    print(f"{len(records)} games in {wall / 60:.1f} min")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
