"""LLM players: ``direct`` (one prompt, then the act) and ``react`` (a thought, then the act).

Free speech is generated. A choice among legal options (votes, targets, teams, night
actions) is made in one of two ways (``choice``):

- ``score``: each option's words are scored as the answer and the most likely is taken
  (one batched forward; needs a backend with log-probabilities);
- ``generate``: the options are shown as a numbered list and the player answers in words
  (API chat models); an answer that names no legal option is asked again with a one-line
  reason, at most ``max_choice_attempts`` times, then a seeded random legal option is taken
  and counted in ``invalid_choices``;
- ``auto`` (default): ``score`` where the backend can score, else ``generate``.

Either way every move is legal. ``act`` returns a generator of LLM requests, so that the
runner batches the requests of many tables together.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from stackelberg.agents.base import Agent
from stackelberg.agents.choice import CHOICE_MODES, choice_question, parse_choice, reask
from stackelberg.agents.prompting import (
    PromptSpec,
    clean_speech,
    fitted_messages,
    option_label,
    player_spec,
    speech_question,
    speech_style,
)
from stackelberg.agents.runner import Routed
from stackelberg.games.base import ConfigError, Decision
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
        choice: str = "auto",
        max_choice_attempts: int = 3,
        choice_tokens: int = 24,
        route: str | None = None,
    ) -> None:
        if choice not in CHOICE_MODES:
            raise ConfigError(f"choice: {choice!r}; choose one of: {', '.join(CHOICE_MODES)}")
        if choice == "score" and not getattr(llm, "can_score", True):
            raise ConfigError(
                f"choice: score needs log-probabilities, which the {llm.name} backend "
                f"({llm.model}) does not give; use choice: generate or auto"
            )
        if max_choice_attempts < 1:
            raise ConfigError(f"max_choice_attempts must be at least 1, got {max_choice_attempts}")
        self.llm = llm
        self.choice = (
            choice
            if choice != "auto"
            else ("score" if getattr(llm, "can_score", True) else "generate")
        )
        self.max_choice_attempts = max_choice_attempts
        self.choice_tokens = choice_tokens
        #: the backend route of this player's requests (None: the table's default backend)
        self.route = route
        self.max_prompt_tokens = max_prompt_tokens
        self.speech_tokens = speech_tokens
        self.thought_tokens = thought_tokens  # react only: its thought before each act
        self.temperature = temperature
        self.top_p = top_p

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self.lines: list[str] = []
        self.history_cut = 0
        self.choice_asks = 0  # generated choices: answers asked for, re-asks included
        self.choice_reasks = 0
        self.invalid_choices = 0  # choices that fell back to a random legal option

    def seat_facts(self) -> dict[str, Any]:
        return {
            "model": getattr(self.llm, "model", None),
            "choice": self.choice,
            "choice_asks": self.choice_asks,
            "choice_reasks": self.choice_reasks,
            "invalid_choices": self.invalid_choices,
        }

    def _send(self, request: Any) -> Any:
        return request if self.route is None else Routed(self.route, request)

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
        labels = [option_label(o, decision.kind) for o in decision.options]
        if self.choice == "generate":
            return choice_question(decision.prompt, labels)
        return f"{decision.prompt}\nOptions: {'; '.join(labels)}.\nAnswer with one option only."

    def act(self, decision: Decision) -> Generator[list[Any], list[Any], Any]:
        return self._act(decision)

    def _act(self, decision: Decision, thought: str = "") -> Generator[list[Any], list[Any], Any]:
        self._refresh()
        if decision.options is not None and len(decision.options) == 1:
            return decision.options[0]
        question = self._question(decision)
        if thought:
            question = f"Your private thought: {thought}\n{question}"
        style = speech_style(self.game) if decision.options is None else ""
        spec = player_spec(self.game, self.player, question, style)
        if decision.options is None:
            messages = self._messages(spec, self.speech_tokens)
            [[text]] = yield [self._generate(messages, self.speech_tokens)]
            return clean_speech(text) or FALLBACK_SPEECH
        labels = [option_label(o, decision.kind) for o in decision.options]
        if self.choice == "generate":
            index = yield from self._generated_choice(spec, labels)
            return decision.options[index]
        messages = self._messages(spec, 16)
        [scores] = yield [self._send(ScoreRequest(messages, labels))]
        best = max(range(len(labels)), key=lambda i: mean(scores[i]))
        return decision.options[best]

    def _generated_choice(
        self, spec: PromptSpec, labels: list[str]
    ) -> Generator[list[Any], list[Any], int]:
        """Ask for an answer in words until it names a legal option; then a random one."""
        reserve = self.choice_tokens * self.max_choice_attempts
        messages = self._messages(spec, reserve)
        for attempt in range(self.max_choice_attempts):
            self.choice_asks += 1
            self.choice_reasks += attempt > 0
            [[answer]] = yield [self._generate(messages, self.choice_tokens)]
            parsed = parse_choice(answer, labels)
            if parsed.index is not None:
                return parsed.index
            messages = [
                *messages,
                {"role": "assistant", "content": answer.strip() or "(no answer)"},
                {"role": "user", "content": reask(parsed.reason, len(labels))},
            ]
        self.invalid_choices += 1
        return self.rng.randrange(len(labels))

    def _generate(self, messages: list[dict], max_new_tokens: int) -> Any:
        return self._send(
            GenerateRequest(
                messages,
                n=1,
                temperature=self.temperature,
                top_p=self.top_p,
                max_new_tokens=max_new_tokens,
                stop=("\n",),
                seed=self.rng.randrange(2**31),
            )
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
