"""The command line of one stage, as dvc.yaml runs it: ``python -m flows.run STAGE [GAME]``.

The stage modules under ``stages/`` are plain functions; this entry point runs one of them
through its Prefect flow (flows/stage.py), with user mistakes reported in one line.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from flows.context import LAYOUT, NOT_PER_GAME
from flows.errors import run_cli
from stackelberg.games import GAME_NAMES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.run", description=__doc__)
    parser.add_argument("stage", choices=list(LAYOUT))
    parser.add_argument("game", nargs="?", choices=list(GAME_NAMES), help="per-game stages only")
    args = parser.parse_args(argv)
    if args.stage in NOT_PER_GAME:
        if args.game:
            parser.error(f"{args.stage} runs once for all games; give no game")
        return run_cli(args.stage, "all")
    games = getattr(importlib.import_module(f"stages.{args.stage}"), "GAMES", GAME_NAMES)
    if not args.game:
        parser.error(f"{args.stage} runs per game; give one of: {', '.join(games)}")
    if args.game not in games:  # a stage may run for some games only (tactics: onuw)
        parser.error(f"{args.stage} runs for {', '.join(games)} only, not {args.game}")
    return run_cli(args.stage, args.game)


if __name__ == "__main__":
    sys.exit(main())
