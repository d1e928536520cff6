"""Reading a stage's inputs: instance rows joined with the game records they come from."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import polars as pl

from stackelberg.datasets import read_dataset
from stackelberg.persuasion.context import InstanceView, instance_view

T = TypeVar("T")


def records_by_seed(ctx) -> dict[int, str]:
    games = read_dataset(ctx.path("selfplay"), "selfplay")
    return dict(zip(games["seed"].to_list(), games["record"].to_list(), strict=True))


def batches(df: pl.DataFrame, size: int) -> list[dict]:
    """Work items of ``size`` instances each, named by their first and last instance."""
    ids = df["instance_id"].to_list()
    return [
        {"label": f"{chunk[0]}..{chunk[-1]}", "ids": chunk}
        for chunk in (ids[i : i + size] for i in range(0, len(ids), size))
    ]


def rows_and_views(ctx, dataset: str, ids: list[str]) -> tuple[list[dict], list[InstanceView]]:
    df = read_dataset(ctx.path({"instances": "select", "intents": "label"}[dataset]), dataset)
    wanted = df.filter(pl.col("instance_id").is_in(ids))
    records = records_by_seed(ctx)
    rows = wanted.to_dicts()
    return rows, [instance_view(records[r["seed"]], r) for r in rows]


def settings_from(cls: type[T], section: Any) -> T:
    """A library settings dataclass from the params section holding the same field names."""
    return cls(**{f.name: getattr(section, f.name) for f in dataclasses.fields(cls)})


def seed_of(instance_id: str) -> int:
    """A stable integer seed for an instance (its game seed and event index)."""
    _, seed, event = instance_id.rsplit("-", 2)
    return int(seed) * 10_000 + int(event)
