"""select: speech turns that have a follower, de-duplicated, balanced, split by game seed."""

from __future__ import annotations

import json

from stackelberg.datasets import NothingToWorkWithError, from_rows, read_dataset, write_dataset
from stackelberg.persuasion.context import select_balanced, speech_instances, split_seeds


def plan(ctx) -> list[dict]:
    return [{"label": "all"}]


def work(ctx, item) -> list[dict]:
    p = ctx.section
    games = read_dataset(ctx.path("selfplay"), "selfplay")
    rows = []
    for rec_json, turns in zip(games["record"], games["speech_turns"], strict=True):
        rows += speech_instances(json.loads(rec_json), json.loads(turns), p.min_words)
    test_seeds = split_seeds(games["seed"].to_list(), p.test_fraction, p.seed)
    chosen = select_balanced(rows, p.instances, test_seeds, p.seed)
    if not chosen:
        raise NothingToWorkWithError(
            f"{ctx.path('selfplay')}: no speech turn with a follower of select.min_words "
            f"{p.min_words} words or more in {games.height} games: no instance to select"
        )
    if not any(r["split"] == "train" for r in chosen):
        raise NothingToWorkWithError(
            f"{ctx.path('selfplay')}: all {len(chosen)} instances come from the held-out "
            f"games (select.test_fraction {p.test_fraction:g} of {games.height} games): "
            "none to train on; play more games (selfplay.games)"
        )
    return chosen


def finish(ctx, results) -> dict:
    df = from_rows(results[0], "instances")
    write_dataset(df, ctx.path(), "instances")
    n_test = df.filter(df["split"] == "test").height
    return {"instances": df.height, "train": df.height - n_test, "test": n_test}
