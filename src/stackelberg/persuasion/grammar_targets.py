"""The warm start's targets: per instance, the grammar completion the Measurer rewards most.

The speaker's grammar (``exact_follower.speaker_sentences``) is every sentence the scripted
players say, about every living player, and the claims the game permits. Each is scored as
a Refiner completion in the Refiner's output format (added after the planned speech, or said
instead of it) through ``measure_completions``, the reward GRPO trains on, so the warm start
and GRPO want the same thing of any Measurer: the exact follower or an LLM. The planned
speech's own words are a candidate too (in the addition format: said again, adding nothing),
so that an instance where every sentence hurts teaches restraint, not the least bad claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from stackelberg.agents.refiner import Candidate, RefinerProfile
from stackelberg.persuasion.context import InstanceView
from stackelberg.persuasion.exact_follower import speaker_sentences
from stackelberg.persuasion.measurer import ScoreSettings, measure_completions
from stackelberg.persuasion.reward import best_index

#: the output formats a grammar completion can be written in
GRAMMAR_FORMATS = ("addition", "speech")


class GrammarTarget(NamedTuple):
    """An instance's best grammar completion, its reward, and the planned speech's words
    as the completion (the first candidate)."""

    completion: str
    reward: float
    base_reward: float
    candidates: int


def grammar_candidates(view: InstanceView, output_format: str) -> list[Candidate]:
    """The planned speech's words, then each grammar sentence, as Refiner completions."""
    if output_format not in GRAMMAR_FORMATS:
        raise ValueError(
            f"grammar completions are written as {' or '.join(GRAMMAR_FORMATS)}, "
            f"not {output_format!r}"
        )
    base = view.base_utterance
    sentences = [base, *(s for s in speaker_sentences(view) if s != base)]
    if output_format == "addition":
        return [Candidate(s, f"{base} {s}", True, True) for s in sentences]
    return [Candidate(s, s, True, True) for s in sentences]


def grammar_targets(
    measurer: Any,
    rows: Sequence[dict],
    views: Sequence[InstanceView],
    profile: RefinerProfile,
    score: ScoreSettings,
) -> list[GrammarTarget]:
    """Per instance (``rows``: its intents; ``views``: its view), the grammar completion the
    Measurer rewards most (ties: the planned speech's words, then the grammar's order)."""
    targets = []
    for row, view in zip(rows, views, strict=True):
        candidates = grammar_candidates(view, profile.style.output_format)
        measured = measure_completions(measurer, row, view, candidates, score, profile.token_limit)
        rewards = [p.reward for p in measured.parts]
        best = best_index(rewards)
        targets.append(GrammarTarget(candidates[best].raw, rewards[best], rewards[0], len(rewards)))
    return targets
