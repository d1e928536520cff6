"""The `stackelberg` subcommands, one function each of its parsed arguments, and UsageError."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from stackelberg.agents import LLM_AGENT_KINDS, check_kind, seat_agents
from stackelberg.agents.human import HumanAgent
from stackelberg.agents.runner import Table, play_tables
from stackelberg.cli.play_output import result_lines, summarize, transcript
from stackelberg.games import Game, make_game
from stackelberg.io import atomic_writer

#: ``--refiner``'s value that means the untrained Refiner: params' base model, no adapter
BASE_REFINER = "base"


class UsageError(Exception):
    """A bad command-line argument: printed as one line, exit status 2."""


def parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set expects KEY=VALUE, got {pair!r}")
        options[key.strip()] = value.strip()
    return options


def cmd_play(args: argparse.Namespace) -> int:
    if args.games < 1:
        raise UsageError(f"--games must be at least 1, got {args.games}")
    options = parse_sets(args.set)
    probe = make_game(args.game, options)
    probe.reset(args.seed)
    from stackelberg.evaluation.tournament import DEFAULT_ROUTE, build_agent, parse_condition

    kinds = seat_conditions(args.agents, probe.n_players)
    if args.human is not None:
        if not 1 <= args.human <= probe.n_players:
            raise UsageError(
                f"--human must be a seat from 1 to {probe.n_players}, got {args.human}"
            )
        kinds[args.human - 1] = HumanAgent.kind
    distinct = [k for k in dict.fromkeys(kinds) if k != HumanAgent.kind]
    inner = [parse_condition(k).kind for k in distinct]  # X of refiner+X and bestN+X
    for kind in set(inner):
        check_kind(kind, args.game)  # before a backend loads
    wrapping = refiner_setup(distinct, args)  # --refiner and --params checked before any load
    routes = trained_routes(inner, args)  # loaded before a backend: a bad folder fails fast
    judged = options.get("evaluator") == "llm"  # a scored game's LLM evaluator
    llm = _backend(args) if judged or any(k in LLM_AGENT_KINDS for k in inner) else None
    if llm is not None:
        routes[DEFAULT_ROUTE] = llm
    routes |= wrapping.routes()
    agent_options = {"choice": args.choice, "max_speech_attempts": args.max_speech_attempts}

    def seat(kind: str) -> Any:
        if kind == HumanAgent.kind:
            return HumanAgent()
        return build_agent(kind, args.game, routes, agent_options, **wrapping.options)

    for kind in distinct:
        seat(kind)  # validate names and pairings before playing anything
    batch = 1 if args.human is not None else args.batch_games or (8 if llm is not None else 1)

    records: list[dict[str, Any]] = []
    first_game: list[Game] = []
    progress = _progress(
        args.games, f"{args.game} games", always=llm is not None and args.human is None
    )

    def finished(table: Table) -> None:
        progress.update(1)
        for agent in table.agents:
            if isinstance(agent, HumanAgent):
                agent.show_news()
                agent.say("\n".join(result_lines(table.game)))

    with atomic_writer(args.out) as out:
        for start in range(0, args.games, batch):
            tables = [
                Table(
                    make_game(args.game, options),
                    [seat(k) for k in kinds],
                    args.seed + i,
                )
                for i in range(start, min(start + batch, args.games))
            ]
            played = play_tables(tables, routes or None, on_finish=finished)
            if judged:
                from stackelberg.evaluation.judge import judge_records

                judge_records(llm, played, seed=args.seed)
            for rec in played:
                if out is not None:
                    out.write(json.dumps(rec) + "\n")
                records.append({k: rec[k] for k in ("game", "seed", "result", "players")})
            if not first_game:
                first_game.append(tables[0].game)
                first_result = played[0]["result"]
    progress.close()
    if args.transcript and first_game:
        print(transcript(first_game[0], first_result))
        print()
    print(summarize(records))
    if args.out:
        print(f"wrote {len(records)} game records to {args.out}")
    return 0


def seat_conditions(spec: str, n_players: int) -> list[str]:
    """One kind per seat from ``--agents`` as ``seat_agents`` reads it, where a kind may
    also be wrapped: ``refiner+X``, ``bestN+X`` (``tournament.parse_condition``), X checked
    as a kind."""
    from stackelberg.evaluation.tournament import parse_condition

    given = [k.strip() for k in spec.split(",") if k.strip()]
    seat_agents(",".join(parse_condition(k).kind for k in given), n_players)
    return given * n_players if len(given) == 1 else given


class RefinerSetup(NamedTuple):
    """What the wrapped seats play with: ``routes()`` loads the Refiner (and a best-of
    speaker's Measurer) by route; ``options``, ``build_agent``'s Refiner and best-of
    options."""

    routes: Callable[[], dict[str, Any]]
    options: dict[str, Any]


def refiner_setup(played: Sequence[str], args: argparse.Namespace) -> RefinerSetup:
    """The Refiner of the ``refiner+X`` and ``bestN+X`` seats among the kinds ``played``:
    ``--refiner`` (a trained adapter folder, or ``base``, the untrained Refiner), loaded and
    asked as the evaluate stage plays it under ``--params`` (``routes.tournament_routes``,
    ``Params.refiner_profile``); a best-of speaker samples it and
    scores with params' Measurer. Refused in one line before any model loads: a wrapped
    seat without ``--refiner``, a folder that holds no adapter, a params file that does
    not load. Nothing without a wrapped seat."""
    from stackelberg.evaluation.tournament import parse_condition

    wrapped = [k for k in played if parse_condition(k).wrapped]
    if not wrapped:
        if args.refiner is not None:
            raise UsageError("--refiner is for refiner+X and bestN+X seats; no seat is one")
        return RefinerSetup(dict, {})
    from stackelberg.evaluation.routes import tournament_routes
    from stackelberg.serving.server import ServeError, check_adapter, read_params

    if args.refiner is None:
        raise UsageError(
            f"{wrapped[0]} seats need --refiner: a trained Refiner's folder "
            f"(models/refiner/{args.game}) or {BASE_REFINER} (the untrained Refiner)"
        )
    try:
        adapter = None if args.refiner == BASE_REFINER else check_adapter(args.refiner)
        params = read_params(args.params)
    except ServeError as err:
        raise UsageError(str(err)) from None
    profile = params.refiner_profile(args.game, adapter)
    refiner = profile.model
    loaded: dict[str, Any] = {}

    def load(config: Any) -> Any:  # one backend per model config (Refiner and best-of alike)
        from stackelberg.llm import make_llm

        key = config.model_dump_json()
        if key not in loaded:
            loaded[key] = make_llm(config, **({"cache": "off"} if args.no_cache else {}))
        return loaded[key]

    def routes() -> dict[str, Any]:
        return tournament_routes(
            wrapped,
            load,
            (),
            refiner,
            lambda _: None,  # X's trained models: ``trained_routes``
            untrained_refiner=refiner,
            measurer=params.models.measurer,
            named_refiner=lambda _: refiner,
        )

    options = {
        "refiner": profile,
        "best_of_options": params.best_of_options(args.game),
    }
    return RefinerSetup(routes, options)


def trained_routes(kinds: Sequence[str], args: argparse.Namespace) -> dict[str, Any]:
    """The trained models the seats' kinds play with (``--tactics``, ``--value``, ``--lspo``),
    by route (``evaluation.routes.trained_routes``); none without those flags."""
    if not (args.tactics or args.value or args.lspo):
        return {}
    from stackelberg.agents.lspo import LSPO_ROUTE
    from stackelberg.agents.rl_ins import TACTICS_ROUTE
    from stackelberg.agents.strategist import STRATEGIST_ROUTE
    from stackelberg.evaluation.routes import trained_routes as load_routes

    folders = {TACTICS_ROUTE: args.tactics, STRATEGIST_ROUTE: args.value, LSPO_ROUTE: args.lspo}
    return load_routes(kinds, folders.get)


def cmd_report(args: argparse.Namespace) -> int:
    from stackelberg.evaluation.report import load_metrics, markdown_report, terminal_report

    extra = []
    if args.mlflow:
        import os

        from stackelberg.evaluation.mlflow_runs import logged_evaluations, provenance_table
        from stackelberg.params import TrackingParams

        uri = (
            args.tracking_uri
            or os.environ.get("MLFLOW_TRACKING_URI")
            or TrackingParams().tracking_uri
        )
        try:
            logged = logged_evaluations(args.mlflow, uri)
        except ValueError as err:
            raise UsageError(str(err)) from None
        if not logged:
            raise UsageError(f"MLflow experiment {args.mlflow!r}: no finished evaluate run")
        metrics = {e.game: e.metrics for e in logged}
        extra.append(provenance_table(logged, args.mlflow))
    else:
        try:
            metrics = load_metrics(args.path)
        except (FileNotFoundError, ValueError) as err:
            raise UsageError(str(err)) from None
    if args.markdown:
        print(markdown_report(metrics, extra_tables=extra))
    else:
        print(terminal_report(metrics, extra))
    return 0


def cmd_view(args: argparse.Namespace) -> int:
    """Static HTML pages of the games in a records file, with an index."""
    from pathlib import Path

    from stackelberg.viewer import ViewError, load_entries, render_pages, speech_notes, write_pages

    path = Path(args.path)
    out = Path(args.out) if args.out else Path("view") / path.stem
    try:
        entries = load_entries(path)
        notes = speech_notes(path) if path.suffix == ".parquet" else {}
        pages = render_pages(entries, str(path), reveal=args.reveal, notes=notes)
        write_pages(pages, out)
    except ViewError as err:
        raise UsageError(str(err)) from None
    known = f"; intents or rewards for {len(notes)} speeches" if notes else ""
    print(f"wrote {len(entries)} game pages and {out / 'index.html'}{known}")
    return 0


def cmd_sotopia_import(args: argparse.Namespace) -> int:
    """The tasks of a public Sotopia split as a scenarios file in the project's format."""
    import yaml

    from stackelberg.games.sotopia_scenarios import load_public

    data = load_public(args.path, args.split)
    with atomic_writer(args.out) as out:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
        (out or sys.stdout).write(text)
    n = len(data["scenarios"])
    if args.out:
        print(f"wrote {n} scenarios ({args.split} split) to {args.out}", file=sys.stderr)
        print(f"play them with the game option scenarios: {args.out}", file=sys.stderr)
    return 0


def cmd_params(args: argparse.Namespace) -> int:
    """Check a params file (every key, the model pairings, the agents) or explain the keys."""
    from stackelberg.params import ParamsError, explain, load_params

    if args.explain:
        from tabulate import tabulate

        rows = explain()
        print(
            tabulate(rows, headers=("key", "default", "what it sets"), maxcolwidths=[None, 28, 60])
        )
        return 0
    try:
        params = load_params(args.path)
    except ParamsError as err:
        raise UsageError(str(err)) from None
    print(f"{args.path}: ok ({len(params.games)} games: {', '.join(params.games)})")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """The trained Refiner as an OpenAI-compatible service, until interrupted."""
    from pydantic import ValidationError

    from stackelberg.serving.bodies import ServeLimits
    from stackelberg.serving.server import ServeError, serve
    from stackelberg.settings import one_line

    given = {k: v for k in ServeLimits.model_fields if (v := getattr(args, k)) is not None}
    try:
        limits = ServeLimits(**given)
    except ValidationError as err:
        flags = re.sub(
            r"(^|; )(\w+):", lambda m: f"{m[1]}--{m[2].replace('_', '-')}:", one_line(err)
        )
        raise UsageError(flags) from None
    try:
        serve(args.refiner, args.params, args.measurer, args.host, args.port, limits)
    except ServeError as err:
        raise UsageError(str(err)) from None
    except KeyboardInterrupt:
        print("stackelberg serve: stopped", file=sys.stderr)
    return 0


def _backend(args: argparse.Namespace):
    from stackelberg.llm import make_llm

    config: dict[str, Any] = {"backend": args.backend}
    if args.model:
        config["model"] = args.model
    if args.base_url:
        config["base_url"] = args.base_url
    if args.no_cache:
        config["cache"] = "off"
    return make_llm(config)


def _progress(total: int, desc: str, always: bool = False):
    """A bar on a terminal for many games (or slow ones); none for a few quick ones or off a
    terminal, where the transcript and the summary are the output."""
    from tqdm import tqdm

    from stackelberg.progress import progress

    if (total < 20 and not always) or not sys.stderr.isatty():
        return tqdm(total=total, disable=True)
    return progress(total, desc, "game")
