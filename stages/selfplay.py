"""selfplay: play seeded games with the configured agents; every record is kept whole."""

from __future__ import annotations

import json
from collections import Counter

from stackelberg.agents import LLM_AGENT_KINDS, make_agent, seat_agents
from stackelberg.agents.runner import Table, play_tables
from stackelberg.datasets import from_rows, write_dataset
from stackelberg.games import make_game
from stackelberg.params import draw_model


def plan(ctx) -> list[dict]:
    p = ctx.section
    seeds = list(range(p.seed, p.seed + p.games))
    step = p.batch_games
    return [
        {"label": f"seeds {s[0]}-{s[-1]}", "seeds": s}
        for s in (seeds[i : i + step] for i in range(0, len(seeds), step))
    ]


def work(ctx, item) -> list[dict]:
    p = ctx.section
    options = p.options
    probe = make_game(ctx.game, options).reset(item["seeds"][0])
    kinds = seat_agents(p.agents, probe.n_players)
    uses_llm = any(k in LLM_AGENT_KINDS for k in kinds)
    routes: dict[str, object] = {}
    tables = []
    for seed in item["seeds"]:
        route = None
        if uses_llm:  # each game draws its players' model, as the paper draws its backend
            config = draw_model(ctx.params.models.player, seed)
            route = config.model_dump_json()
            routes.setdefault(route, ctx.model(config))
        agents = [
            make_agent(k, ctx.game, llm=routes[route], route=route, **p.agent_options())
            if k in LLM_AGENT_KINDS
            else make_agent(k, ctx.game)
            for k in kinds
        ]
        tables.append(Table(make_game(ctx.game, options), agents, seed))
    records = play_tables(tables, routes or None)
    return [
        {
            "game": ctx.game,
            "seed": rec["seed"],
            "winner": rec["result"]["winner"],
            "agents": ",".join(kinds),
            "models": ",".join(seat.get("model") or "" for seat in rec["players"]),
            "record": json.dumps(rec),
            "speech_turns": json.dumps(table.speech_turns),
        }
        for rec, table in zip(records, tables, strict=True)
    ]


def finish(ctx, results) -> dict:
    rows = [r for chunk in results for r in chunk]
    df = from_rows(rows, "selfplay").sort("seed")
    write_dataset(df, ctx.path(), "selfplay")
    wins = Counter(df["winner"].to_list())
    return {"games": df.height, **{f"win_rate.{k}": v / df.height for k, v in wins.items()}}
