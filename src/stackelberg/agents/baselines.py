"""The paper's baseline players, each a ``StepsAgent``: named reasoning steps, one LLM call
each, then the speech or choice (scored or answered in words, as for ``direct``).

- ``recon`` (after ReCon, Wang et al. 2023, "Avalon's Game of Thoughts"): the first-order
  perspective (what the others hold and who sides with whom), a formulated draft of the
  move, then the act as the refinement of that draft from the others' point of view (the
  second-order perspective). 3 calls per decision, every game.
- ``lasi`` (after LASI, Lan et al. 2023, "LLM-Based Agent Society Investigation"): landscape
  analysis (skipped while nothing has happened), a strategy for the rest of the game (the
  previous one is shown and replaced), for a speech the action it serves, then the act
  (implementation). Speech 4 calls, a choice 3 (the choice is the action); one less before
  any history. Every game.
- ``belief`` (after "Learning to Discuss Strategically", Jin et al. 2024, without a
  tactic): before a speech or a vote, which card each player most likely holds now; night
  actions are one call. ONUW only.
- ``llm_ins`` (the same paper, LLM-instructed): the belief, then before a speech one of
  six speaking tactics (honest or deceptive evidence, accusation or defense) chosen like an
  option, then the speech in that tactic. Speech 3 calls, vote 2, night actions 1. ONUW
  only.
- ``metamind`` (after MetaMind, Zhang et al. 2025, as the paper's release plays it in
  Sotopia): the theory-of-mind reading of the other character (beliefs, desires,
  intentions, emotions), an approach that serves the goal within the situation's social
  norms, then the turn; its social memory of the other (notes kept across turns, updated
  from the latest exchange) is one more call once anything has happened. 3 calls a turn, 4
  with the memory update. Sotopia only.
"""

from __future__ import annotations

from typing import ClassVar

from stackelberg.agents.llm_agents import StepsAgent
from stackelberg.agents.prompting import (
    IN_TACTIC,
    PREVIOUS_NOTES,
    PREVIOUS_STRATEGY,
    SECOND_ORDER,
)
from stackelberg.agents.prompts import onuw
from stackelberg.games.base import SPEAK, Decision

#: decisions the ONUW belief players reason before (night actions take one call)
DAY_DECISIONS = (SPEAK, "vote")


class ReconAgent(StepsAgent):
    kind = "recon"

    def steps(self, decision: Decision) -> tuple[str, ...]:
        return ("first_order", "draft")

    def act_line(self, decision: Decision) -> str:
        return SECOND_ORDER


class LasiAgent(StepsAgent):
    kind = "lasi"

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self.strategy = ""  # the strategy set at the previous turn, kept across decisions

    def steps(self, decision: Decision) -> tuple[str, ...]:
        analysis = ("analysis",) if self.lines else ()
        action = ("action",) if decision.options is None else ()
        return (*analysis, "strategy", *action)

    def step_context(self, name: str) -> str:
        if name == "strategy" and self.strategy:
            return f"{PREVIOUS_STRATEGY}: {self.strategy}"
        return ""

    def remember(self, name: str, text: str) -> None:
        if name == "strategy":
            self.strategy = text


class BeliefAgent(StepsAgent):
    kind = "belief"
    games: ClassVar[tuple[str, ...] | None] = ("onuw",)

    def steps(self, decision: Decision) -> tuple[str, ...]:
        return ("belief",) if decision.kind in DAY_DECISIONS else ()


class LLMInstructedAgent(BeliefAgent):
    kind = "llm_ins"

    def steps(self, decision: Decision) -> tuple[str, ...]:
        return (*super().steps(decision), *(("tactic",) if decision.options is None else ()))

    def step_options(self, name: str) -> list[str] | None:
        if name == "tactic":
            return [f"{tactic}: {meaning}" for tactic, meaning in onuw.TACTICS]
        return None

    def act_line(self, decision: Decision) -> str:
        return IN_TACTIC if decision.options is None else ""


class MetaMindAgent(StepsAgent):
    kind = "metamind"
    games: ClassVar[tuple[str, ...] | None] = ("sotopia",)

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self.notes = ""  # the social memory: what it has learned of the other, across turns

    def steps(self, decision: Decision) -> tuple[str, ...]:
        update = ("social_memory",) if self.lines else ()
        return (*update, "mental_state", "social_strategy")

    def step_context(self, name: str) -> str:
        if name in ("social_memory", "mental_state") and self.notes:
            return f"{PREVIOUS_NOTES}: {self.notes}"
        return ""

    def remember(self, name: str, text: str) -> None:
        if name == "social_memory":
            self.notes = text


__all__ = ["BeliefAgent", "LLMInstructedAgent", "LasiAgent", "MetaMindAgent", "ReconAgent"]
