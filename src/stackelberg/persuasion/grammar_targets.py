"""The warm start's targets: per instance, the grammar completion the Measurer rewards most.

The speaker's grammar (``exact_follower.speaker_sentences``) is every sentence the scripted
players say, about every living player, and the claims the game permits. Each is scored as
a Refiner completion in the Refiner's output format (added after the planned speech, or said
instead of it) through ``measure_completions``, the reward GRPO trains on, so the warm start
and GRPO want the same thing of any Measurer: the exact follower or an LLM. The planned
speech's own words are a candidate too (in the addition format: said again, adding nothing),
so that an instance where every sentence hurts teaches restraint, not the least bad claim.

Two kinds of targets (``warm_start.targets``): ``best``, the one sentence rewarded most, and
``helping``, draws from every sentence that beats the planned speech's words, each as likely
as its gain. One target per prompt made the Refiner nearly deterministic, so that GRPO's
groups rarely differed (docs/persuasion.md); the best sentence also depends on what the
speaker cannot see, and a spread over the sentences that help keeps what each prompt allows.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, NamedTuple

from stackelberg.agents.refiner import Candidate, RefinerProfile
from stackelberg.persuasion.context import InstanceView
from stackelberg.persuasion.exact_follower import speaker_sentences
from stackelberg.persuasion.measurer import ScoreSettings, measure_completions
from stackelberg.persuasion.reward import best_index

#: the output formats a grammar completion can be written in
GRAMMAR_FORMATS = ("addition", "speech")


#: ``warm_start.targets``: the best sentence, or draws from the sentences that help
TARGET_KINDS = ("best", "helping")


class GrammarTarget(NamedTuple):
    """An instance's target grammar completion, its reward, and the planned speech's words
    as the completion (the first candidate)."""

    completion: str
    reward: float
    base_reward: float
    candidates: int
    helping: int = 0  # sentences that beat the planned speech's words


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
    kind: str = "best",
    draws: int = 1,
    seed: int = 0,
) -> list[list[GrammarTarget]]:
    """Per instance (``rows``: its intents; ``views``: its view), its targets: ``best``, the
    grammar completion the Measurer rewards most (ties: the planned speech's words, then the
    grammar's order), ``draws`` times; ``helping``, ``draws`` completions drawn with
    replacement from those that beat the planned speech's words, each with a chance in
    proportion to its gain (where none helps: the planned speech's words). Seeded by
    ``seed`` and the instance's place alone."""
    if kind not in TARGET_KINDS:
        raise ValueError(f"grammar targets are {' or '.join(TARGET_KINDS)}, not {kind!r}")
    if draws < 1:
        raise ValueError(f"draws must be at least 1, not {draws}")
    targets = []
    for i, (row, view) in enumerate(zip(rows, views, strict=True)):
        candidates = grammar_candidates(view, profile.style.output_format)
        measured = measure_completions(measurer, row, view, candidates, score, profile.token_limit)
        rewards = [p.reward for p in measured.parts]
        helps = [j for j, r in enumerate(rewards) if r > rewards[0]]
        if kind == "best" or not helps:
            chosen = [best_index(rewards)] * draws
        else:
            rng = random.Random(f"{seed}:{i}")
            chosen = rng.choices(helps, weights=[rewards[j] - rewards[0] for j in helps], k=draws)
        targets.append(
            [
                GrammarTarget(candidates[j].raw, rewards[j], rewards[0], len(rewards), len(helps))
                for j in chosen
            ]
        )
    return targets
