"""Scripted Sotopia character: pursues its goal with templated moves, no LLM.

It knows its own goal keywords (from its private ``character`` event) and hears the other's
words. Moves, one per turn:

- offer: names the next goal keyword the other has not said yet ("Here is what I propose:
  300. Would that work for you?");
- counter-offer: insists on that keyword and asks to meet halfway;
- ask: asks what the other needs;
- concede: agrees to what the other asked for last, in its words (so the other's
  keywords are said back, which is how the rule-based evaluator sees a goal reached);
- leave: "[leave]" with thanks, once the other has said all its keywords, after conceding
  twice, or on its last turn.

The first turn is an offer; later turns draw counter-offer, ask or concede from the seat's
seeded stream, conceding more often as the turns run out. One turn in twenty lets the secret
slip ("To be honest, ..."), so that the secret dimension is not always at its best.
"""

from __future__ import annotations

import re

from stackelberg.agents.base import Agent
from stackelberg.agents.scripted import phrases
from stackelberg.games.base import Decision

LEAK_CHANCE = 0.05
#: what the other asked for, in the templates' words (and plain requests of LLM players)
ASKED = re.compile(r"\b(?:propose:|really need|agree on|i want|i need)\s+([^.?!]+)", re.I)


class SotopiaScripted(Agent):
    kind = "scripted"

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        own = next(e for e in game.events if e.type == "character" and e.player == player)
        self.keywords: list[str] = list(own.data["goal_keywords"])
        self.secret: str = own.data["secret"]
        self.heard: list[str] = []  # the other's utterances, in order
        self.turn = 0
        self.concessions = 0

    def _listen(self) -> None:
        for ev in self.new_events():
            if ev.player is not None and ev.player != self.player and ev.type in ("speech", "act"):
                self.heard.append(ev.data["text"])

    def _missing(self) -> list[str]:
        said = " ".join(self.heard).lower()
        return [k for k in self.keywords if k not in said]

    def _echo(self) -> str:
        """What the other asked for most recently (the words after "propose:", "need" or
        "agree on"), else the first words of its last utterance."""
        for said in reversed(self.heard):
            if m := ASKED.search(said):
                return m.group(1).strip()
        last = self.heard[-1] if self.heard else ""
        words = last.rstrip(".!?").split(".")[0].split()[:8]
        return " ".join(words).lower() if words else "as you say"

    def act(self, decision: Decision) -> str:
        self._listen()
        self.turn += 1
        turns = self.game.config.max_turns
        missing = self._missing()
        if self.turn > 1 and (not missing or self.concessions >= 2 or self.turn >= turns):
            return phrases.LEAVE
        if self.secret and self.rng.random() < LEAK_CHANCE:
            return f"To be honest, {self.secret[0].lower()}{self.secret[1:]}"
        target = missing[0] if missing else self.keywords[0]
        if self.turn == 1:
            return phrases.offer(target)
        concede = 0.2 + 0.6 * self.turn / turns
        draw = self.rng.random()
        if draw < concede and self.heard:
            self.concessions += 1
            return phrases.concede(self._echo())
        if draw < concede + 0.25:
            return phrases.ask(target)
        return phrases.insist(target)


#: the scripted agent of this game (``scripted_agent`` finds it by the module's name)
AGENT = SotopiaScripted
