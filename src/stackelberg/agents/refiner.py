"""The Refiner: rewrite a base utterance so the next speaker responds as the speaker wants.

``refiner+X`` wraps any agent X: X decides everything and writes its speech as usual, then
the Refiner rewrites that speech (PAPER.md: "the agent decides what to say, the Refiner makes
it more persuasive"). The Refiner's prompt and output parser live here so that training
(which samples the Refiner) and play (which wraps agents) use the very same ones.
"""

from __future__ import annotations

import re
import types
from collections.abc import Generator, Sequence
from typing import Any

from stackelberg.agents.base import Agent
from stackelberg.agents.prompting import (
    PromptSpec,
    build_messages,
    clean_speech,
    fitted_messages,
    identity,
)
from stackelberg.agents.runner import Routed
from stackelberg.games.base import Decision, Game, player_name
from stackelberg.llm import GenerateRequest, Message

REFINER_ROUTE = "refiner"
GAME_TITLES = {"werewolf": "Werewolf", "avalon": "Avalon", "onuw": "One Night Ultimate Werewolf"}
_RESPONSE = re.compile(r"response\s*:\s*(.+)", re.I | re.S)
_ANALYSIS_LINE = re.compile(r"^\s*analysis\s*:.*$", re.I | re.M)


def refiner_spec(game: Game, speaker: int, follower: int | None, base: str) -> PromptSpec:
    """The Refiner's prompt: short on purpose (the game's name, not its rules), since every
    token of it is paid again in each GRPO step's forward and backward passes."""
    target = player_name(follower) if follower is not None else "the next speaker"
    system = (
        f"You play {GAME_TITLES.get(game.name, game.name)}. {identity(game, speaker)}\n"
        f"You improve your planned speech so that {target}, who speaks next, responds the way "
        "you want."
    )
    question = (
        f'Your planned speech: "{base}"\n'
        "Rewrite it to be more persuasive, keeping its claims. Answer in two lines:\n"
        "Analysis: <one sentence>\nResponse: <your new speech>"
    )
    return PromptSpec(system=system, question=question)


def refiner_messages(
    game: Game, speaker: int, follower: int | None, base: str, lines: Sequence[str]
) -> list[Message]:
    return build_messages(refiner_spec(game, speaker, follower, base), lines)


def parse_refiner_output(text: str, base: str) -> tuple[str, bool]:
    """The utterance in a Refiner output, and whether it had a usable ``Response:`` line.

    Without one, the text minus any Analysis line is used; if nothing is left, the base.

    >>> parse_refiner_output("Analysis: be firm.\\nResponse: I trust Player 2.", "x")
    ('I trust Player 2.', True)
    """
    m = _RESPONSE.search(text)
    if m and (utterance := clean_speech(m.group(1))):
        return utterance, True
    rest = clean_speech(_ANALYSIS_LINE.sub("", text))
    return (rest or base), False


class RefinerAgent(Agent):
    """``refiner+X``: X plays; its speeches go through the Refiner before they are said."""

    def __init__(
        self,
        inner: Agent,
        count_llm: Any,
        max_prompt_tokens: int = 1024,
        max_new_tokens: int = 64,
        temperature: float = 0.7,
        top_p: float = 0.9,
    ) -> None:
        self.inner = inner
        self.kind = f"refiner+{inner.kind}"
        self.count_llm = count_llm
        self.max_prompt_tokens = max_prompt_tokens
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.refined = 0
        self.parsed = 0

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self.inner.setup(game, player, rng)
        self.lines: list[str] = []

    def seat_facts(self) -> dict[str, Any]:
        return self.inner.seat_facts()

    def act(self, decision: Decision) -> Any:
        if decision.options is not None:
            return self.inner.act(decision)
        return self._refine(decision)

    def _refine(self, decision: Decision) -> Generator[list[Any], list[Any], Any]:
        follower = self.game.next_speaker()
        action = self.inner.act(decision)
        if isinstance(action, types.GeneratorType):
            action = yield from action
        for ev in self.new_events():
            if line := self.game.describe_event(ev, self.player):
                self.lines.append(line)
        spec = refiner_spec(self.game, self.player, follower, action)
        limit = min(self.max_prompt_tokens, self.count_llm.context_window)
        messages, _ = fitted_messages(self.count_llm, spec, self.lines, self.max_new_tokens, limit)
        request = GenerateRequest(
            messages,
            n=1,
            temperature=self.temperature,
            top_p=self.top_p,
            max_new_tokens=self.max_new_tokens,
            seed=self.rng.randrange(2**31),
        )
        [[text]] = yield [Routed(REFINER_ROUTE, request)]
        utterance, ok = parse_refiner_output(text, action)
        self.refined += 1
        self.parsed += ok
        return utterance
