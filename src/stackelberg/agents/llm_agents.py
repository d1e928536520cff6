"""LLM players: ``direct`` (one prompt, then the act) and ``react`` (a thought, then the act).

Free speech is generated; every choice among legal options (votes, targets, teams, night
actions) is made by scoring each option's words as the answer and taking the most likely,
so an LLM player can never make an illegal move. ``act`` returns a generator of LLM
requests, so that the runner batches the requests of many tables together.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from stackelberg.agents.base import Agent
from stackelberg.agents.prompting import (
    SPEECH_STYLE,
    PromptSpec,
    clean_speech,
    fitted_messages,
    option_label,
    player_spec,
    speech_question,
)
from stackelberg.games.base import Decision
from stackelberg.llm import GenerateRequest, ScoreRequest

FALLBACK_SPEECH = "I have nothing to add for now."


def mean(values: list[float]) -> float:
    return sum(values) / max(len(values), 1)


class LLMAgent(Agent):
    """A prompted LLM player (the paper's ``direct`` agent)."""

    kind = "direct"

    def __init__(
        self,
        llm: Any,
        max_prompt_tokens: int = 1024,
        speech_tokens: int = 48,
        temperature: float = 0.7,
        top_p: float = 0.9,
        thought_tokens: int = 40,
    ) -> None:
        self.llm = llm
        self.max_prompt_tokens = max_prompt_tokens
        self.speech_tokens = speech_tokens
        self.thought_tokens = thought_tokens  # react only: its thought before each act
        self.temperature = temperature
        self.top_p = top_p

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self.lines: list[str] = []
        self.history_cut = 0

    def _refresh(self) -> None:
        for ev in self.new_events():
            if line := self.game.describe_event(ev, self.player):
                self.lines.append(line)

    def _messages(self, spec: PromptSpec, reserve: int) -> list[dict]:
        """The prompt with the newest history that fits the budget.

        Where the kept history starts only moves forward, and when it must move it moves an
        eighth of the budget further than needed: the seat's next prompts then start the
        same way, and a backend reuses their computed start instead of recomputing all the
        history after every new line.
        """
        limit = min(self.max_prompt_tokens, self.llm.context_window)
        lines = self.lines[self.history_cut :]
        messages, dropped = fitted_messages(self.llm, spec, lines, reserve, limit)
        if 0 < dropped < len(lines):
            roomier, more = fitted_messages(self.llm, spec, lines, reserve + limit // 8, limit)
            if more < len(lines):
                messages, dropped = roomier, more
        self.history_cut += dropped
        return messages

    def _question(self, decision: Decision) -> str:
        if decision.options is None:
            return speech_question(self.game, self.player, decision.prompt)
        labels = "; ".join(option_label(o, decision.kind) for o in decision.options)
        return f"{decision.prompt}\nOptions: {labels}.\nAnswer with one option only."

    def act(self, decision: Decision) -> Generator[list[Any], list[Any], Any]:
        return self._act(decision)

    def _act(self, decision: Decision, thought: str = "") -> Generator[list[Any], list[Any], Any]:
        self._refresh()
        if decision.options is not None and len(decision.options) == 1:
            return decision.options[0]
        question = self._question(decision)
        if thought:
            question = f"Your private thought: {thought}\n{question}"
        style = SPEECH_STYLE if decision.options is None else ""
        spec = player_spec(self.game, self.player, question, style)
        if decision.options is None:
            messages = self._messages(spec, self.speech_tokens)
            [[text]] = yield [self._generate(messages, self.speech_tokens)]
            return clean_speech(text) or FALLBACK_SPEECH
        messages = self._messages(spec, 16)
        labels = [option_label(o, decision.kind) for o in decision.options]
        [scores] = yield [ScoreRequest(messages, labels)]
        best = max(range(len(labels)), key=lambda i: mean(scores[i]))
        return decision.options[best]

    def _generate(self, messages: list[dict], max_new_tokens: int) -> GenerateRequest:
        return GenerateRequest(
            messages,
            n=1,
            temperature=self.temperature,
            top_p=self.top_p,
            max_new_tokens=max_new_tokens,
            stop=("\n",),
            seed=self.rng.randrange(2**31),
        )


class ReactAgent(LLMAgent):
    """ReAct: a one-sentence thought first, then the speech or choice that follows from it."""

    kind = "react"

    def _act(self, decision: Decision, thought: str = "") -> Generator[list[Any], list[Any], Any]:
        self._refresh()
        if decision.options is not None and len(decision.options) == 1:
            return decision.options[0]
        spec = player_spec(
            self.game,
            self.player,
            f"{decision.prompt}\nBefore acting, think: in one sentence, what should you do now "
            "and why?",
        )
        messages = self._messages(spec, self.thought_tokens)
        [[text]] = yield [self._generate(messages, self.thought_tokens)]
        thought = clean_speech(text, max_sentences=1)
        return (yield from super()._act(decision, thought))
