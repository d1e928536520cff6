"""Reading game records for the viewer: a JSONL file of records (``play --out``, tournament
records kept with their game record), a self-play parquet and the intents and rewards the
pipeline wrote beside it, or the evaluate stage's tournament records."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any

from stackelberg.datasets import DatasetError, read_dataset
from stackelberg.games import GAME_NAMES

RECORD_KEYS = frozenset({"game", "seed", "players", "events", "result"})


class ViewError(ValueError):
    """Input the viewer cannot show, or an output folder it must not replace: one line."""


@dataclass(frozen=True)
class Entry:
    """One game to show: its record, the record's JSON (restore's cache key) and where it
    came from (a tournament's condition and camp, or empty)."""

    record: dict[str, Any]
    source: str
    label: str = ""

    @property
    def name(self) -> str:
        return f"{self.record['game']}-{self.record['seed']}"


def load_entries(path: str | os.PathLike) -> list[Entry]:
    """The games of a JSONL file (``play --out`` lines, or tournament records kept with
    their ``game_record``) or of a self-play parquet; ViewError on anything else."""
    path = Path(path)
    if not path.exists():
        raise ViewError(f"{path}: not found")
    if path.is_dir():
        raise ViewError(f"{path}: is a folder; give a JSONL file of game records or a parquet")
    if path.suffix == ".parquet":
        try:
            texts = read_dataset(path, "selfplay")["record"].to_list()
        except DatasetError as err:
            raise ViewError(str(err)) from None
        entries = [_entry(t, f"{path}: row {i + 1}") for i, t in enumerate(texts)]
    else:
        entries = list(_jsonl_entries(path))
    if not entries:
        raise ViewError(f"{path}: no game records")
    return entries


def _jsonl_entries(path: Path):
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise ViewError(f"{path}: not a text file of JSON lines") from None
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield _entry(line, f"{path}:{number}")


def _entry(text: str, where: str) -> Entry:
    try:
        item = json.loads(text)
    except json.JSONDecodeError:
        raise ViewError(f"{where}: not JSON") from None
    label = ""
    if isinstance(item, dict) and "condition" in item:
        if "game_record" not in item:
            raise ViewError(
                f"{where}: a tournament summary without its game_record (play_matrix "
                "keep_games=True keeps it)"
            )
        label = f"{item['condition']} holds the {item.get('camp', '?')} camp"
        item = item["game_record"]
    if not (
        isinstance(item, dict)
        and RECORD_KEYS <= set(item)
        and item["game"] in GAME_NAMES
        and isinstance(item["seed"], int)
    ):
        raise ViewError(f"{where}: not a game record (see docs/records.md)")
    return Entry(item, json.dumps(item), label)


def speech_notes(selfplay: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """What the pipeline knows about self-play speeches, by instance id (``G-SEED-EVENT``):
    the labeled intents (``data/intents/G.parquet``) and the Measurer's reward of the base
    utterance (``data/scores/G.parquet``), found beside ``data/selfplay/G.parquet``.
    Missing files give no notes; each note keeps the utterance it is about, so a note from
    another self-play run is not pinned to a different speech."""
    selfplay = Path(selfplay)
    data = selfplay.parent.parent
    notes: dict[str, dict[str, Any]] = {}
    intents, scores = data / "intents" / selfplay.name, data / "scores" / selfplay.name
    try:
        if intents.exists():
            for row in read_dataset(intents, "intents").iter_rows(named=True):
                notes.setdefault(row["instance_id"], {}).update(
                    utterance=row["base_utterance"],
                    follower=row["follower"],
                    desired=row["desired"],
                    undesired=row["undesired"],
                    labeler=row["labeler_model"],
                )
        if scores.exists():
            for row in read_dataset(scores, "scores").iter_rows(named=True):
                if row["source"] == "base":
                    notes.setdefault(row["instance_id"], {"utterance": row["candidate"]}).update(
                        reward=row["reward"], positive=row["positive"], negative=row["negative"]
                    )
    except DatasetError as err:
        raise ViewError(str(err)) from None
    return notes


def tournament_entries(records: Sequence[dict[str, Any]], n: int) -> list[Entry]:
    """``n`` tournament games that kept their ``game_record``, to show: the first game of
    each condition, then the second of each, and so on, so that X and refiner+X sit side by
    side."""
    by_condition: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_condition.setdefault(r["condition"], []).append(r)
    rounds = zip_longest(*by_condition.values())
    picked = [r for row in rounds for r in row if r is not None][:n]
    return [
        Entry(r["game_record"], json.dumps(r["game_record"]), f"{r['condition']}, {r['camp']}")
        for r in picked
    ]
