"""select: speech turns that have a follower, de-duplicated, balanced, split by game seed."""

from __future__ import annotations

import json

from stackelberg.datasets import from_rows, read_dataset, write_dataset
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
    return select_balanced(rows, p.instances, test_seeds, p.seed)


def finish(ctx, results) -> dict:
    df = from_rows(results[0], "instances")
    write_dataset(df, ctx.path(), "instances")
    n_test = df.filter(df["split"] == "test").height
    return {"instances": df.height, "train": df.height - n_test, "test": n_test}
