"""The declared schema of every pipeline dataset, checked on read and on write.

Datasets are parquet files (polars). A stage that reads a file with a missing column or a
column of the wrong type stops with one line naming the file, the column and the type it
expected, instead of failing somewhere downstream.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from stackelberg.io import atomic_path

INSTANCE = {
    "instance_id": pl.String,
    "game": pl.String,
    "seed": pl.Int64,
    "split": pl.String,  # train | test
    "event_index": pl.Int64,  # index of the speech event in the game record
    "speaker": pl.Int64,
    "speaker_role": pl.String,
    "follower": pl.Int64,
    "follower_role": pl.String,
    "speaker_model": pl.String,  # the self-play model of the seat ("" without an LLM)
    "follower_model": pl.String,
    "phase": pl.String,
    "round": pl.Int64,
    "base_utterance": pl.String,
}

SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "selfplay": {
        "game": pl.String,
        "seed": pl.Int64,
        "winner": pl.String,
        "agents": pl.String,
        "models": pl.String,  # the model of each seat, comma-separated ("" without an LLM)
        "record": pl.String,  # the game record (docs/records.md) as JSON
        "speech_turns": pl.String,  # JSON [[event index, speaker, follower or null], ...]
    },
    "instances": INSTANCE,
    "intents": {
        **INSTANCE,
        "desired": pl.List(pl.String),
        "undesired": pl.List(pl.String),
        # the other view's responses (label.both_views: full information or the speaker's
        # own, whichever label.full_information is not); null without both_views
        "other_desired": pl.List(pl.String),
        "other_undesired": pl.List(pl.String),
        "label_attempts": pl.Int64,
        "labeler_model": pl.String,
    },
    "candidates": {
        "instance_id": pl.String,
        "candidate_index": pl.Int64,  # -1: the base utterance itself
        "source": pl.String,  # base | refiner
        "refiner_output": pl.String,  # raw text as generated
        "candidate": pl.String,  # the parsed utterance
        "parsed": pl.Boolean,  # the output had a usable Response line
        "ended": pl.Boolean,  # it ended on its own before the token limit (the base: true)
    },
    "scores": {
        "instance_id": pl.String,
        "candidate_index": pl.Int64,
        "source": pl.String,
        "candidate": pl.String,
        "reward": pl.Float64,
        "positive": pl.Float64,
        "negative": pl.Float64,
        "raw": pl.Float64,
        "clamped": pl.Float64,
        "length_penalty": pl.Float64,
        "format_penalty": pl.Float64,  # -score.unparsed_penalty where the completion did not parse
        "words": pl.Int64,
        "pos_means": pl.List(pl.Float64),
        "neg_means": pl.List(pl.Float64),
        "pos_sums": pl.List(pl.Float64),
        "neg_sums": pl.List(pl.Float64),
        "variant": pl.String,
        "aggregation": pl.String,
        "history_cut": pl.Int64,  # history messages dropped to fit the Measurer's window
        # an ensemble Measurer's members, and the candidate's reward under each ([]: one model)
        "members": pl.List(pl.String),
        "member_rewards": pl.List(pl.Float64),
    },
}


class DatasetError(ValueError):
    """A dataset file that does not match its declared schema."""


class NothingToWorkWithError(DatasetError):
    """A stage's input, or its model's answers, leave it (nearly) nothing to work with: the
    stage stops there, in one line naming the cause, rather than a later stage failing on
    an empty dataset (the pipeline reports a DatasetError as a user's error, no traceback)."""

    @staticmethod
    def quote(answer: str, limit: int = 160) -> str:
        """A model's raw answer as the message quotes it: on one line, at most ``limit``
        characters."""
        flat = " ".join(answer.split())
        return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def check_schema(df: pl.DataFrame, name: str, where: str) -> pl.DataFrame:
    """Raise DatasetError naming the first missing or mistyped column; return df ordered."""
    schema = SCHEMAS[name]
    for column, dtype in schema.items():
        if column not in df.columns:
            raise DatasetError(f"{where}: missing column {column!r} ({dtype}) of dataset {name!r}")
        if df.schema[column] != dtype:
            raise DatasetError(
                f"{where}: column {column!r} has type {df.schema[column]}, expected {dtype}"
            )
    return df.select(list(schema))


def read_dataset(path: str | Path, name: str) -> pl.DataFrame:
    path = Path(path)
    if not path.exists():
        raise DatasetError(f"{path}: not found (run the stage that writes {name!r} first)")
    try:
        df = pl.read_parquet(path)
    except Exception as err:  # polars raises several kinds for a corrupt file
        raise DatasetError(f"{path}: not a readable parquet file ({type(err).__name__})") from None
    return check_schema(df, name, str(path))


def write_dataset(df: pl.DataFrame, path: str | Path, name: str) -> None:
    """Check the schema, then write atomically (a killed write leaves the old file or none)."""
    if df.is_empty() and not df.columns:
        df = pl.DataFrame(schema=SCHEMAS[name])
    df = check_schema(df, name, f"{path} (being written)")
    with atomic_path(path) as tmp:
        df.write_parquet(tmp)


def empty(name: str) -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMAS[name])


def from_rows(rows: list[dict], name: str) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=SCHEMAS[name]) if rows else empty(name)


def batches(df: pl.DataFrame, size: int) -> list[dict]:
    """Work items of ``size`` instances each, named by their first and last instance."""
    ids = df["instance_id"].to_list()
    return [
        {"label": f"{chunk[0]}..{chunk[-1]}", "ids": chunk}
        for chunk in (ids[i : i + size] for i in range(0, len(ids), size))
    ]


def of_split(df: pl.DataFrame, split: str) -> pl.DataFrame:
    """The rows of one split (``train`` or ``test``, as the select stage assigned them)."""
    return df.filter(pl.col("split") == split)


def labeled_split(path: str | Path, split: str, purpose: str) -> pl.DataFrame:
    """The labeled instances of one split (the label stage's intents at ``path``); with none
    to ``purpose``, the stage stops here in one line (NothingToWorkWithError)."""
    df = of_split(read_dataset(path, "intents"), split)
    if df.is_empty():
        raise NothingToWorkWithError(f"{path}: no {split} instances to {purpose}")
    return df


def game_of(instance_id: str) -> str:
    """The game an instance comes from (its id: game, seed, event index)."""
    return instance_id.rsplit("-", 2)[0]


def seed_of(instance_id: str) -> int:
    """A stable integer seed for an instance (its game seed and event index)."""
    _, seed, event = instance_id.rsplit("-", 2)
    return int(seed) * 10_000 + int(event)
