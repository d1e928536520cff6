"""Benchmark: strategist camps against scripted ones in Avalon, with no LLM.

The value model is fitted as the strategist stage fits it (its default settings, or
``--fit-games``); then on the same seeds each camp is played by strategists (template
speech) and by scripted players, every other seat scripted. Prints, per camp, both win
rates with their Wilson intervals and the paired bootstrap interval of the difference, and
the time per game; one JSON line per camp.

    python bench/strategist_match.py [--seeds 100] [--fit-games 1000]
"""

from __future__ import annotations

import argparse
import json
import time

from stackelberg.evaluation.stats import paired_bootstrap_diff, wilson
from stackelberg.evaluation.tournament import play_matrix
from stackelberg.training.strategist import StrategistSettings, fit_strategist_value

FIRST_SEED = 200_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=100, help="seeds per camp")
    parser.add_argument("--fit-games", type=int, default=StrategistSettings().games)
    args = parser.parse_args()
    model, _ = fit_strategist_value(StrategistSettings(games=args.fit_games))
    seeds = range(FIRST_SEED, FIRST_SEED + args.seeds)
    for camp in ("good", "evil"):
        start = time.perf_counter()
        records = play_matrix(
            "avalon",
            ["scripted", "strategist"],
            seeds,
            camps=[camp],
            opponent="scripted",
            llm_routes={"strategist": model},
            agent_options={"speech": "template"},
        )
        seconds = time.perf_counter() - start
        wins = {(r["condition"], r["seed"]): float(r["win"]) for r in records}
        base = [wins["scripted", s] for s in seeds]
        mine = [wins["strategist", s] for s in seeds]
        gain = paired_bootstrap_diff(base, mine, resamples=2000, seed=0)
        print(
            json.dumps(
                {
                    "camp": camp,
                    "seeds": len(seeds),
                    "strategist": wilson(int(sum(mine)), len(mine)).to_dict(),
                    "scripted": wilson(int(sum(base)), len(base)).to_dict(),
                    "difference": gain.to_dict(),
                    "seconds_per_game": seconds / len(records),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
