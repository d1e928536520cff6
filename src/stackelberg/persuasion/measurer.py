"""Impact measurement (the method's step 2): how a candidate shifts the follower's responses.

The Measurer plays the follower: its prompt is the follower's own agent prompt with the
candidate as the leader's latest message, and the reward comes from the log-probabilities
of the desired and undesired responses as the follower's reply. One call scores every
candidate of an instance against every response, with the context computed once.
If the prompt does not fit the Measurer's window, the oldest history lines are dropped
(never a response or a candidate), and the number dropped is returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from pydantic import Field

from stackelberg.agents.refiner import Candidate
from stackelberg.llm import fit_history
from stackelberg.persuasion.context import (
    CANDIDATE_SLOT,
    InstanceView,
    follower_messages,
    follower_prompt_pieces,
)
from stackelberg.persuasion.reward import RewardConfig, RewardParts, measurer_reward

SAFETY_TOKENS = 8


class ScoreSettings(RewardConfig):
    """The ``score`` section of params.yaml: the reward's terms, and what the Measurer's
    follower reads: its own view of the game (default) or the release's global log; the
    speaker's line as the parsed utterance or the Refiner's raw completion (the release)."""

    follower_history: Literal["own_view", "global_log"] = Field(
        "own_view",
        description="what the Measurer's follower has seen: its own view of the game, or "
        "the release's global log (every event, private ones marked with who saw them)",
    )
    candidate_text: Literal["parsed", "raw"] = Field(
        "parsed",
        description="the speaker's line the follower reads: the parsed utterance, or the "
        "release's raw Refiner completion",
    )
    batch_instances: int = Field(4, ge=1, description="instances per work item (pipeline)")

    def texts(self, raw: Sequence[str], parsed: Sequence[str]) -> list[str]:
        """The candidates as the follower reads them."""
        return list(raw if self.candidate_text == "raw" else parsed)

    def history(self, view: InstanceView) -> list[str]:
        if self.follower_history == "global_log":
            return view.global_lines()
        return view.lines(view.follower)


def fitted_follower_lines(
    llm: Any,
    view: InstanceView,
    candidates: Sequence[str],
    responses: Sequence[str],
    settings: ScoreSettings = ScoreSettings(),  # noqa: B008 (frozen)
    candidate_tokens: int = 0,
) -> tuple[list[str], int]:
    """The follower's history, cut from the oldest line until everything fits the window.

    The room kept for a candidate is ``candidate_tokens`` (the Refiner's completion limit)
    unless one is longer: an instance's context is then the same whichever candidates are
    scored with it (sample, GRPO's groups, both Refiners held out), so a candidate's reward
    does not depend on its siblings and the Measurer reuses the computed context.
    """
    lines = settings.history(view)
    reserve = (
        max([candidate_tokens, *(llm.count_tokens(c) for c in candidates)])
        + max(llm.count_tokens(r) for r in responses)
        + SAFETY_TOKENS
    )

    def build(kept: Sequence[str]) -> str:
        return llm.render_chat(follower_messages(view, CANDIDATE_SLOT, kept))

    _, dropped = fit_history(llm, build, lines, reserve)
    return lines[dropped:], dropped


def measure(
    llm: Any,
    view: InstanceView,
    candidates: Sequence[str],
    desired: Sequence[str],
    undesired: Sequence[str],
    settings: ScoreSettings,
    candidate_tokens: int = 0,
    in_format: Sequence[bool] | None = None,
) -> tuple[list[RewardParts], int]:
    """Reward parts of each candidate, and how many history lines were cut to fit
    (``candidate_tokens``: the room a candidate has, ``fitted_follower_lines``;
    ``in_format``: whether each came from a completion in the asked format, None: all)."""
    candidates = list(candidates)
    responses = [*desired, *undesired]
    lines, cut = fitted_follower_lines(llm, view, candidates, responses, settings, candidate_tokens)
    context, joiner = follower_prompt_pieces(llm, view, lines)
    logprobs = llm.score_nested(context, candidates, responses, joiner)
    k = len(desired)
    formats = [True] * len(candidates) if in_format is None else list(in_format)
    parts = [
        measurer_reward(cand, lps[:k], lps[k:], settings, ok)
        for cand, lps, ok in zip(candidates, logprobs, formats, strict=True)
    ]
    return parts, cut


class Measured(NamedTuple):
    """An instance's candidates as the follower read them, their reward parts, and how many
    history lines were cut to fit."""

    texts: list[str]
    parts: list[RewardParts]
    cut: int


def measure_completions(
    llm: Any,
    row: Mapping[str, Any],
    view: InstanceView,
    candidates: Sequence[Candidate],
    settings: ScoreSettings,
    candidate_tokens: int = 0,
) -> Measured:
    """The Measurer's reward of Refiner completions for one instance (``row``: its
    ``desired`` and ``undesired`` responses), the one call of the score, grpo, evaluate
    stages and of best-of-n play, so that a candidate gets the same reward wherever it is
    scored: each completion (its raw text or the utterance parsed from it) goes into the
    follower's prompt as ``settings.candidate_text`` says; one not in the asked format costs
    ``settings.off_format_penalty``."""
    texts = settings.texts([c.raw for c in candidates], [c.utterance for c in candidates])
    in_format = [c.in_format for c in candidates]
    parts, cut = measure(
        llm, view, texts, row["desired"], row["undesired"], settings, candidate_tokens, in_format
    )
    return Measured(texts, parts, cut)
