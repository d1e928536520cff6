"""The `stackelberg` command: play games (or one seat yourself), look at them as HTML pages,
print evaluation reports, check and explain params files, serve the trained Refiner."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, get_args

from stackelberg import INTERRUPTED_STATUS
from stackelberg.agents import AGENT_KINDS
from stackelberg.agents.choice import CHOICE_MODES
from stackelberg.agents.human import HumanQuit
from stackelberg.agents.llm_agents import MAX_SPEECH_ATTEMPTS
from stackelberg.cli.commands import (
    BASE_REFINER,
    UsageError,
    cmd_params,
    cmd_play,
    cmd_report,
    cmd_serve,
    cmd_sotopia_import,
    cmd_view,
)
from stackelberg.cli.play_output import summarize, transcript
from stackelberg.games import GAME_NAMES, GameError
from stackelberg.games.sotopia_scenarios import TASK_FILES
from stackelberg.llm import LLMConfig, LLMError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stackelberg", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    play = sub.add_parser("play", help="play seeded games and write their records")
    play.add_argument("game", choices=GAME_NAMES, help="which game")
    play.add_argument(
        "--agents",
        default="scripted",
        help="agent kind for every seat, or one per seat separated by commas: "
        + ", ".join(AGENT_KINDS)
        + "; or X wrapped (with --refiner): refiner+X, X's speeches rewritten by the Refiner, "
        "or bestN+X, the Measurer's best of N Refiner samples (e.g. best4+scripted)",
    )
    play.add_argument("--games", type=int, default=1, help="number of games (seeds S..S+N-1)")
    play.add_argument("--seed", type=int, default=0, help="seed of the first game")
    play.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a game option"
    )
    play.add_argument("--out", help="write one game record per line (JSONL) here")
    play.add_argument("--transcript", action="store_true", help="print the first game")
    play.add_argument(
        "--backend",
        default="local",
        choices=get_args(LLMConfig.model_fields["backend"].annotation),
        help="LLM backend of the LLM agents (local: the embedded model)",
    )
    play.add_argument("--model", help="model name or checkpoint folder (default: embedded)")
    play.add_argument("--base-url", help="server URL of the openai/anthropic backend")
    play.add_argument("--no-cache", action="store_true", help="do not use the LLM response cache")
    play.add_argument(
        "--choice",
        default="auto",
        choices=CHOICE_MODES,
        help="how LLM agents choose among options: score them, answer a numbered list, or "
        "auto (score where the backend can)",
    )
    play.add_argument(
        "--max-speech-attempts",
        type=int,
        default=MAX_SPEECH_ATTEMPTS,
        metavar="N",
        help="LLM agents: samples of a speech while the model only echoes its prompt, before "
        f"the fallback line (default: {MAX_SPEECH_ATTEMPTS}; 1: no re-asks)",
    )
    play.add_argument(
        "--tactics",
        metavar="FOLDER",
        help="rl_ins seats: the trained tactic policy (models/tactics/onuw); without it they "
        "draw their tactics uniformly",
    )
    play.add_argument(
        "--value",
        metavar="FOLDER",
        help="strategist seats: the fitted value model (models/strategist/avalon); without it "
        "their search values only finished games",
    )
    play.add_argument(
        "--lspo",
        metavar="FOLDER",
        help="lspo seats: the solved latent-strategy policy (models/lspo/werewolf); without "
        "it they draw a speech act uniformly",
    )
    play.add_argument(
        "--refiner",
        metavar="FOLDER",
        help="refiner+X and bestN+X seats: the Refiner, a trained adapter folder "
        f"(models/refiner/GAME), or {BASE_REFINER}: the untrained base model (bestN+X as the "
        "evaluate stage plays it)",
    )
    play.add_argument(
        "--params",
        default="params.yaml",
        help="with --refiner: the params the Refiner was trained with, its base model, prompt "
        "and sampling; bestN+X: the Measurer, labeling and scoring (default: params.yaml)",
    )
    play.add_argument(
        "--batch-games",
        type=int,
        default=0,
        help="games played at once, their LLM calls batched (default: 8 with LLM agents)",
    )
    play.add_argument(
        "--human",
        type=int,
        metavar="SEAT",
        help="you play seat SEAT (1 = Player 1) in the terminal; games are played one by one",
    )
    play.set_defaults(func=cmd_play)
    report = sub.add_parser("report", help="print the evaluation tables from metrics.json")
    report.add_argument(
        "path",
        nargs="?",
        default="reports",
        help="a metrics.json, a folder with one, or a folder of game folders (default: reports)",
    )
    report.add_argument("--markdown", action="store_true", help="print markdown tables")
    report.add_argument(
        "--mlflow",
        metavar="EXPERIMENT",
        help="read each game's newest finished evaluate run of this MLflow experiment "
        "instead of metrics.json files, and name the runs, commits and params files",
    )
    report.add_argument(
        "--tracking-uri",
        help="the MLflow store (default: $MLFLOW_TRACKING_URI, else tracking.tracking_uri's "
        "default, the project's sqlite:///mlruns.db)",
    )
    report.set_defaults(func=cmd_report)
    view = sub.add_parser("view", help="write HTML pages of recorded games, with an index")
    view.add_argument(
        "path",
        help="a JSONL file of game records (play --out; tournament records kept with their "
        "game_record) or a self-play parquet (data/selfplay/G.parquet: the intents and "
        "rewards beside it in data/ are shown with its speeches)",
    )
    view.add_argument("--out", help="folder of the pages (default: view/NAME, NAME from PATH)")
    view.add_argument(
        "--reveal", action="store_true", help="show roles and private events from the start"
    )
    view.set_defaults(func=cmd_view)
    sotopia = sub.add_parser("sotopia", help="Sotopia scenarios: import the public dataset")
    sotopia_sub = sotopia.add_subparsers(dest="sotopia_command", required=True)
    imp = sotopia_sub.add_parser(
        "import", help="write a public Sotopia split as a scenarios file (project format)"
    )
    imp.add_argument(
        "path",
        help="a folder with EnvironmentProfile and AgentProfile records (a folder of JSON "
        "files, NAME.json or NAME.jsonl each) and the split's task list",
    )
    imp.add_argument(
        "--split",
        default="hard",
        choices=list(TASK_FILES),
        help="hard: hard_tasks_90.json; all: testing_tasks_450.json (default: hard)",
    )
    imp.add_argument("--out", help="the scenarios file to write (default: standard output)")
    imp.set_defaults(func=cmd_sotopia_import)
    params = sub.add_parser(
        "params", help="check a params file, or list every params key (--explain)"
    )
    params.add_argument("path", nargs="?", default="params.yaml", help="default: params.yaml")
    params.add_argument(
        "--explain", action="store_true", help="every key with its default and what it sets"
    )
    params.set_defaults(func=cmd_params)
    add_serve_parser(sub)
    return parser


def add_serve_parser(sub: Any) -> None:
    from stackelberg.serving.bodies import ServeLimits
    from stackelberg.serving.server import PARAMS_MEASURER

    serve = sub.add_parser(
        "serve", help="serve the trained Refiner as an OpenAI-compatible chat endpoint"
    )
    serve.add_argument(
        "--refiner", required=True, metavar="FOLDER", help="the LoRA adapter (models/refiner/GAME)"
    )
    serve.add_argument(
        "--params",
        default="params.yaml",
        help="the params it was trained with: its base model, prompt, sampling, the Measurer "
        "(default: params.yaml)",
    )
    serve.add_argument(
        "--measurer",
        nargs="?",
        const=PARAMS_MEASURER,
        metavar="MODEL",
        help="also serve POST /v1/measure, the Measurer's reward: params' models.measurer, or "
        "MODEL in its place",
    )
    serve.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1 (this machine)")
    serve.add_argument("--port", type=int, default=8000, help="default: 8000")
    for name, field in ServeLimits.model_fields.items():
        kind = float if field.annotation is float else int
        serve.add_argument(
            f"--{name.replace('_', '-')}",
            type=kind,
            metavar="N",
            help=f"{field.description} (default: {field.default})",
        )
    serve.set_defaults(func=cmd_serve)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, GameError, LLMError) as exc:
        print(f"stackelberg: error: {exc}", file=sys.stderr)
        return 2
    except HumanQuit as quit:
        print(f"stackelberg: the human player left ({quit}); game abandoned", file=sys.stderr)
        return quit.status
    except KeyboardInterrupt:
        print("stackelberg: interrupted; no partial output was kept", file=sys.stderr)
        return INTERRUPTED_STATUS


__all__ = ["UsageError", "build_parser", "main", "summarize", "transcript"]
