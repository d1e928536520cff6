"""LLM players: ``direct`` (one prompt, then the act), ``react`` (a thought, then the act),
and ``StepsAgent``, the players that reason in steps before they act (``react`` and the
multi-step players of ``agents.baselines``); each step's answer goes into the record as the
player's private reasoning.

Free speech is generated. A speech that is only an echo of the prompt (``spoken`` gives
nothing: a heading such as "The game so far:") is sampled again with another seed, derived
from the first (``attempt_seed``), at most ``max_speech_attempts`` times in all; then the
player says ``FALLBACK_SPEECH``, counted in ``fallback_speeches``.

A choice among legal options (votes, targets, teams, night
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

import hashlib
from collections.abc import Generator
from typing import Any, ClassVar

from stackelberg.agents.base import Agent
from stackelberg.agents.choice import CHOICE_MODES, choice_question, parse_choice, reask
from stackelberg.agents.prompting import (
    REASONING_STEPS,
    PromptSpec,
    clean_speech,
    fitted_messages,
    history_lines,
    option_label,
    player_spec,
    speech_question,
    speech_style,
    spoken,
)
from stackelberg.agents.runner import Routed
from stackelberg.games.base import SPEAK, ConfigError, Decision
from stackelberg.llm import GenerateRequest, ScoreRequest

FALLBACK_SPEECH = "I have nothing to add for now."
#: the default of ``max_speech_attempts`` (PlayerSettings states the pipeline's setting)
MAX_SPEECH_ATTEMPTS = 3
#: how a player with a no-LLM way to play speaks (rl_ins, strategist: the agent option
#: ``speech``): an LLM's words, or the scripted player's templates (no LLM at all)
SPEECH_MODES = ("llm", "template")


def check_speech_mode(speech: str) -> str:
    """``speech`` if it is one of ``SPEECH_MODES``, else ConfigError in one line."""
    if speech not in SPEECH_MODES:
        raise ConfigError(f"speech: {speech!r}; choose one of: {', '.join(SPEECH_MODES)}")
    return speech


NO_ANSWER = "(no answer)"


def attempt_seed(seed: int, attempt: int) -> int:
    """The seed of a request's ``attempt``-th sample (0: ``seed`` itself, so a first attempt
    and its cached answer are what they were before re-asks existed); a hash, not Python's
    ``hash``, so that runs and the response cache's keys are the same in every process."""
    if attempt == 0:
        return seed
    digest = hashlib.sha256(f"{seed}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 2**31


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
        reasoning_tokens: int = 48,
        choice: str = "auto",
        max_choice_attempts: int = 3,
        choice_tokens: int = 24,
        max_speech_attempts: int = MAX_SPEECH_ATTEMPTS,
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
        if max_speech_attempts < 1:
            raise ConfigError(f"max_speech_attempts must be at least 1, got {max_speech_attempts}")
        self.llm = llm
        self.choice = (
            choice
            if choice != "auto"
            else ("score" if getattr(llm, "can_score", True) else "generate")
        )
        self.max_choice_attempts = max_choice_attempts
        self.choice_tokens = choice_tokens
        self.max_speech_attempts = max_speech_attempts
        #: the backend route of this player's requests (None: the table's default backend)
        self.route = route
        self.max_prompt_tokens = max_prompt_tokens
        self.speech_tokens = speech_tokens
        self.thought_tokens = thought_tokens  # react only: its thought before each act
        #: the multi-step players (recon, lasi, belief, llm_ins, rl_ins): each step's answer
        self.reasoning_tokens = reasoning_tokens
        self.temperature = temperature
        self.top_p = top_p

    @classmethod
    def needs_llm(cls, options: dict[str, Any]) -> bool:
        """Whether this kind, with these options, asks an LLM (``make_agent`` refuses to
        build it without one)."""
        return True

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self.lines: list[str] = []
        self.history_cut = 0
        self.choice_asks = 0  # generated choices: answers asked for, re-asks included
        self.choice_reasks = 0
        self.invalid_choices = 0  # choices that fell back to a random legal option
        self.speech_asks = 0  # speeches: samples asked for, re-asks included
        self.speech_reasks = 0
        self.fallback_speeches = 0  # speeches said as FALLBACK_SPEECH

    def seat_facts(self) -> dict[str, Any]:
        return {
            "model": getattr(self.llm, "model", None),
            "choice": self.choice,
            "choice_asks": self.choice_asks,
            "choice_reasks": self.choice_reasks,
            "invalid_choices": self.invalid_choices,
            "speech_asks": self.speech_asks,
            "speech_reasks": self.speech_reasks,
            "fallback_speeches": self.fallback_speeches,
        }

    def _send(self, request: Any) -> Any:
        return request if self.route is None else Routed(self.route, request)

    def _refresh(self) -> None:
        self.lines += history_lines(self.game, self.player, self.new_events())

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
        return self._options_question(decision.prompt, labels)

    def _options_question(self, prompt: str, labels: list[str]) -> str:
        """A question with options, as the choice mode asks it: a numbered list to answer
        with a number, or the options in a line (their words are scored)."""
        if self.choice == "generate":
            return choice_question(prompt, labels)
        return f"{prompt}\nOptions: {'; '.join(labels)}.\nAnswer with one option only."

    def act(self, decision: Decision) -> Generator[list[Any], list[Any], Any]:
        return self._act(decision)

    def _act(self, decision: Decision, private: str = "") -> Generator[list[Any], list[Any], Any]:
        """The speech or choice; ``private`` (the player's own reasoning, one line per step)
        comes before the question."""
        self._refresh()
        if decision.options is not None and len(decision.options) == 1:
            return decision.options[0]
        question = self._question(decision)
        if private:
            question = f"{private}\n{question}"
        style = speech_style(self.game) if decision.options is None else ""
        spec = player_spec(self.game, self.player, question, style)
        if decision.options is None:
            return (yield from self._speech(spec))
        labels = [option_label(o, decision.kind) for o in decision.options]
        index = yield from self._choose(spec, labels)
        return decision.options[index]

    def _speech(self, spec: PromptSpec) -> Generator[list[Any], list[Any], str]:
        """The speech, sampled again while the model only echoes its prompt, then
        ``FALLBACK_SPEECH``. Every attempt asks the same prompt (its computed prefix is
        reused); only the seed differs."""
        messages = self._messages(spec, self.speech_tokens)
        seed = self.rng.randrange(2**31)  # drawn as before re-asks existed: same first sample
        for attempt in range(self.max_speech_attempts):
            self.speech_asks += 1
            self.speech_reasks += attempt > 0
            request = self._generate(messages, self.speech_tokens, attempt_seed(seed, attempt))
            [[text]] = yield [request]
            if speech := spoken(text):
                return speech
        self.fallback_speeches += 1
        return FALLBACK_SPEECH

    def _choose(self, spec: PromptSpec, labels: list[str]) -> Generator[list[Any], list[Any], int]:
        """The index of one of ``labels``, chosen as ``self.choice`` says: the most likely
        label (one scoring request), or an answer in words (``_generated_choice``)."""
        if self.choice == "generate":
            return (yield from self._generated_choice(spec, labels))
        messages = self._messages(spec, 16)
        [scores] = yield [self._send(ScoreRequest(messages, labels))]
        return max(range(len(labels)), key=lambda i: mean(scores[i]))

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

    def _generate(self, messages: list[dict], max_new_tokens: int, seed: int | None = None) -> Any:
        """A sampled answer; ``seed`` None draws one from the seat's stream."""
        return self._send(
            GenerateRequest(
                messages,
                n=1,
                temperature=self.temperature,
                top_p=self.top_p,
                max_new_tokens=max_new_tokens,
                stop=("\n",),
                seed=self.rng.randrange(2**31) if seed is None else seed,
            )
        )


class StepsAgent(LLMAgent):
    """An LLM player that reasons in named steps before it acts, one LLM call per step.

    Each step's answer is kept for the record as private reasoning (``Agent.note``) and
    shown, under its label, to the later steps and to the act. Subclasses say which steps a
    decision takes (``steps``) and may add a line to the act's question (``act_line``); a
    step that is a choice among fixed labels (``step_options``) is chosen the way the player
    chooses among legal options (scored, or answered in words).
    """

    #: the games this kind plays (None: every game); ``make_agent`` refuses the others
    games: ClassVar[tuple[str, ...] | None] = None

    def steps(self, decision: Decision) -> tuple[str, ...]:
        """The names (``REASONING_STEPS``) of the steps before the act on ``decision``."""
        return ()

    def step_options(self, name: str) -> list[str] | None:
        """The labels a step chooses from, or None for a step answered in free words."""
        return None

    def step_context(self, name: str) -> str:
        """A line the step's question starts with (e.g. the strategy kept from before)."""
        return ""

    def act_line(self, decision: Decision) -> str:
        """A last line of the private block, right before the question of the act."""
        return ""

    def step_tokens(self, name: str) -> int:
        return self.reasoning_tokens

    def remember(self, name: str, text: str) -> None:
        """Called with each step's answer; override to keep it across decisions."""

    def _act(self, decision: Decision, private: str = "") -> Generator[list[Any], list[Any], Any]:
        self._refresh()
        if decision.options is not None and len(decision.options) == 1:
            return decision.options[0]
        known = [private] if private else []
        for name in self.steps(decision):
            label, ask = REASONING_STEPS[name]
            parts = [decision.prompt, *known, self.step_context(name), ask]
            question = "\n".join(p for p in parts if p)
            if (labels := self.step_options(name)) is not None:
                question = self._options_question(question, labels)
                spec = player_spec(self.game, self.player, question)
                text = labels[(yield from self._choose(spec, labels))]
            else:
                spec = player_spec(self.game, self.player, question)
                tokens = self.step_tokens(name)
                messages = self._messages(spec, tokens)
                [[raw]] = yield [self._generate(messages, tokens)]
                text = clean_speech(raw, max_sentences=1 if name == "thought" else 2)
            self.note(name, text or NO_ANSWER)
            if text:  # an empty answer is recorded as such, and not shown to later steps
                self.remember(name, text)
                known.append(f"{label}: {text}")
        known.append(self.act_line(decision))
        return (yield from super()._act(decision, "\n".join(k for k in known if k)))


class TemplateSpeech:
    """Mixin of an LLM player whose speech a trained policy steers (rl_ins, lspo): with
    ``speech: template`` it plays with no LLM, its speeches the policy's templates and its
    other decisions the scripted player's, as the stage that trains the policy plays it."""

    speech: str
    #: the scripted player that plays its decisions under ``speech: template``
    speaker: Agent

    def set_speech_mode(self, speech: str) -> None:
        self.speech = check_speech_mode(speech)

    @classmethod
    def needs_llm(cls, options: dict[str, Any]) -> bool:
        return options.get("speech", "llm") != "template"

    def seat_facts(self) -> dict[str, Any]:
        return super().seat_facts() if self.speech == "llm" else {}  # type: ignore[misc]

    def act(self, decision: Decision) -> Any:
        if self.speech == "llm":
            return super().act(decision)  # type: ignore[misc]
        if decision.kind != SPEAK:
            return self.speaker.act(decision)
        return self.template_speech()

    def template_speech(self) -> str:
        """The speech the policy picks, said by ``speaker``'s template."""
        raise NotImplementedError


class ReactAgent(StepsAgent):
    """ReAct: a one-sentence thought first, then the speech or choice that follows from it."""

    kind = "react"

    def steps(self, decision: Decision) -> tuple[str, ...]:
        return ("thought",)

    def step_tokens(self, name: str) -> int:
        return self.thought_tokens
