"""A human seat: a person plays in the terminal against the agents.

The person reads what an LLM player in that seat reads (the rules, who they are, the game
so far as the prompts word it to them, the question), answers choices by number from
the legal options and speeches as free text. Bad input is asked again; end of input or
Ctrl-C raises ``HumanQuit`` so the command can stop with one line. Streams are injectable
so tests drive the seat with scripted input.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from stackelberg import INTERRUPTED_STATUS
from stackelberg.agents.base import Agent
from stackelberg.agents.prompting import history_lines, identity, option_label, rules_text
from stackelberg.games.base import Decision


class HumanQuit(Exception):
    """The person left (end of input or Ctrl-C); ``status`` is the exit status to use."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason)
        self.status = status


class HumanAgent(Agent):
    """Reads actions from ``stdin``, writes the game as the seat sees it to ``stdout``."""

    kind = "human"

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self._intro = False

    def say(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def ask(self, prompt: str) -> str:
        """One line of input (stripped); quits on end of input or Ctrl-C."""
        self.stdout.write(prompt)
        self.stdout.flush()
        try:
            line = self.stdin.readline()
        except KeyboardInterrupt:
            raise HumanQuit("interrupted", INTERRUPTED_STATUS) from None
        if not line:
            raise HumanQuit("end of input", 1)
        return line.strip()

    def show_news(self) -> None:
        """The rules and identity once, then every event line seen since the last decision."""
        if not self._intro:
            self._intro = True
            self.say(f"{rules_text(self.game)}\n\n{identity(self.game, self.player)}")
        for line in history_lines(self.game, self.player, self.new_events()):
            self.say(line)

    def act(self, decision: Decision) -> Any:
        self.show_news()
        self.say(f"Now: {decision.prompt}")
        if decision.options is None:
            while True:
                text = self.ask("Your speech (one line): ")
                if text:
                    return text
                self.say("Please say something (any text, then Enter).")
        labels = [option_label(o, decision.kind) for o in decision.options]
        if len(labels) == 1:
            self.say(f"Only one option: {labels[0]}.")
            return decision.options[0]
        for i, label in enumerate(labels, 1):
            self.say(f"  {i}) {label}")
        while True:
            answer = self.ask(f"Choose 1-{len(labels)}: ")
            if answer.isdigit() and 1 <= int(answer) <= len(labels):
                return decision.options[int(answer) - 1]
            self.say(f"Please type a number from 1 to {len(labels)}.")


__all__ = ["HumanAgent", "HumanQuit"]
