"""Tournaments by camp, the paper's protocol: the agent under test holds every seat of one
camp, a plain opponent agent (default ``direct``) holds all the others.

A condition names the tested agent: an agent kind (``direct``, ``react``, ``scripted``, ...),
``refiner+X``, which wraps X in the Refiner (its generations go to the ``refiner`` LLM
route; ``refiner-NAME+X``: a Refiner trained beside the game's own, on ``refiner-NAME``),
or ``bestN+X``, which says the Measurer's best of N untrained Refiner rewrites of X's
speech (``persuasion.best_of``: the ``refiner_base`` and ``measurer`` routes). Conditions
are compared on the same seeds: the engine deals roles from the seed and
every seat's agent has its own seeded stream (``runner.agent_rng``), which a wrapped X draws
from as it does unwrapped (the Refiner has a stream of its own, ``runner.derived_rng``), so
X and ``refiner+X`` meet exactly the same deals, and differ only by what the Refiner says
and what follows from it.

Roles are dealt inside ``reset``, so the seats of a camp are found by resetting a probe game
with the seed before the table is built (``camp_seats``). ONUW: a camp is the team of the
card DEALT (a player may end the night on another card; the result counts final cards). A
seed whose deal gives the camp no seat (e.g. no werewolf card among the ONUW players) is
skipped for that camp, for every condition alike, so pairing is kept.

All tables of a call are played together in batches (``play_tables``), so the LLM requests
of many games, conditions and camps share forward passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from stackelberg.agents import LLM_AGENT_KINDS, Agent, llm_agent_class, make_agent
from stackelberg.agents.refiner import REFINER_ROUTE, RefinerAgent, RefinerProfile
from stackelberg.agents.runner import Table, play_tables
from stackelberg.games import ConfigError, game_spec, make_game
from stackelberg.persuasion.best_of import (
    BEST_OF_COUNTS,
    BEST_OF_PREFIX,
    MEASURER_ROUTE,
    REFINER_BASE_ROUTE,
    BestOfAgent,
)
from stackelberg.persuasion.candidates import SampleSettings
from stackelberg.progress import progress

REFINER_PREFIX = "refiner+"
#: ``refiner-NAME+X``: a Refiner trained beside the game's own, by name (``Condition.refiner``)
_NAMED_REFINER = re.compile(r"refiner-([A-Za-z0-9_]+)\+(.*)", re.S)
#: ``bestN+X``: N (digits, or anything else up to the first "+": refused), then X
_BEST_OF = re.compile(rf"{BEST_OF_PREFIX}([^+]*)\+(.*)", re.S)
#: how the LLM seats of a game chose by generation: answers asked, re-asks, random fallbacks
CHOICE_COUNTS = ("choice_asks", "choice_reasks", "invalid_choices")
#: how the LLM seats' speeches came out: samples asked, re-asks of echoes, fallback lines
SPEECH_COUNTS = ("speech_asks", "speech_reasks", "fallback_speeches")
DEFAULT_ROUTE = "default"

Record = dict[str, Any]


class Condition(NamedTuple):
    """A condition's agent kind X, and what its speeches go through: the trained Refiner
    (``refiner+X``; ``refiner-NAME+X``: the one named ``refiner``, trained beside the game's
    own: ``joint``, the joint Refiner, or one of ``grpo.ablations`` and ``grpo.views``), or
    the Measurer's best of ``best_of`` untrained Refiner samples (``bestN+X``; 0: not so)."""

    kind: str
    refined: bool = False
    best_of: int = 0
    refiner: str = ""

    @property
    def refiner_route(self) -> str:
        """The route of this condition's Refiner: the game's own, or one per name."""
        return f"{REFINER_ROUTE}-{self.refiner}" if self.refiner else REFINER_ROUTE

    @property
    def wrapped(self) -> bool:
        return self.refined or bool(self.best_of)


def parse_condition(condition: str) -> Condition:
    """``"refiner+react"`` -> ``Condition("react", refined=True)``; ``"refiner-joint+react"``
    -> ``Condition("react", refined=True, refiner="joint")``; ``"best4+react"`` ->
    ``Condition("react", best_of=4)``; ``"direct"`` -> ``Condition("direct")``."""
    bad = (
        f"bad condition {condition!r}; use an agent kind X, 'refiner+X', 'refiner-NAME+X' or "
        f"'{BEST_OF_PREFIX}N+X' (N >= 1, e.g. '{BEST_OF_PREFIX}4+direct')"
    )
    if condition.startswith(REFINER_PREFIX):
        parsed = Condition(condition[len(REFINER_PREFIX) :], refined=True)
    elif named := _NAMED_REFINER.fullmatch(condition):
        parsed = Condition(named.group(2), refined=True, refiner=named.group(1))
    elif best := _BEST_OF.fullmatch(condition):
        if not re.fullmatch(r"[1-9][0-9]*", best.group(1)):
            raise ConfigError(bad)
        parsed = Condition(best.group(2), best_of=int(best.group(1)))
    else:
        return Condition(condition)
    if not parsed.kind or parse_condition(parsed.kind).wrapped:
        raise ConfigError(bad)
    return parsed


def best_of_played(conditions: Iterable[str]) -> bool:
    """Whether a ``bestN+X`` condition is among ``conditions``: its tables need the
    untrained Refiner and the Measurer."""
    return any(parse_condition(c).best_of for c in conditions)


def seeds_by_condition(
    conditions: Sequence[str], seeds: Iterable[int] | Mapping[str, Iterable[int]]
) -> dict[str, list[int]]:
    """Each condition's seeds: one list for every condition, or each its own (a mapping by
    condition: cheap conditions can play many seeds beside LLM players' few)."""
    if isinstance(seeds, Mapping):
        return {c: list(seeds[c]) for c in conditions}
    shared = list(seeds)
    return {c: shared for c in conditions}


def _check_camp(game_name: str, camp: str) -> None:
    camps = game_spec(game_name).camps
    if camp not in camps:
        raise ConfigError(f"{game_name}: unknown camp {camp!r}; choose one of: {', '.join(camps)}")


def camp_seats(
    game_name: str, seed: int, camp: str, options: Mapping[str, Any] | None = None
) -> list[int]:
    """Seats (0-based) whose DEALT team is ``camp`` in the deal of ``seed``."""
    _check_camp(game_name, camp)
    game = make_game(game_name, dict(options or {}))
    game.reset(seed)
    return [p.id for p in game.players if p.team == camp]


def as_routes(llm: Any) -> dict[str, Any]:
    """One backend, or a mapping route -> backend ("default" for plain agents), as a mapping."""
    if llm is None:
        return {}
    if isinstance(llm, Mapping):
        return dict(llm)
    return {DEFAULT_ROUTE: llm}


def build_agent(
    condition: str,
    game_name: str,
    llm_routes: Mapping[str, Any] | None = None,
    agent_options: Mapping[str, Any] | None = None,
    refiner: RefinerProfile | None = None,
    route: str = "default",
    best_of_options: Mapping[str, Any] | None = None,
) -> Agent:
    """The agent of a condition; LLM kinds get ``agent_options`` (e.g. speech_tokens) and
    the backend of ``route``; a Refiner, trained or not, runs as ``refiner`` says (its
    prompt, limit and sampling; the backend is the route's; None: the sample section's
    defaults, where no params are at hand); a best-of speaker also gets ``best_of_options``
    (``label`` and ``score``)."""
    parsed = parse_condition(condition)
    inner, refined, best_of = parsed.kind, parsed.refined, parsed.best_of
    routes = as_routes(llm_routes)
    options = dict(agent_options or {}) if inner in LLM_AGENT_KINDS else {}
    if inner in LLM_AGENT_KINDS and route != DEFAULT_ROUTE:
        options["route"] = route
    if inner in LLM_AGENT_KINDS:  # what a kind reads from a named route (rl_ins: its policy)
        for name, arg in getattr(llm_agent_class(inner), "route_args", {}).items():
            if name in routes:
                options[arg] = routes[name]
    agent = make_agent(inner, game_name, llm=routes.get(route), **options)
    refiner = refiner or SampleSettings().profile()
    if best_of:
        missing = [r for r in (REFINER_BASE_ROUTE, MEASURER_ROUTE) if r not in routes]
        if missing:
            raise ConfigError(
                f"condition {condition!r} needs the untrained Refiner and the Measurer: "
                f"llm_routes[{missing[0]!r}]"
            )
        return BestOfAgent(
            agent,
            best_of,
            routes[REFINER_BASE_ROUTE],
            routes[MEASURER_ROUTE],
            refiner,
            **dict(best_of_options or {}),
        )
    if not refined:
        return agent
    route_name = parsed.refiner_route
    if route_name not in routes:
        raise ConfigError(
            f"condition {condition!r} needs a Refiner backend: llm_routes[{route_name!r}]"
        )
    wrapped = RefinerAgent(agent, routes[route_name], refiner)
    wrapped.route = route_name  # its requests go to that Refiner
    return wrapped


def game_summary(
    table: Table, condition: str, camp: str, opponent: str, seats: list[int]
) -> Record:
    """The facts of one finished game that the metrics need (JSON-ready)."""
    game = table.game
    result = game.result()
    winners = set(result["winners"])
    winning_teams = result["winner"].split("+")
    final = result.get("final_roles")
    scores = result.get("scores")  # a scored game (Sotopia): each seat's dimensions
    players = [
        {
            "id": p.id,
            "role": p.role,
            "team": p.team,
            **({"final_role": final[p.id]} if final else {}),
            **({"scores": scores[p.id]["scores"]} if scores else {}),
            "tested": p.id in seats,
            "won": p.id in winners,
        }
        for p in game.players
    ]
    record: Record = {
        "game": game.name,
        "seed": table.seed,
        "condition": condition,
        "camp": camp,
        "opponent": opponent,
        "seats": seats,
        "players": players,
        "winner": result["winner"],
        "reason": result["reason"],
        "win": camp in winning_teams,
        "decisions": table.decisions,
    }
    facts = [a.seat_facts() for a in table.agents]
    for player, seat in zip(players, facts, strict=True):
        if seat.get("model"):
            player["model"] = seat["model"]
    for key in (*CHOICE_COUNTS, *SPEECH_COUNTS):
        record[key] = sum(seat.get(key, 0) for seat in facts)
    counts = [a.play_counts() for a in table.agents if isinstance(a, RefinerAgent)]
    for key in dict.fromkeys(k for seat in counts for k in seat):
        record[key] = sum(seat.get(key, 0) for seat in counts)
    return record


#: one game of a tournament matrix: the condition under test, its camp, the seed, its seats
Job = tuple[str, str, int, list[int]]


def matrix_games(
    game_name: str,
    conditions: Sequence[str],
    seeds: Iterable[int] | Mapping[str, Iterable[int]],
    camps: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    camps_in_turn: Collection[str] = (),
) -> list[Job]:
    """The games of a tournament matrix, in the order ``play_matrix`` plays them: by camp,
    then condition, then seed (``seeds``: ``seeds_by_condition``'s); a seed whose deal gives
    a camp no seat is left out. A condition of ``camps_in_turn`` plays each of its seeds in
    one camp, the camps in turn (its i-th seed the i-th camp, or the next one the deal
    seats), not in every camp: a few costly games spread over the camps (X and its wrapped
    forms alike, so pairs stay paired)."""
    camps = tuple(camps) if camps else game_spec(game_name).tested_camps
    by_condition = seeds_by_condition(conditions, seeds)
    every_seed = sorted({s for played in by_condition.values() for s in played})
    seats = {
        camp: {seed: camp_seats(game_name, seed, camp, options) for seed in every_seed}
        for camp in camps
    }

    def turn(i: int, seed: int) -> str | None:
        ordered = [camps[(i + k) % len(camps)] for k in range(len(camps))]
        return next((camp for camp in ordered if seats[camp][seed]), None)

    jobs: list[Job] = []
    for camp in camps:
        for condition in conditions:
            jobs += [
                (condition, camp, seed, seats[camp][seed])
                for i, seed in enumerate(by_condition[condition])
                if seats[camp][seed] and (condition not in camps_in_turn or turn(i, seed) == camp)
            ]
    return jobs


def play_matrix(
    game_name: str,
    conditions: Sequence[str],
    seeds: Iterable[int] | Mapping[str, Iterable[int]],
    camps: Sequence[str] | None = None,
    opponent: str = "direct",
    llm_routes: Any = None,
    agent_options: Mapping[str, Any] | None = None,
    refiner: RefinerProfile | None = None,
    options: Mapping[str, Any] | None = None,
    batch_games: int = 32,
    route_of_seed: Callable[[int], str | None] | None = None,
    keep_games: bool = False,
    on_game: Callable[[Record], None] | None = None,
    part: slice = slice(None),
    best_of_options: Mapping[str, Any] | None = None,
    camps_in_turn: Collection[str] = (),
) -> list[Record]:
    """Every (condition, camp, seed) game, played ``batch_games`` tables at a time.

    ``seeds``: one set for every condition, or each condition's (``seeds_by_condition``).
    Returns one record per game played (see ``game_summary``; with ``keep_games`` the full game
    record is under ``"game_record"``). ``llm_routes``: one backend or {"default": backend,
    "refiner": backend, ...} (``bestN+X``: also "refiner_base" and "measurer"); None for
    agents without an LLM; ``refiner`` and ``best_of_options``: ``build_agent``'s;
    ``camps_in_turn``: ``matrix_games``'. ``route_of_seed``: the route of
    the LLM players' backend on a seed's tables (a model drawn per game); default "default".
    ``part``: the games of ``matrix_games``' list to play (all by default); every game is
    seeded by its own seed, so the parts of a matrix, played apart, give its records.
    """
    if batch_games < 1:
        raise ConfigError(f"batch_games must be at least 1, got {batch_games}")
    seeds = seeds_by_condition(conditions, seeds)
    every_seed = {s for played in seeds.values() for s in played}
    routes = as_routes(llm_routes)
    if parse_condition(opponent).wrapped:
        raise ConfigError(f"the opponent must be a plain agent kind, got {opponent!r}")
    for camp in camps or ():
        _check_camp(game_name, camp)

    def route(seed: int) -> str:
        return (route_of_seed(seed) if route_of_seed else None) or DEFAULT_ROUTE

    for condition in (*conditions, opponent):  # fail on bad names before any game is played
        for r in {route(seed) for seed in every_seed} or {DEFAULT_ROUTE}:
            build_agent(condition, game_name, routes, agent_options, refiner, r, best_of_options)
    jobs = matrix_games(game_name, conditions, seeds, camps, options, camps_in_turn)[part]

    def table(condition: str, camp: str, seed: int, seats: list[int]) -> Table:
        game = make_game(game_name, dict(options or {}))
        n = len(game.reset(seed).players)
        agents = [
            build_agent(
                condition if pid in seats else opponent,
                game_name,
                routes,
                agent_options,
                refiner,
                route(seed),
                best_of_options,
            )
            for pid in range(n)
        ]
        return Table(game, agents, seed)

    records: list[Record] = []
    bar = progress(len(jobs), f"{game_name} tournament", "game")
    for start in range(0, len(jobs), batch_games):
        chunk = jobs[start : start + batch_games]
        tables = [table(*job) for job in chunk]
        full = play_tables(tables, routes or None, on_finish=lambda _: bar.update(1))
        for (condition, camp, _, seats), t, game_record in zip(chunk, tables, full, strict=True):
            record = game_summary(t, condition, camp, opponent, seats)
            if keep_games:
                record["game_record"] = game_record
            records.append(record)
            if on_game:
                on_game(record)
    bar.close()
    return records


def batch_items(games: int, batch_games: int) -> list[dict]:
    """A tournament of ``games`` games as work items of ``batch_games`` tables each (each
    played with its LLM calls batched; on a cluster, items run in parallel)."""
    return [
        {"label": f"tournament games {a}-{min(a + batch_games, games) - 1}", "tables": [a, b]}
        for a in range(0, games, batch_games)
        if (b := min(a + batch_games, games))
    ]


def drop_game_records(records: Sequence[Record], keep: int) -> None:
    """Keep the ``game_record`` of the first ``keep`` records of each condition, in place
    (the rest are dropped: a tournament's records stay small)."""
    kept: dict[str, int] = {}
    for r in records:
        kept[r["condition"]] = kept.get(r["condition"], 0) + 1
        if kept[r["condition"]] > keep:
            del r["game_record"]


def refiner_rates(records: Iterable[Record]) -> dict[str, float] | None:
    """The trained Refiner's speeches in these games: how many, and the shares that ended
    before the token limit and that parsed (None: no refined seat spoke)."""
    records = list(records)
    refined = sum(r.get("refined", 0) for r in records)
    if not refined:
        return None
    return {
        "completions": refined,
        "ended_rate": sum(r.get("refiner_ended", 0) for r in records) / refined,
        "parse_rate": sum(r.get("refiner_parsed", 0) for r in records) / refined,
    }


def play_tournament(
    game_name: str,
    condition: str,
    camp: str,
    opponent: str = "direct",
    seeds: Iterable[int] = range(10),
    llm_routes: Any = None,
    agent_options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> list[Record]:
    """One condition holding one camp on the given seeds (see ``play_matrix`` for kwargs)."""
    _check_camp(game_name, camp)
    return play_matrix(
        game_name,
        [condition],
        seeds,
        camps=[camp],
        opponent=opponent,
        llm_routes=llm_routes,
        agent_options=agent_options,
        **kwargs,
    )


__all__ = [
    "BEST_OF_COUNTS",
    "Condition",
    "Record",
    "best_of_played",
    "build_agent",
    "camp_seats",
    "drop_game_records",
    "matrix_games",
    "parse_condition",
    "play_matrix",
    "play_tournament",
    "refiner_rates",
]
