"""The `stackelberg` command: play games (or one seat yourself), look at them as HTML pages,
print evaluation reports, check and explain params files, serve the trained Refiner."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any, get_args

from stackelberg import INTERRUPTED_STATUS
from stackelberg.agents import AGENT_KINDS, LLM_AGENT_KINDS, check_kind, seat_agents
from stackelberg.agents.choice import CHOICE_MODES
from stackelberg.agents.human import HumanAgent, HumanQuit
from stackelberg.agents.llm_agents import MAX_SPEECH_ATTEMPTS
from stackelberg.agents.prompting import transcript_line
from stackelberg.agents.runner import Table, play_tables
from stackelberg.games import GAME_NAMES, Game, GameError, make_game
from stackelberg.games.sotopia_scenarios import TASK_FILES
from stackelberg.io import atomic_writer
from stackelberg.llm import LLMConfig, LLMError


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


def summarize(records: Iterable[dict[str, Any]]) -> str:
    """The games' numbers (``evaluation.play_summary``) as small text tables: wins by team
    and by role dealt (a scored game: its dimensions' means by team), and what the LLM
    seats' answers cost."""
    from tabulate import tabulate

    from stackelberg.evaluation.play_summary import play_summary

    summary = play_summary(records)
    distinct = f" ({summary['scenarios']} distinct scenarios)" if summary["scenarios"] else ""
    parts = [f"{summary['games']} games{distinct}"]
    if "scores" in summary:
        scores = summary["scores"]
        dims = [d for d in next(iter(scores.values()), {}) if d != "unscored"]
        rows = [[team, *(mean_cell(by_dim[d]) for d in dims)] for team, by_dim in scores.items()]
        parts.append(tabulate(rows, ("mean score by seat", *dims), disable_numparse=True))
    else:
        teams = sorted(summary["teams"].items(), key=lambda t: -t[1]["overall"]["wins"])
        rows = [
            (team, won_of(t["overall"]), pct(t["overall"]), reasons(summary["reasons"][team]))
            for team, t in teams
        ]
        headers = ("wins by team", "won/games", "rate", "why")
        parts.append(tabulate(rows, headers, colalign=("left", "right", "right")))
        roles = {role: r for _, t in teams for role, r in t["roles"].items()}  # one team each
        rows = [(role, won_of(roles[role]), pct(roles[role])) for role in sorted(roles)]
        headers = ("wins by role (dealt)", "won/games", "rate")
        parts.append(tabulate(rows, headers, colalign=("left", "right", "right")))
    return "\n\n".join(parts + llm_count_lines(summary))


#: the summary's rows of LLM seat counts: (row, the summary's block of its counts)
LLM_COUNT_ROWS = (("speeches", "speeches"), ("generated choices", "choices"))


def llm_count_lines(summary: dict[str, Any]) -> list[str]:
    """The LLM seats' speeches and generated choices, summed over the games: how many were
    made, the answers asked for and re-asked, and how many fell back (the fallback line, a
    random legal option), with the share of those made; nothing without LLM seats."""
    if not summary["speeches"]:
        return []
    from tabulate import tabulate

    rows = []
    for name, block in LLM_COUNT_ROWS:
        asked, reasked, fell = summary[block].values()  # in CHOICE_COUNTS / SPEECH_COUNTS order
        made = asked - reasked
        rows.append((name, made, asked, reasked, fell, f"{fell / max(made, 1):.1%}"))
    headers = ("LLM seats", "made", "asked", "re-asked", "fell back", "share")
    return [tabulate(rows, headers, colalign=("left", *["right"] * 5))]


def won_of(r: dict[str, Any]) -> str:
    return f"{r['wins']}/{r['n']}"


def pct(r: dict[str, Any]) -> str:
    return f"{r['rate'] or 0:.1%}"


def reasons(counts: dict[str, int]) -> str:
    return ", ".join(f"{reason} {k}" for reason, k in counts.items())


def mean_cell(part: dict[str, Any]) -> str:
    return f"{part['estimate']:.2f}" if part["n"] else "-"


def transcript(game: Game, res: dict[str, Any] | None = None) -> str:
    """The whole game as a narrator sees it; private events are marked, roles revealed last."""
    lines = [f"=== {game.name}, seed {game.seed}, {game.n_players} players ==="]
    last_phase = None
    for ev in game.events:
        header = (ev.phase, ev.round)
        if header != last_phase:
            lines.append(f"--- {ev.phase} {ev.round} ---")
            last_phase = header
        if text := transcript_line(game, ev):
            lines.append(text)
    return "\n".join(lines + result_lines(game, res))


def result_lines(game: Game, res: dict[str, Any] | None = None) -> list[str]:
    """Who won, and every player's role (ONUW: and the card held at the end, if moved);
    a scored game's dimensions (``res``: a result rescored by the LLM evaluator)."""
    res = res or game.result()
    final = res.get("final_roles")
    lines = [f"=== result: {res['winner']} wins ({res['reason']}) ==="]
    for p in game.players:
        moved = f", ends as {final[p.id]}" if final and final[p.id] != p.role else ""
        won = "  *won*" if p.id in res["winners"] else ""
        lines.append(f"  {p.name}: {p.role} ({p.team}{moved}){won}")
        part = (res.get("scores") or [{}] * game.n_players)[p.id] or {}
        for dim, value in (part.get("scores") or {}).items():
            why = (part.get("reasons") or {}).get(dim, "")
            lines.append(f"    {dim}: {value:g}" + (f" ({why})" if why else ""))
    return lines


def cmd_play(args: argparse.Namespace) -> int:
    if args.games < 1:
        raise UsageError(f"--games must be at least 1, got {args.games}")
    options = parse_sets(args.set)
    probe = make_game(args.game, options)
    probe.reset(args.seed)
    kinds = seat_agents(args.agents, probe.n_players)
    if args.human is not None:
        if not 1 <= args.human <= probe.n_players:
            raise UsageError(
                f"--human must be a seat from 1 to {probe.n_players}, got {args.human}"
            )
        kinds[args.human - 1] = HumanAgent.kind
    for kind in set(kinds) - {HumanAgent.kind}:
        check_kind(kind, args.game)  # before a backend loads
    from stackelberg.evaluation.tournament import DEFAULT_ROUTE, build_agent

    routes = trained_routes(kinds, args)  # loaded before a backend: a bad folder fails fast
    judged = options.get("evaluator") == "llm"  # a scored game's LLM evaluator
    llm = _backend(args) if judged or any(k in LLM_AGENT_KINDS for k in kinds) else None
    if llm is not None:
        routes[DEFAULT_ROUTE] = llm
    agent_options = {"choice": args.choice, "max_speech_attempts": args.max_speech_attempts}

    def seat(kind: str) -> Any:
        if kind == HumanAgent.kind:
            return HumanAgent()
        return build_agent(kind, args.game, routes, agent_options)

    for kind in set(kinds) - {HumanAgent.kind}:
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
            played = play_tables(tables, llm, on_finish=finished)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stackelberg", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    play = sub.add_parser("play", help="play seeded games and write their records")
    play.add_argument("game", choices=GAME_NAMES, help="which game")
    play.add_argument(
        "--agents",
        default="scripted",
        help="agent kind for every seat, or one per seat separated by commas: "
        + ", ".join(AGENT_KINDS),
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


if __name__ == "__main__":
    sys.exit(main())
