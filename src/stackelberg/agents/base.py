"""What an agent is: a player's policy, from the decision it owes to a legal action.

An agent sees the game only through what its player may know: ``new_events()`` (the
events visible to it since it last looked), ``observation()`` (the full view as text and
data), its role, and the pending ``Decision``. Agents that need an LLM return a generator
from ``act`` that yields lists of LLM requests and receives their results, so that a runner
can batch the requests of many tables into one forward pass (see ``agents.runner``).
"""

from __future__ import annotations

import random
from typing import Any

from stackelberg.games.base import Decision, Event, Game, Observation


class Agent:
    """Base class: keeps the player's seat and a cursor into the event log."""

    #: The agent kind as named on the command line and in game records.
    kind: str = "agent"

    def setup(self, game: Game, player: int, rng: random.Random) -> None:
        """Called once after ``game.reset``; override to read private knowledge."""
        self.game = game
        self.player = player
        self.rng = rng
        self._cursor = 0
        self._notes: list[tuple[str, str]] = []

    @property
    def role(self) -> str:
        return self.game.players[self.player].role

    @property
    def team(self) -> str:
        return self.game.players[self.player].team

    def new_events(self) -> list[Event]:
        """Events visible to this player since the last call (including its own acts)."""
        events = self.game.visible_events(self.player, self._cursor)
        self._cursor = len(self.game.events)
        return events

    def observation(self) -> Observation:
        return self.game.observation(self.player)

    def act(self, decision: Decision) -> Any:
        """Return a legal action for ``decision`` (or a generator of LLM requests)."""
        raise NotImplementedError

    def seat_facts(self) -> dict[str, Any]:
        """What the game record keeps about this seat's play beyond its agent kind (an LLM
        player: its model and how it chose); empty for agents without an LLM."""
        return {}

    def note(self, step: str, text: str) -> None:
        """Keep one step of private reasoning for the record (``prompting.REASONING``)."""
        self._notes.append((step, text))

    def take_notes(self) -> list[tuple[str, str]]:
        """The reasoning steps kept since the last call, as (step, text); the runner logs
        them just before the action they led to."""
        notes, self._notes = getattr(self, "_notes", []), []
        return notes

    def speech_data(self) -> dict[str, Any]:
        """What the record adds to the data of the speech this agent has just made (the
        Refiner: the speech it rewrote); empty for most agents, so their records keep
        ``{text}`` only."""
        return {}


class RandomAgent(Agent):
    """Uniform over legal options; a fixed short line when asked to speak."""

    kind = "random"

    def act(self, decision: Decision) -> Any:
        if decision.options is None:
            return "I have nothing to add."
        return decision.options[self.rng.randrange(len(decision.options))]
