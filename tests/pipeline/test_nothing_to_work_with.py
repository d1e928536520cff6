"""A stage whose input, or whose model's answers, leave it (nearly) nothing to work with stops
there in one line (NothingToWorkWithError, a user's error to the pipeline), instead of
writing an empty dataset for a later stage to fail on."""

from __future__ import annotations

import json
from types import SimpleNamespace

import polars as pl
import pytest

from stackelberg.agents import make_agent
from stackelberg.agents.refiner import Candidate
from stackelberg.agents.runner import Table, play_tables
from stackelberg.datasets import (
    SCHEMAS,
    NothingToWorkWithError,
    from_rows,
    labeled_split,
    write_dataset,
)
from stackelberg.games import make_game
from stackelberg.params import Params
from stages import label, sample, select


def context(tmp_path, section, **params) -> SimpleNamespace:
    """What a stage reads of its context: its section, params, game and paths."""
    return SimpleNamespace(
        section=section,
        params=Params(**params),
        game="werewolf",
        path=lambda stage=None: tmp_path / f"{stage or 'this'}.parquet",
    )


def selfplay(tmp_path, seeds) -> None:
    rows = []
    for seed in seeds:
        game = make_game("werewolf")
        n = game.reset(seed).n_players
        table = Table(game, [make_agent("scripted", "werewolf") for _ in range(n)], seed)
        rec = play_tables([table])[0]
        rows.append(
            {
                "game": "werewolf",
                "seed": seed,
                "winner": rec["result"]["winner"],
                "agents": "scripted",
                "models": "",
                "record": json.dumps(rec),
                "speech_turns": json.dumps(table.speech_turns),
            }
        )
    write_dataset(from_rows(rows, "selfplay"), tmp_path / "selfplay.parquet", "selfplay")


def one_line(err: pytest.ExceptionInfo) -> str:
    assert "\n" not in str(err.value)
    return str(err.value)


def test_select_stops_when_no_speech_is_an_instance(tmp_path):
    selfplay(tmp_path, [0, 1])
    ctx = context(tmp_path, Params().select.model_copy(update={"min_words": 500}))
    with pytest.raises(NothingToWorkWithError) as err:
        select.work(ctx, {"label": "all"})
    assert "select.min_words 500 words or more in 2 games: no instance" in one_line(err)


def test_select_stops_when_every_instance_is_held_out(tmp_path):
    selfplay(tmp_path, [0, 1])
    held_out = Params().select.model_copy(update={"test_fraction": 0.9})  # both games
    with pytest.raises(NothingToWorkWithError) as err:
        select.work(context(tmp_path, held_out), {"label": "all"})
    assert "come from the held-out games (select.test_fraction 0.9 of 2 games)" in one_line(err)
    chosen = select.work(context(tmp_path, Params().select), {"label": "all"})
    assert {r["split"] for r in chosen} == {"train", "test"}


def test_label_stops_with_no_instance_to_label(tmp_path):
    write_dataset(
        pl.DataFrame(schema=SCHEMAS["instances"]), tmp_path / "select.parquet", "instances"
    )
    with pytest.raises(NothingToWorkWithError) as err:
        label.plan(context(tmp_path, Params().label))
    assert one_line(err) == f"{tmp_path / 'select.parquet'}: no instances to label"


def test_a_stage_with_no_labeled_train_instance_stops(tmp_path):
    path = tmp_path / "label.parquet"
    empty = pl.DataFrame(schema=SCHEMAS["intents"])
    write_dataset(empty, path, "intents")
    with pytest.raises(NothingToWorkWithError) as err:
        labeled_split(path, "train", "train the Refiner on")
    assert one_line(err) == f"{path}: no train instances to train the Refiner on"


def candidates(parsed: list[bool]) -> list[list[dict]]:
    """One work item's candidates rows (the sample stage's ``work``)."""
    return [
        [
            sample._row(
                {"instance_id": "werewolf-1-9"},
                i,
                "refiner",
                Candidate(
                    "I trust you." if ok else "Analysis: the\nplayers", "I trust you.", ok, True
                ),
            )
            for i, ok in enumerate(parsed)
        ]
    ]


def test_sample_stops_when_no_candidate_parsed_and_the_follower_reads_parsed_ones(tmp_path):
    ctx = context(tmp_path, Params().sample)
    with pytest.raises(NothingToWorkWithError) as err:
        sample.finish(ctx, candidates([False, False]))
    assert one_line(err) == (
        "refiner models/base: none of its 2 candidates parsed as sample.output_format speech; "
        "one answer: 'Analysis: the players'"
    )
    assert not (tmp_path / "this.parquet").exists()
    assert sample.finish(ctx, candidates([False, True]))["parse_rate"] == 0.5
    raw = context(tmp_path, Params().sample, score={"candidate_text": "raw"})
    assert sample.finish(raw, candidates([False, False]))["parse_rate"] == 0.0  # a rate only
