"""Candidate sampling: n Refiner rewrites of each instance's base utterance.

The Refiner reads what the speaker had seen (its own view, as at play time), the base
utterance and who speaks next; its raw output and the parsed utterance are both kept, and
whether the completion ended on its own before the token limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from stackelberg.agents.refiner import Candidate, RefinerProfile, RefinerStyle
from stackelberg.llm import LLMConfig, Message
from stackelberg.persuasion.context import InstanceView
from stackelberg.settings import SamplingSettings


class SampleSettings(RefinerStyle, SamplingSettings):
    """The Refiner as it runs, and the sample stage's candidates: the ``sample`` section of
    params.yaml. Its RefinerStyle fields (prompt, completion, the one token limit), prompt
    budget, temperature and top_p make every use's ``RefinerProfile``
    (``Params.refiner_profile``); ``n`` and ``batch_instances`` are the sample stage's."""

    n: int = Field(4, ge=1, description="Refiner candidates per instance (paper: 8)")

    @property
    def style(self) -> RefinerStyle:
        return RefinerStyle(**self.model_dump(include=set(RefinerStyle.model_fields)))

    def profile(self, model: LLMConfig | None = None) -> RefinerProfile:
        """The Refiner as it runs under these settings, on ``model`` (checkpoint, dtype,
        adapter)."""
        return RefinerProfile(
            self.style, self.max_prompt_tokens, self.temperature, self.top_p, model
        )


def refiner_prompt(llm: Any, view: InstanceView, profile: RefinerProfile) -> list[Message]:
    """The Refiner's prompt for an instance, as it runs (``profile``), history fitted."""
    return profile.messages(
        llm,
        view.game,
        view.speaker,
        view.follower,
        view.base_utterance,
        view.lines(view.speaker),
    )


def sample_candidates(
    llm: Any,
    views: Sequence[InstanceView],
    profile: RefinerProfile,
    n: int,
    seeds: Sequence[int],
) -> list[list[Candidate]]:
    """Per view: ``n`` candidates of the Refiner as it runs, all views in one batched call."""
    requests = [
        profile.request(refiner_prompt(llm, view, profile), n, seed)
        for view, seed in zip(views, seeds, strict=True)
    ]
    return [
        [profile.read(llm, raw, view.base_utterance) for raw in samples]
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
