"""Candidate sampling: n Refiner rewrites of each instance's base utterance.

The Refiner reads what the speaker had seen (its own view, as at play time), the base
utterance and who speaks next; its raw output and the parsed utterance are both kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stackelberg.agents.prompting import fitted_messages
from stackelberg.agents.refiner import parse_refiner_output, refiner_spec
from stackelberg.llm import GenerateRequest, Message
from stackelberg.persuasion.context import InstanceView


@dataclass(frozen=True)
class SampleSettings:
    n: int = 4
    temperature: float = 0.7
    top_p: float = 0.9
    max_new_tokens: int = 64
    max_prompt_tokens: int = 768


def refiner_prompt(llm: Any, view: InstanceView, settings: SampleSettings) -> list[Message]:
    """The Refiner's prompt for an instance, history fitted to the prompt budget."""
    spec = refiner_spec(view.game, view.speaker, view.follower, view.base_utterance)
    limit = min(settings.max_prompt_tokens, llm.context_window)
    messages, _ = fitted_messages(
        llm, spec, view.lines(view.speaker), settings.max_new_tokens, limit
    )
    return messages


def sample_candidates(
    llm: Any, views: Sequence[InstanceView], settings: SampleSettings, seeds: Sequence[int]
) -> list[list[tuple[str, str, bool]]]:
    """Per view: n (raw output, utterance, parsed) triples, all views in one batched call."""
    requests = [
        GenerateRequest(
            refiner_prompt(llm, view, settings),
            n=settings.n,
            temperature=settings.temperature,
            top_p=settings.top_p,
            max_new_tokens=settings.max_new_tokens,
            seed=seed,
        )
        for view, seed in zip(views, seeds, strict=True)
    ]
    out = []
    for view, samples in zip(views, llm.run_batch(requests), strict=True):
        out.append([(raw, *parse_refiner_output(raw, view.base_utterance)) for raw in samples])
    return out
