"""The command line shared by every stage module: ``python -m stages.<name> [GAME]``."""

from __future__ import annotations

import argparse
import sys

from stackelberg.games import GAME_NAMES


def stage_main(stage: str, per_game: bool = True) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m stages.{stage}")
    if per_game:
        parser.add_argument("game", choices=GAME_NAMES)
    args = parser.parse_args()
    from flows.errors import run_cli

    sys.exit(run_cli(stage, args.game if per_game else "all"))
