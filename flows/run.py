"""The command line of one stage, as dvc.yaml runs it: ``python -m flows.run STAGE [GAME]``.

The stage modules under ``stages/`` are plain functions; this entry point runs one of them
through its Prefect flow (flows/stage.py), with user mistakes reported in one line. The
stages and the games each runs for are dvc.yaml's (flows/graph.py). Run as its own process,
it starts its temporary Prefect server before anything else (flows/api.py).
"""

from __future__ import annotations

import argparse
import gc
import sys

from flows import graph
from stackelberg.games import GAME_NAMES


def main(argv: list[str] | None = None, *, own_process: bool = False) -> int:
    """``own_process``: this process runs this stage alone (``python -m flows.run``), so its
    temporary Prefect server, if it needs one, starts at once (flows/api.py)."""
    stages = graph.stages()
    parser = argparse.ArgumentParser(prog="python -m flows.run", description=__doc__)
    parser.add_argument("stage", choices=list(stages))
    parser.add_argument("game", nargs="?", choices=list(GAME_NAMES), help="per-game stages only")
    args = parser.parse_args(argv)
    stage = stages[args.stage]
    if not stage.per_game:
        if args.game:
            parser.error(f"{args.stage} runs once for all games; give no game")
    else:
        games = stage.games or GAME_NAMES  # a foreach over a list: some games only
        if not args.game:
            parser.error(f"{args.stage} runs per game; give one of: {', '.join(games)}")
        if args.game not in games:  # a stage may run for some games only (tactics: onuw)
            parser.error(f"{args.stage} runs for {', '.join(games)} only, not {args.game}")
    from flows.errors import quiet_prefect, run_cli

    if own_process:
        from flows import api
        from flows.context import current_params

        # The start imports for seconds and makes no garbage: no collection passes over
        # what it builds (each pass over all of it took up to a second); flows.stage
        # switches the collector back on when the start is over (``api.starting``).
        gc.disable()
        quiet_prefect()  # the server's settings too
        try:
            current_params()
        except Exception:  # noqa: BLE001  run_cli says it in one line, and no server starts
            pass
        else:
            api.start()
    return run_cli(args.stage, args.game or graph.ONCE)


if __name__ == "__main__":
    status = main(own_process=True)
    # What the process built is left to the exit, not collected by it: the interpreter's
    # last collection passes over every object the libraries made (1.5 to 4 s a stage).
    gc.freeze()
    sys.exit(status)
