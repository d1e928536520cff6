"""Training instances and the views around them, rebuilt from self-play game records.

An instance is one speech turn that has a follower: the speaker (leader) said the base
utterance at ``event_index``; the follower speaks next. From the record we rebuild what each
of them had seen just before that speech, which is what the labeler, the Refiner and the
Measurer's follower prompt read.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import Field

from stackelberg.agents.prompting import (
    build_messages,
    global_lines,
    history_lines,
    player_spec,
    speech_question,
    speech_style,
)
from stackelberg.agents.prompts.words import speech_line
from stackelberg.datasets import read_dataset
from stackelberg.games import Game, game_class
from stackelberg.games.base import player_name
from stackelberg.settings import Settings

CANDIDATE_SLOT = "\x00CANDIDATE\x00"


@lru_cache(maxsize=64)
def _load(record_json: str) -> tuple[Game, dict[str, Any]]:
    record = json.loads(record_json)
    return game_class(record["game"]).restore(record), record


def restore(record_json: str) -> Game:
    """The game of a record (cached: many instances share one game)."""
    return _load(record_json)[0]


def speech_instances(
    record: dict[str, Any], speech_turns: Sequence[Sequence[Any]], min_words: int
) -> list[dict[str, Any]]:
    """Every speech of a game that has a follower, as instance rows (before selection)."""
    rows = []
    players = record["players"]
    events = record["events"]
    for event_index, speaker, follower in speech_turns:
        ev = events[event_index]
        if follower is None or ev["type"] != "speech" or ev["player"] != speaker:
            continue
        text = ev["data"]["text"]
        if len(text.split()) < min_words:
            continue
        rows.append(
            {
                "instance_id": f"{record['game']}-{record['seed']}-{event_index}",
                "game": record["game"],
                "seed": record["seed"],
                "split": "",
                "event_index": event_index,
                "speaker": speaker,
                "speaker_role": players[speaker]["role"],
                "follower": follower,
                "follower_role": players[follower]["role"],
                "speaker_model": players[speaker].get("model") or "",
                "follower_model": players[follower].get("model") or "",
                "phase": ev["phase"],
                "round": ev["round"],
                "base_utterance": text,
            }
        )
    return rows


class SelectSettings(Settings):
    instances: int = Field(12, ge=1, description="instances to select (paper: 4000)")
    test_fraction: float = Field(0.25, gt=0, lt=1, description="share of game seeds held out")
    seed: int = Field(0, description="seed of the balanced draw and the split")
    min_words: int = Field(3, ge=1, description="speech shorter than this is not an instance")


def split_seeds(seeds: Iterable[int], test_fraction: float, seed: int) -> set[int]:
    """The game seeds held out for testing: no game feeds both train and test."""
    seeds = sorted(set(seeds))
    rng = random.Random(f"split:{seed}")
    rng.shuffle(seeds)
    n_test = max(1, round(len(seeds) * test_fraction)) if len(seeds) > 1 else 0
    return set(seeds[:n_test])


def select_balanced(
    rows: list[dict[str, Any]], target: int, test_seeds: set[int], seed: int
) -> list[dict[str, Any]]:
    """De-duplicate, then draw round-robin over (speaker role, phase) strata, per split.

    Each split gets its share of ``target`` (by the share of held-out seeds); inside a split
    every stratum is drawn in turn, so rare roles are not crowded out by common ones.
    """
    seen: set[tuple[str, str, str]] = set()
    unique = []
    for r in rows:
        key = (r["speaker_role"], r["follower_role"], " ".join(r["base_utterance"].lower().split()))
        if key not in seen:
            seen.add(key)
            unique.append({**r, "split": "test" if r["seed"] in test_seeds else "train"})
    rng = random.Random(f"select:{seed}")
    n_seeds = len({r["seed"] for r in unique}) or 1
    test_share = len(test_seeds & {r["seed"] for r in unique}) / n_seeds
    want = {"test": round(target * test_share)}
    want["train"] = target - want["test"]
    chosen = []
    for split in ("train", "test"):
        strata: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for r in unique:
            if r["split"] == split:
                strata[(r["speaker_role"], r["phase"])].append(r)
        for items in strata.values():
            rng.shuffle(items)
        keys = sorted(strata)
        taken = 0
        while taken < want[split] and any(strata[k] for k in keys):
            for k in keys:
                if strata[k] and taken < want[split]:
                    chosen.append(strata[k].pop())
                    taken += 1
    chosen.sort(key=lambda r: (r["split"] != "train", r["seed"], r["event_index"]))
    return chosen


@dataclass(frozen=True)
class InstanceView:
    """What the pipeline needs of one instance's game, rebuilt from the record."""

    game: Game
    speaker: int
    follower: int
    event_index: int
    base_utterance: str
    #: the game's record: its truth beyond the restored events (e.g. ONUW's final cards)
    record: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def lines(self, viewer: int) -> list[str]:
        """What ``viewer`` had seen just before the speech."""
        return history_lines(self.game, viewer, self.game.events[: self.event_index])

    def global_lines(self) -> list[str]:
        """Every event before the speech, as the game master saw it (the release's log)."""
        return global_lines(self.game, self.game.events[: self.event_index])

    def role_list(self) -> str:
        return "; ".join(f"{p.name}: {p.role.replace('_', ' ')}" for p in self.game.players)

    @property
    def speaker_name(self) -> str:
        return player_name(self.speaker)

    @property
    def follower_name(self) -> str:
        return player_name(self.follower)


def instance_view(record_json: str, row: dict[str, Any]) -> InstanceView:
    game, record = _load(record_json)
    return InstanceView(
        game,
        row["speaker"],
        row["follower"],
        row["event_index"],
        row["base_utterance"],
        record,
    )


def follower_messages(view: InstanceView, candidate: str, lines: Sequence[str]) -> list[dict]:
    """The follower's own LLM-agent prompt, with the candidate as the leader's latest words."""
    spec = player_spec(
        view.game,
        view.follower,
        speech_question(view.game, view.follower, "It is your turn to speak."),
        speech_style(view.game),
    )
    return build_messages(spec, [*lines, speech_line(view.speaker, candidate)])


def follower_prompt_pieces(llm: Any, view: InstanceView, lines: Sequence[str]) -> tuple[str, str]:
    """(context, joiner): the rendered follower prompt split where the candidate goes.

    The Measurer scores ``context + candidate + joiner + response``; the joiner closes the
    user turn and opens the follower's reply.
    """
    text = llm.render_chat(follower_messages(view, CANDIDATE_SLOT, lines))
    context, slot, joiner = text.partition(CANDIDATE_SLOT)
    if not slot:
        raise ValueError("the chat template dropped the candidate slot")
    return context, joiner


def instance_rows(
    rows_path: str | Path, dataset: str, selfplay_path: str | Path, ids: Sequence[str]
) -> tuple[list[dict], list[InstanceView]]:
    """The rows of ``ids`` in an instances or intents dataset, and the view of each, read
    from the self-play game it comes from."""
    df = read_dataset(rows_path, dataset)
    rows = df.filter(pl.col("instance_id").is_in(list(ids))).to_dicts()
    games = read_dataset(selfplay_path, "selfplay")
    records = dict(zip(games["seed"].to_list(), games["record"].to_list(), strict=True))
    return rows, [instance_view(records[r["seed"]], r) for r in rows]
