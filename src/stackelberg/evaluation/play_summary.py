"""The numbers `stackelberg play` prints under its games, counted as metrics.json counts them.

Each game record is read as one tournament record per team dealt in it, that team's seats
the ones under test (the condition and the camp both name the team); ``metrics`` then
counts: ``win_rates`` gives each team's wins and the wins of the roles it was dealt (a role
counted once a game, won when a holder of it won), ``seat_counts`` the LLM seats' answers,
and ``score_metrics`` a scored game's dimensions (Sotopia: no win rates, as in
metrics.json).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from stackelberg.evaluation.dimension_scores import score_metrics
from stackelberg.evaluation.tournament import CHOICE_COUNTS, SPEECH_COUNTS, Record
from stackelberg.evaluation.tournament_stats import seat_counts, win_rates
from stackelberg.games import game_spec

#: bootstrap resamples of a scored game's dimension means (the summary prints the means)
SCORE_RESAMPLES = 200


def team_records(game_records: Iterable[Mapping[str, Any]]) -> list[Record]:
    """Each game record (docs/records.md) as one tournament record per team dealt in it."""
    out: list[Record] = []
    for rec in game_records:
        res = rec["result"]
        winners = set(res["winners"])
        scores = res.get("scores") or [None] * len(rec["players"])
        players = [
            {
                "id": p["id"],
                "role": p["role"],
                "team": p["team"],
                "won": p["id"] in winners,
                **({"scores": part["scores"]} if part and part.get("scores") else {}),
            }
            for p, part in zip(rec["players"], scores, strict=True)
        ]
        for team in dict.fromkeys(p["team"] for p in players):
            seats = [p for p in rec["players"] if p["team"] == team]
            out.append(
                {
                    "game": rec["game"],
                    "seed": rec["seed"],
                    "condition": team,
                    "camp": team,
                    "win": team in res["winner"].split("+"),
                    "reason": res["reason"],
                    "players": [p | {"tested": p["team"] == team} for p in players],
                    **{
                        k: sum(s.get(k, 0) for s in seats) for k in (*CHOICE_COUNTS, *SPEECH_COUNTS)
                    },
                }
            )
    return out


def play_summary(game_records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The summary of games of one game: ``games`` and distinct ``scenarios`` (0 where the
    game has none); per team its ``win_rates`` entry (under ``teams``: ``overall``, ``roles``)
    and the ``reasons`` of the games it won, or, for a scored game, its ``scores`` per team
    and dimension (``score_metrics``); and the LLM seats' counts summed over every seat
    (``choices``: ``CHOICE_COUNTS``, ``speeches``: ``SPEECH_COUNTS``; empty without LLM
    seats)."""
    game_records = list(game_records)
    records = team_records(game_records)
    games = {r["game"] for r in game_records}
    if len(games) > 1:
        raise ValueError(f"play_summary: records of several games: {sorted(games)}")
    dimensions = game_spec(games.pop()).dimensions if games else {}
    out: dict[str, Any] = {
        "games": len(game_records),
        "scenarios": len(
            {r["result"]["scenario"] for r in game_records if "scenario" in r["result"]}
        ),
    }
    if dimensions:
        scores = score_metrics(records, dimensions, [], SCORE_RESAMPLES)
        out["scores"] = scores["conditions"]
    else:
        out["teams"] = win_rates(records)
        reasons: dict[str, Counter[str]] = {team: Counter() for team in out["teams"]}
        for r in records:
            if r["win"]:
                reasons[r["condition"]][r["reason"]] += 1
        out["reasons"] = {team: dict(c.most_common()) for team, c in reasons.items()}
    llm_seats = any("speech_asks" in p for rec in game_records for p in rec["players"])
    for block, keys in (("choices", CHOICE_COUNTS), ("speeches", SPEECH_COUNTS)):
        counts = seat_counts(records, keys).values()
        out[block] = {k: sum(c[k] for c in counts) for k in keys} if llm_seats else {}
    return out


__all__ = ["SCORE_RESAMPLES", "play_summary", "team_records"]
