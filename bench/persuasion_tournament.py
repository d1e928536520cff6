"""Does a Refiner move win rates against listening scripted players? A probe, per camp.

    python bench/persuasion_tournament.py [--game werewolf] [--seeds 300] [--camps village,werewolf]
        [--adapter DIR] [--best-of 4 --best-of 8] [--out F]

The tested camp plays ``scripted_sampled`` (the players the exact follower is), every other
seat the same kind, on seeds from the evaluate stage's ``tournament_seed``. Conditions, on
the same seeds (paired: they differ only in what the Refiner says):

- ``scripted_sampled``: the plain players;
- ``refiner+scripted_sampled``: each speech of the tested camp rewritten by the Refiner as it
  plays (``params.yaml``'s profile, int8), with ``--adapter`` (a trained LoRA) or without it
  (the untrained Refiner);
- ``bestN+scripted_sampled`` for each ``--best-of`` N: the exact follower's best of N
  untrained Refiner samples (search, no training), labeled by the scripted labeler from
  ``label.full_information``'s view.

Prints, per camp and condition, the win rate with its Wilson 95% interval, and each wrapped
condition against the plain one: the paired difference with its bootstrap 95% interval,
McNemar's exact p, and the follower calls a speech cost.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import _project_root  # noqa: F401  (the project importable from the root)

from stackelberg.evaluation.tournament import play_matrix
from stackelberg.evaluation.tournament_stats import best_of_calls, paired_tests, win_rates
from stackelberg.games import game_spec
from stackelberg.llm import make_llm
from stackelberg.llm.embedded import ensure_checkpoint
from stackelberg.params import load_params
from stackelberg.persuasion.exact_follower import ExactFollower

KIND = "scripted_sampled"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="werewolf", choices=["werewolf", "avalon", "onuw"])
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--camps", help="comma-separated; default: the game's two main camps")
    parser.add_argument("--adapter", type=Path, help="a trained Refiner's LoRA adapter")
    parser.add_argument("--best-of", type=int, action="append", default=[])
    parser.add_argument("--batch-games", type=int, default=64)
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    if args.seeds < 1 or any(n < 1 for n in args.best_of):
        print("persuasion_tournament: --seeds and --best-of must be at least 1", file=sys.stderr)
        return 2
    if args.adapter is not None and not (args.adapter / "adapter_config.json").is_file():
        print(f"persuasion_tournament: no LoRA adapter in {args.adapter}", file=sys.stderr)
        return 2
    params = load_params("params.yaml")
    camps = args.camps.split(",") if args.camps else list(game_spec(args.game).tested_camps)
    profile = params.refiner_profile(args.game)
    untrained_config = profile.model.model_copy(
        update={"model": str(ensure_checkpoint()), "cache": "off", "dtype": "int8"}
    )
    untrained = make_llm(untrained_config)
    refiner = (
        make_llm(untrained_config.model_copy(update={"adapter": str(args.adapter)}))
        if args.adapter
        else untrained
    )
    conditions = [KIND, f"refiner+{KIND}", *(f"best{n}+{KIND}" for n in args.best_of)]
    first = params.for_game("evaluate", args.game).tournament_seed
    start = time.perf_counter()
    records = play_matrix(
        args.game,
        conditions,
        range(first, first + args.seeds),
        camps=camps,
        opponent=KIND,
        llm_routes={"refiner": refiner, "refiner_base": untrained, "measurer": ExactFollower()},
        refiner=profile,
        batch_games=args.batch_games,
        best_of_options={
            "label": params.for_game("label", args.game),
            "score": params.for_game("score", args.game),
        },
    )
    result = {
        "game": args.game,
        "adapter": str(args.adapter) if args.adapter else None,
        "seeds": [first, first + args.seeds - 1],
        "win_rates": win_rates(records),
        "paired": paired_tests(records),
        **best_of_calls(records),
        "wall_s": round(time.perf_counter() - start, 1),
    }
    for test in result["paired"]:
        if test["camp"] == "all":
            continue
        print(
            f"{args.game} {test['camp']:>9}: {test['base']} {test['base_rate']:.3f} -> "
            f"{test['treated']} {test['treated_rate']:.3f}  diff {test['diff']:+.3f} "
            f"[{test['ci'][0]:+.3f}, {test['ci'][1]:+.3f}]  gained {test['c']} lost "
            f"{test['b']}  McNemar p {test['p_value']:.3g}  (n {test['n']})"
        )
    print(json.dumps({"wall_s": result["wall_s"], **best_of_calls(records)}))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
