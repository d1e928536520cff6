"""The Refiner: rewrite a base utterance so the next speaker responds as the speaker wants.

``refiner+X`` wraps any agent X: X decides everything and writes its speech as usual, then
the Refiner rewrites that speech (in the paper's words: "the agent decides what to say, the
Refiner makes it more persuasive"). The Refiner's prompt and output parser live here so that
training (which samples the Refiner) and play (which wraps agents) use the very same ones.
"""

from __future__ import annotations

import re
import types
from collections.abc import Generator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, NamedTuple

from pydantic import Field

from stackelberg.agents.base import Agent
from stackelberg.agents.prompting import (
    LOG_LABEL,
    PromptSpec,
    build_messages,
    clean_speech,
    fitted_messages,
    history_lines,
    identity,
    rules_text,
)
from stackelberg.agents.runner import Routed, derived_rng
from stackelberg.games.base import Decision, Game, player_name
from stackelberg.llm import GenerateRequest, LLMConfig, Message
from stackelberg.settings import Settings

REFINER_ROUTE = "refiner"
#: Output formats: ``speech``, the new speech alone on one line (the completion ends at the
#: line's end); ``analysis``, the release's two lines "Analysis: ..." then "Response: ...";
#: ``addition``, one sentence on one line said after the planned speech, which stays whole.
OutputFormat = Literal["speech", "analysis", "addition"]
_RESPONSE = re.compile(r"response\s*:\s*(.+)", re.I | re.S)
_ANALYSIS_LINE = re.compile(r"^\s*analysis\s*:.*$", re.I | re.M)
#: A line that is not a speech: a label ("Analysis: ..."), a game-log line echoed from the
#: prompt ("Night 1: ...", "Day 2: ..."), a heading ("The game so far:") or a remark in
#: parentheses ("(20 words)").
_NOT_SPEECH = re.compile(rf"^\s*(analysis\s*:|{LOG_LABEL}|\(.*\)\s*$)|:\s*$", re.I)
#: The prompt's label of a speech, echoed before one ("Your planned speech: ..."): dropped.
_SPEECH_LABEL = re.compile(
    r"^\s*(your\s+)?(new\s+|planned\s+|refined\s+)?(speech|sentence)\s*:\s*", re.I
)


class RefinerStyle(Settings):
    """How the Refiner is asked and how its completion ends: the one definition that
    candidate sampling, GRPO and play (``refiner+X``) all use (the ``sample`` section of
    params.yaml holds these keys)."""

    rules: bool = Field(
        False,
        description="the game's rules in the Refiner prompt (release); false: only the game's "
        "name, a short prompt (every prompt token is paid again in each GRPO step)",
    )
    output_format: OutputFormat = Field(
        "speech",
        description="speech: the new speech alone on one line, generation stops at the "
        "newline (a small model ends its utterance on its own); analysis: the release's "
        "'Analysis: ...' and 'Response: ...' lines, only end-of-sequence stops it; addition: "
        "one sentence on one line said after the planned speech, which is kept whole (a "
        "small model cannot drop the speech's claims; an unusable output adds nothing)",
    )
    speech_words: int = Field(20, ge=1, description="longest speech asked for (release: 100)")
    max_new_tokens: int = Field(
        48, ge=1, description="the Refiner's completion limit in sampling, GRPO and play"
    )

    @property
    def stop(self) -> tuple[str, ...]:
        """Where generation stops before the token limit (besides end-of-sequence)."""
        return () if self.output_format == "analysis" else ("\n",)


def refiner_spec(
    game: Game,
    speaker: int,
    follower: int | None,
    base: str,
    style: RefinerStyle = RefinerStyle(),  # noqa: B008 (frozen, so one shared default is safe)
) -> PromptSpec:
    """The Refiner's prompt under ``style``: who it is (and the rules, if asked), who speaks
    next, the planned speech, and what to write."""
    target = player_name(follower) if follower is not None else "the next speaker"
    setting = f"{rules_text(game)}\n\n" if style.rules else f"You play {game.spec.title}. "
    system = (
        f"{setting}{identity(game, speaker)}\n"
        f"You improve your planned speech so that {target}, who speaks next, responds the way "
        "you want."
    )
    planned = f'Your planned speech: "{base}"'
    if style.output_format == "speech":
        # Small models follow "one sentence" far better than a format to fill in, and the
        # planned speech last, right before the answer: asked so, the embedded 135M model
        # writes one line and ends it.
        question = (
            "Say your planned speech again, more persuasively and keeping its claims, in one "
            f"short sentence of at most {style.speech_words} words. Write only that sentence."
            f"\n{planned}"
        )
    elif style.output_format == "addition":
        question = (
            f"{planned}\nAdd one short sentence of at most {style.speech_words} words to say "
            f"after it, so that {target} responds the way you want. Write only that sentence."
        )
    else:
        question = (
            f"{planned}\nRewrite it to be more persuasive, keeping its claims and your "
            f"character, in at most {style.speech_words} words. Answer in two lines:\n"
            f"Analysis: <how you want {target} to respond, in one sentence>\n"
            "Response: <your new speech>"
        )
    return PromptSpec(system=system, question=question)


def refiner_messages(
    game: Game,
    speaker: int,
    follower: int | None,
    base: str,
    lines: Sequence[str],
    style: RefinerStyle = RefinerStyle(),  # noqa: B008
) -> list[Message]:
    return build_messages(refiner_spec(game, speaker, follower, base, style), lines)


def parse_refiner_output(
    text: str, base: str, output_format: OutputFormat = "speech"
) -> tuple[str, bool]:
    """The utterance in a Refiner output, and whether the output was usable as asked.

    A ``Response:`` line is used in either format. In the ``speech`` format the first
    non-empty line is the speech (an echoed "Your planned speech:" label dropped), unless
    it is a label, an echoed game-log line, a heading or a remark in parentheses. Otherwise (not parsed) the text minus any Analysis line is used; if nothing is
    left, the base. In the ``addition`` format the sentence so read follows the base, and
    an output not parsed adds nothing: the base alone.

    >>> parse_refiner_output("Analysis: be firm.\\nResponse: I trust Player 2.", "x", "analysis")
    ('I trust Player 2.', True)
    >>> parse_refiner_output("I trust Player 2, and so should you.", "x")
    ('I trust Player 2, and so should you.', True)
    >>> parse_refiner_output("Night 1: Player 3 died.", "I trust Player 2.")
    ('Night 1: Player 3 died.', False)
    >>> parse_refiner_output("I suspect Player 5.", "I trust Player 2.", "addition")
    ('I trust Player 2. I suspect Player 5.', True)
    >>> parse_refiner_output("Night 1: Player 3 died.", "I trust Player 2.", "addition")
    ('I trust Player 2.', False)
    """
    if output_format == "addition":
        sentence, parsed = parse_refiner_output(text, base, "speech")
        return (f"{base} {sentence}", True) if parsed else (base, False)
    m = _RESPONSE.search(text)
    if m and (utterance := clean_speech(m.group(1))):
        return utterance, True
    if output_format == "speech":
        line = next((x for x in text.split("\n") if x.strip()), "")
        utterance = clean_speech(_SPEECH_LABEL.sub("", line))
        if re.search(r"[a-z]", utterance, re.I) and not _NOT_SPEECH.search(utterance):
            return utterance, True
    rest = clean_speech(_ANALYSIS_LINE.sub("", text))
    return (rest or base), False


def completion_tokens(llm: Any, text: str) -> int:
    """Tokens of a generated text, counted with the model's tokenizer where the backend has
    one (``encode``: no special tokens added), else as its ``count_tokens`` counts them."""
    encode = getattr(llm, "encode", None)
    return len(encode(text, first=False)) if callable(encode) else int(llm.count_tokens(text))


def ended_before_limit(llm: Any, text: str, max_new_tokens: int) -> bool:
    """Whether a completion ended on its own (end-of-sequence or the style's stop) rather
    than at the token limit: the backends return text only, so its tokens are counted.

    A completion cut at a stop string lacks the stop's token, one that ended at
    end-of-sequence lacks that token: both count fewer than the limit. One that hit the
    limit re-encodes to the limit, unless the sampled tokens were not the tokenizer's own
    split of the text (re-encoding then merges them): rare, and it errs towards "ended".
    """
    return completion_tokens(llm, text) < max_new_tokens


class Candidate(NamedTuple):
    """One Refiner completion: the raw text, the utterance used, whether it parsed, and
    whether it ended on its own (end-of-sequence or stop) before the token limit."""

    raw: str
    utterance: str
    parsed: bool
    ended: bool

    @property
    def in_format(self) -> bool:
        """As asked: a speech that parsed and ended, not one cut at the token limit."""
        return self.parsed and self.ended


@dataclass(frozen=True)
class RefinerProfile:
    """The Refiner as it runs, built once per game and Refiner from params
    (``Params.refiner_profile``): how it is asked and where its completion ends (``style``,
    which holds its one token limit), its prompt budget, how it samples, and the model that
    runs it (checkpoint, dtype, adapter; None where a test hands in its own backend).
    Candidate sampling, GRPO's prompts, the held-out reward, tournaments, best-of and
    ``serve`` all read this one object, so that none of them asks or samples the Refiner
    differently from the others. How many completions (n) and their seeds are each use's
    own."""

    style: RefinerStyle
    max_prompt_tokens: int
    temperature: float
    top_p: float
    model: LLMConfig | None = None

    @property
    def token_limit(self) -> int:
        return self.style.max_new_tokens

    def overridden(
        self,
        token_limit: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
    ) -> RefinerProfile:
        """This profile with a request's own limit or sampling (``serve``); None keeps it."""
        style = self.style
        if token_limit is not None:
            style = style.model_copy(update={"max_new_tokens": token_limit})
        return replace(
            self,
            style=style,
            temperature=self.temperature if temperature is None else temperature,
            top_p=self.top_p if top_p is None else top_p,
        )

    def messages(
        self,
        llm: Any,
        game: Game,
        speaker: int,
        follower: int | None,
        base: str,
        lines: Sequence[str],
    ) -> list[Message]:
        """The prompt for rewriting ``base``, with as much recent history (``lines``) as fits
        the prompt budget (and ``llm``'s window) beside the completion's room."""
        spec = refiner_spec(game, speaker, follower, base, self.style)
        limit = min(self.max_prompt_tokens, llm.context_window)
        messages, _ = fitted_messages(llm, spec, lines, self.token_limit, limit)
        return messages

    def request(self, messages: list[Message], n: int, seed: int) -> GenerateRequest:
        """The generation of ``n`` completions: the token limit, stop and sampling."""
        return GenerateRequest(
            messages,
            n=n,
            temperature=self.temperature,
            top_p=self.top_p,
            max_new_tokens=self.token_limit,
            stop=self.style.stop,
            seed=seed,
        )

    def read(self, llm: Any, raw: str, base: str) -> Candidate:
        """A completion as a candidate: parsed (``base``: the speech it rewrites) and its
        tokens counted with ``llm``'s tokenizer."""
        return Candidate(
            raw,
            *parse_refiner_output(raw, base, self.style.output_format),
            ended_before_limit(llm, raw, self.token_limit),
        )


class RefinerAgent(Agent):
    """``refiner+X``: X plays; its speeches go through the Refiner before they are said.

    Each speech asks the Refiner for ``samples`` completions in one request and says the
    one ``choose`` picks: here the only one; a subclass may sample more and pick among them
    (``persuasion.best_of``: the Measurer's best)."""

    #: the backend route of the Refiner's requests
    route = REFINER_ROUTE
    #: the Refiner's completions per speech
    samples = 1

    def __init__(self, inner: Agent, count_llm: Any, profile: RefinerProfile) -> None:
        self.inner = inner
        self.kind = f"refiner+{inner.kind}"
        self.count_llm = count_llm
        self.profile = profile
        self.refined = 0
        self.parsed = 0
        self.ended = 0  # completions that ended before the token limit

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self.inner.setup(game, player, rng)  # X gets the seat's stream, as it does unwrapped
        # the Refiner's draws (its request seeds; bestN+X's labels) come from a stream of its
        # own, derived without drawing from X's: X plays as it plays unwrapped on the seed
        self.rng = derived_rng(rng, REFINER_ROUTE)
        self.lines: list[str] = []
        self.base_utterance = ""

    def seat_facts(self) -> dict[str, Any]:
        return self.inner.seat_facts()

    def speech_data(self) -> dict[str, Any]:
        return {"base_utterance": self.base_utterance}

    def take_notes(self) -> list[tuple[str, str]]:
        return self.inner.take_notes()

    def play_counts(self) -> dict[str, int]:
        """What a tournament record sums over this kind's seats: speeches refined, and of
        the completions said, those that parsed and those that ended before the limit."""
        return {"refined": self.refined, "refiner_parsed": self.parsed, "refiner_ended": self.ended}

    def act(self, decision: Decision) -> Any:
        if decision.options is not None:
            return self.inner.act(decision)
        return self._refine(decision)

    def choose(self, follower: int | None, base: str, candidates: list[Candidate]) -> int:
        """The index of the completion said, among the ``candidates`` of one speech
        (``base``: X's speech; ``follower``: who speaks next)."""
        return 0

    def _refine(self, decision: Decision) -> Generator[list[Any], list[Any], Any]:
        follower = self.game.next_speaker()
        action = self.inner.act(decision)
        if isinstance(action, types.GeneratorType):
            action = yield from action
        self.lines += history_lines(self.game, self.player, self.new_events())
        profile = self.profile
        messages = profile.messages(
            self.count_llm, self.game, self.player, follower, action, self.lines
        )
        request = profile.request(messages, self.samples, self.rng.randrange(2**31))
        [texts] = yield [Routed(self.route, request)]
        candidates = [profile.read(self.count_llm, t, action) for t in texts]
        said = candidates[self.choose(follower, action, candidates)]
        self.base_utterance = action
        self.refined += 1
        self.parsed += said.parsed
        self.ended += said.ended
        return said.utterance
