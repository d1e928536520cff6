"""Sotopia: two characters with private goals talk in a social scenario.

The rules, options, scenario files and scores: docs/games.md, "Sotopia"; the events and
their data: docs/records.md. A turn's text becomes its action in ``parse_action``; the
rule-based scores are ``sotopia_scores``'s, the scenarios ``sotopia_scenarios``'s.
"""

from __future__ import annotations

import random
import re
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from stackelberg.games.base import (
    RECORD_IF_SET,
    SPEAK,
    Count,
    Decision,
    Event,
    Flag,
    Game,
    GameError,
    GameOptions,
    GameSpec,
    Player,
    player_name,
)
from stackelberg.games.sotopia_scenarios import ScenarioError, load_scenarios, select
from stackelberg.games.sotopia_scores import DIMENSIONS, rule_scores

CAMPS = ("first", "second")
ACTIONS = ("speak", "act", "none", "leave")
_LEAVE = re.compile(r"^\[leave\]\s*", re.I)
_NONE = re.compile(r"^\[none\]$", re.I)
_ACT = re.compile(r"^\*(.+)\*$|^\[action\]\s*(.+)$", re.I)
_FAREWELL = re.compile(r"\b(goodbye|i have to leave|i need to go|i have to go)\b", re.I)


def parse_action(text: str, farewell_leaves: bool = False) -> tuple[str, str]:
    """(action, text) of a turn's text: speak, act (``*...*``), none (``[none]`` or empty)
    or leave (``[leave] farewell``; with ``farewell_leaves``, also words that say goodbye)."""
    text = " ".join(text.split())
    if m := _LEAVE.match(text):
        return "leave", text[m.end() :]
    if farewell_leaves and _FAREWELL.search(text):
        return "leave", text
    if not text or _NONE.match(text):
        return "none", ""
    if m := _ACT.match(text):
        return "act", (m.group(1) or m.group(2)).strip()
    return "speak", text


class SotopiaConfig(GameOptions):
    #: a scenarios file in the project's format (None: the scenarios shipped with the package)
    scenarios: str | None = None
    #: which scenarios the seeds draw from: train, test or all
    split: Literal["train", "test", "all"] = "all"
    #: turns per character before the episode ends (release: 20)
    max_turns: Annotated[Count, Field(ge=1, le=50)] = 20
    #: rounds in which both characters do nothing before the episode ends (release: 2)
    max_stale_turns: Annotated[Count, Field(ge=1, le=10)] = 2
    #: who scores the episode: rules (keywords, offline) or llm (the evaluate stage's judge)
    evaluator: Literal["rules", "llm"] = "rules"
    #: release: words that say goodbye ("goodbye", "I have to go", ...) also leave
    farewell_leaves: Annotated[Flag, RECORD_IF_SET] = False

    @model_validator(mode="after")
    def _scenarios_load(self) -> SotopiaConfig:
        try:
            chosen = select(load_scenarios(self.scenarios), self.split)
        except ScenarioError as err:
            raise ScenarioError(f"sotopia: {err}") from None
        if not chosen:
            raise ScenarioError(f"sotopia: split={self.split!r}: the file has no such scenarios")
        return self


class Sotopia(Game):
    """The Sotopia engine (see the module docstring for the rules)."""

    spec = GameSpec(
        name="sotopia",
        title="Sotopia",
        options=SotopiaConfig,
        camps=CAMPS,
        tested_camps=CAMPS,
        dimensions=DIMENSIONS,
    )

    def _setup(self, roles: list[str] | None) -> None:
        pool = select(load_scenarios(self.config.scenarios), self.config.split)
        order = list(range(len(pool)))
        random.Random("sotopia-order").shuffle(order)
        if roles:  # a scenario by id
            found = [s for s in pool if s.id == roles[0]]
            if not found:
                raise GameError(f"sotopia: no scenario {roles[0]!r} in split {self.config.split!r}")
            scenario = found[0]
        else:
            scenario = pool[order[self.seed % len(pool)]]
        self.players = [Player(i, player_name(i), CAMPS[i], CAMPS[i]) for i in range(2)]
        self.turn = 0
        self.ended: str | None = None
        self.phase, self.round = "conversation", 1
        self.log(
            "scenario",
            None,
            {
                "id": scenario.id,
                "category": scenario.category,
                "setting": scenario.setting,
                "relationship": scenario.relationship,
                "profiles": [c.profile() for c in scenario.characters],
            },
        )
        for i, c in enumerate(scenario.characters):
            self.log(
                "character",
                i,
                {
                    "goal": c.goal,
                    "secret": c.secret,
                    "goal_keywords": list(c.goal_keywords),
                    "secret_words": list(c.secret_words),
                },
                [i],
            )

    # ---- flow ----------------------------------------------------------------------------
    def decision(self) -> Decision | None:
        if self.ended is not None or self.phase == "over":
            return None
        p = self.turn % 2
        return Decision(
            p,
            SPEAK,
            None,
            f"Your turn {self.turn // 2 + 1} of {self.config.max_turns}: say something, "
            "*do something* between asterisks, [none] to wait, or [leave] to end the "
            "conversation.",
        )

    def _apply(self, decision: Decision, action: Any) -> None:
        kind, text = parse_action(action, self.config.farewell_leaves)
        p = decision.player
        if kind == "speak":
            self.log("speech", p, {"text": text})
        elif kind == "none":
            self.log("none", p, {})
        else:
            self.log(kind, p, {"text": text})
        self.turn += 1
        turns = [e for e in self.events if e.type in ACTIONS[1:] or e.type == "speech"]
        stale = 2 * self.config.max_stale_turns
        if kind == "leave":
            self.ended = "left"
        elif len(turns) >= stale and all(e.type == "none" for e in turns[-stale:]):
            self.ended = "stale"
        elif self.turn >= 2 * self.config.max_turns:
            self.ended = "max_turns"
        if self.ended:
            self.log("end", None, {"reason": self.ended})
            self.phase = "end"
        else:
            self.round = self.turn // 2 + 1

    # ---- results -------------------------------------------------------------------------
    def _event(self, type: str, player: int | None = None) -> Event:
        return next(e for e in self.events if e.type == type and e.player == player)

    def turns(self) -> list[dict[str, Any]]:
        """Every turn as ``{"player", "action", "text"}``, in order."""
        return [
            {
                "player": e.player,
                "action": "speak" if e.type == "speech" else e.type,
                "text": e.data.get("text", ""),
            }
            for e in self.events
            if e.type == "speech" or e.type in ACTIONS[1:]
        ]

    def result(self) -> dict[str, Any]:
        end = [e for e in self.events if e.type == "end"]
        if not end:
            raise GameError("sotopia: the game is not finished")
        scenario = self._event("scenario")
        chars = [self._event("character", p).data for p in range(2)]
        scored = rule_scores(self.turns(), chars, scenario.data["category"])
        goals = [s["scores"]["goal"] for s in scored]
        best = [p for p in range(2) if goals[p] == max(goals)]
        winner = "draw" if len(best) == 2 else CAMPS[best[0]]
        return {
            "winner": winner,
            "winners": [] if winner == "draw" else best,
            "reason": end[0].data["reason"],
            "scenario": scenario.data["id"],
            "evaluator": "rules",
            "scores": scored,
        }

    # ---- views ---------------------------------------------------------------------------
    def next_speaker(self) -> int | None:
        d = self.decision()
        if d is None or self.turn + 1 >= 2 * self.config.max_turns:
            return None
        return 1 - d.player

    def private_knowledge(self, player: int) -> dict[str, Any]:
        """The player's own goal and secret (never the other's)."""
        own = self._event("character", player).data
        return {"goal": own["goal"], "secret": own["secret"]}

    def public_state(self) -> dict[str, Any]:
        s = self._event("scenario").data
        return {
            "scenario": s["id"],
            "category": s["category"],
            "setting": s["setting"],
            "relationship": s["relationship"],
            "profiles": list(s["profiles"]),
            "max_turns": self.config.max_turns,
        }


__all__ = ["ACTIONS", "CAMPS", "Sotopia", "SotopiaConfig", "parse_action"]
