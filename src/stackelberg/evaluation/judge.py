"""The LLM evaluator of scored games (Sotopia): each character scored on every dimension.

A game whose ``GameSpec`` has ``dimensions`` gets rule-based scores from its engine; when
its option ``evaluator`` is ``llm``, ``judge_records`` asks a backend instead, one prompt
per character: the whole episode as the narrator saw it (both goals and secrets), the
dimensions with their ranges, and a request for JSON. Answers are read leniently
(``parse_judgement``): the first JSON object in the text, a dimension as ``{"score",
"reason"}`` or a bare number; a value out of its range is clamped and counted. An answer
that misses a dimension or is not JSON is asked again, at most ``max_attempts`` times;
then the character's scores are recorded as a failure (``scores: null`` with the reason),
never raised, so that one bad answer does not lose a tournament.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stackelberg.agents.prompting import global_lines
from stackelberg.agents.prompts import prompts_of
from stackelberg.games import game_class, game_spec
from stackelberg.games.base import player_name
from stackelberg.llm import GenerateRequest

_OBJECT = re.compile(r"\{.*\}", re.S)


class JudgementError(ValueError):
    """An answer that cannot be used; the message is the one-line reason asked again with."""


@dataclass(frozen=True)
class Judgement:
    scores: dict[str, float]
    reasons: dict[str, str]
    #: values moved into their range
    clamped: int


def clamp(value: float, low: float, high: float) -> tuple[float, bool]:
    inside = min(max(value, low), high)
    return inside, inside != value


def parse_judgement(text: str, dimensions: Mapping[str, tuple[int, int]]) -> Judgement:
    """The scores of one answer; raises JudgementError naming what is wrong."""
    match = _OBJECT.search(text or "")
    if not match:
        raise JudgementError("The answer held no JSON object")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as err:
        raise JudgementError(f"The JSON did not parse ({err.msg})") from None
    if not isinstance(data, dict):
        raise JudgementError("The JSON was not an object")
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}
    clamped = 0
    for dim, (low, high) in dimensions.items():
        item = data.get(dim)
        reason = ""
        if isinstance(item, dict):
            reason = str(item.get("reason") or "")
            item = item.get("score")
        if isinstance(item, str):
            try:
                item = float(item.strip())
            except ValueError:
                item = None
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise JudgementError(f"No number for {dim}")
        scores[dim], moved = clamp(float(item), low, high)
        clamped += moved
        reasons[dim] = reason
    return Judgement(scores, reasons, clamped)


def judge_messages(record: Mapping[str, Any], player: int) -> list[dict[str, str]]:
    """The evaluator's prompt for one character of a finished game's record."""
    game = game_class(record["game"]).restore(dict(record))
    prompts = prompts_of(game.name)
    words = getattr(prompts, "DIMENSION_WORDS", {})
    lines = "\n".join(
        f"- {dim} ({low} to {high}): {words.get(dim, dim)}"
        for dim, (low, high) in game_spec(game.name).dimensions.items()
    )
    episode = "\n".join(global_lines(game, game.events))
    return [
        {"role": "system", "content": prompts.JUDGE.format(dimensions=lines)},
        {
            "role": "user",
            "content": f"The episode:\n{episode}\n\nEvaluate {player_name(player)}.",
        },
    ]


def judge_records(
    llm: Any,
    records: Sequence[dict[str, Any]],
    max_attempts: int = 3,
    max_new_tokens: int = 400,
    seed: int = 0,
) -> dict[str, int]:
    """Rescore the game records of a scored game in place with the LLM evaluator (batched
    over all characters of all records). Returns counts: judged, clamped, failures."""
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    jobs = [(r, p) for r in records for p in range(len(r["players"]))]
    messages = {i: judge_messages(r, p) for i, (r, p) in enumerate(jobs)}
    done: dict[int, Judgement] = {}
    errors: dict[int, str] = {}
    for attempt in range(max_attempts):
        todo = [i for i in messages if i not in done]
        if not todo:
            break
        requests = [
            GenerateRequest(
                messages[i],
                n=1,
                temperature=0.0 if attempt == 0 else 0.7,
                max_new_tokens=max_new_tokens,
                seed=seed + 1000 * attempt + i,
            )
            for i in todo
        ]
        for i, [answer] in zip(todo, llm.run_batch(requests), strict=True):
            record = jobs[i][0]
            try:
                done[i] = parse_judgement(answer, game_spec(record["game"]).dimensions)
            except JudgementError as err:
                errors[i] = str(err)
                messages[i] = [
                    *messages[i],
                    {"role": "assistant", "content": answer or "(no answer)"},
                    {"role": "user", "content": f"{err}. Answer again with the JSON only."},
                ]
    counts = {"judged": len(done), "clamped": 0, "failures": 0}
    for i, (record, player) in enumerate(jobs):
        result = record["result"]
        result["evaluator"] = "llm"
        part: dict[str, Any]
        if i in done:
            j = done[i]
            part = {"scores": j.scores, "reasons": j.reasons, "clamped": j.clamped}
            counts["clamped"] += j.clamped
        else:
            part = {"scores": None, "reasons": None, "failure": errors.get(i, "no answer")}
            counts["failures"] += 1
        result["scores"][player] = part
    return counts


def judge_tournament(llm: Any, records: Sequence[dict[str, Any]], **kwargs: Any) -> dict[str, int]:
    """Rescore tournament records played with ``keep_games`` (their ``game_record``) and
    copy each seat's new scores into the record's players (None where judging failed)."""
    counts = judge_records(llm, [r["game_record"] for r in records], **kwargs)
    for r in records:
        parts = r["game_record"]["result"]["scores"]
        for player, part in zip(r["players"], parts, strict=True):
            player["scores"] = part["scores"]
    return counts


__all__ = [
    "Judgement",
    "JudgementError",
    "judge_messages",
    "judge_records",
    "judge_tournament",
    "parse_judgement",
]
