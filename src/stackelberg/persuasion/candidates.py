"""Candidate sampling: n Refiner rewrites of each instance's base utterance.

The Refiner reads what the speaker had seen (its own view, as at play time), the base
utterance and who speaks next; its raw output and the parsed utterance are both kept, and
whether the completion ended on its own before the token limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from stackelberg.agents.refiner import (
    Candidate,
    RefinerStyle,
    read_completion,
    refiner_prompt_messages,
    refiner_request,
)
from stackelberg.llm import Message
from stackelberg.persuasion.context import InstanceView
from stackelberg.settings import SamplingSettings


class SampleSettings(RefinerStyle, SamplingSettings):
    """Sampling of the Refiner: the ``sample`` section of params.yaml. Its RefinerStyle
    fields (prompt and completion) are the ``style`` that GRPO and play use too."""

    n: int = Field(4, ge=1, description="Refiner candidates per instance (paper: 8)")

    @property
    def style(self) -> RefinerStyle:
        return RefinerStyle(**self.model_dump(include=set(RefinerStyle.model_fields)))


def trained_sampling(sample: SampleSettings, completion_limit: int | None) -> SampleSettings:
    """The Refiner's prompting and completion as GRPO trains it and ``refiner+X`` plays it:
    the sample settings (one definition), with GRPO's own token limit only when it is set."""
    return (
        sample.model_copy(update={"max_new_tokens": completion_limit})
        if completion_limit
        else sample
    )


def refiner_prompt(llm: Any, view: InstanceView, settings: SampleSettings) -> list[Message]:
    """The Refiner's prompt for an instance, history fitted to the prompt budget."""
    return refiner_prompt_messages(
        llm,
        view.game,
        view.speaker,
        view.follower,
        view.base_utterance,
        view.lines(view.speaker),
        settings.style,
        settings.max_prompt_tokens,
    )


def sample_candidates(
    llm: Any, views: Sequence[InstanceView], settings: SampleSettings, seeds: Sequence[int]
) -> list[list[Candidate]]:
    """Per view: its n candidates, all views in one batched call."""
    style = settings.style
    requests = [
        refiner_request(
            refiner_prompt(llm, view, settings),
            style,
            settings.n,
            settings.temperature,
            settings.top_p,
            seed,
        )
        for view, seed in zip(views, seeds, strict=True)
    ]
    return [
        [read_completion(llm, raw, view.base_utterance, style) for raw in samples]
        for view, samples in zip(views, llm.run_batch(requests), strict=True)
    ]


def output_rates(candidates: Sequence[Candidate]) -> dict[str, float]:
    """How many completions there were, and the shares that ended before the token limit
    and that parsed (0 for none)."""
    n = len(candidates)
    return {
        "completions": n,
        "ended_rate": sum(c.ended for c in candidates) / n if n else 0.0,
        "parse_rate": sum(c.parsed for c in candidates) / n if n else 0.0,
    }


def dataset_candidates(candidates: Any) -> list[Candidate]:
    """The rows of a written candidates dataset (``datasets.SCHEMAS["candidates"]``) as
    candidates, in its order."""
    columns = ("refiner_output", "candidate", "parsed", "ended")
    return [Candidate(*row) for row in candidates.select(*columns).rows()]


def dataset_rates(candidates: Any) -> dict[str, float]:
    """:func:`output_rates` of a written candidates dataset (its ``refiner`` rows)."""
    return output_rates(dataset_candidates(candidates.filter(candidates["source"] == "refiner")))
