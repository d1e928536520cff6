"""Impact measurement (the method's step 2): how a candidate shifts the follower's responses.

The Measurer plays the follower: its prompt is the follower's own agent prompt with the
candidate as the leader's latest message, and the reward comes from the log-probabilities
of the desired and undesired responses as the follower's reply. One call scores every
candidate of an instance against every response, with the context computed once.
If the prompt does not fit the Measurer's window, the oldest history lines are dropped
(never a response or a candidate), and the number dropped is returned.

The Measurer may be an ensemble follower (``models.measurer`` a weighted list,
``MeasurerMember``): real followers differ, so several scoring models stand for them. Each
member scores as one Measurer does, with the prompt fitted to its own window and tokenizer,
and a candidate's reward is the weighted mean of the members' (``reward.ensemble_parts``),
each member's kept beside it. ``measure`` takes either, so every caller scores alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import Discriminator, Field, Tag

from stackelberg.agents.refiner import Candidate
from stackelberg.llm import LLMConfig, fit_history
from stackelberg.persuasion.context import (
    CANDIDATE_SLOT,
    InstanceView,
    follower_messages,
    follower_prompt_pieces,
)
from stackelberg.persuasion.exact_follower import ExactFollower, ExactFollowerConfig, exact_parts
from stackelberg.persuasion.reward import (
    RewardConfig,
    RewardParts,
    ensemble_parts,
    measurer_reward,
)

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


class MeasurerMember(LLMConfig):
    """One follower of an ensemble Measurer (``models.measurer`` as a list of these)."""

    weight: float = Field(
        1.0,
        gt=0,
        description="an ensemble Measurer's member: its share of the reward (the weighted "
        "mean of the members' rewards; weights are normalised)",
    )
    name: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="an ensemble Measurer's member: its name in the scores dataset, the GRPO "
        "history, MLflow and the report (default: the model's last path part)",
    )

    def config(self) -> LLMConfig:
        return LLMConfig(**self.model_dump(exclude={"weight", "name"}))


def _measurer_form(value: Any) -> str:
    if isinstance(value, list):
        return "members"
    if isinstance(value, ExactFollowerConfig) or (isinstance(value, dict) and "exact" in value):
        return "exact"
    return ""


#: ``models.measurer``: one scoring model, the members of an ensemble follower, or the exact
#: follower (told apart by the value's shape, so that a bad value is one error about the
#: form it has)
MeasurerEntry = Annotated[
    Annotated[LLMConfig, Tag("")]
    | Annotated[list[MeasurerMember], Tag("members")]
    | Annotated[ExactFollowerConfig, Tag("exact")],
    Discriminator(_measurer_form),
]


#: a member Refiner, trained against one member of an ensemble Measurer alone
#: (``grpo.member_refiners``): its name (its folder under extra/, its registered model's
#: suffix) is this prefix and the member's
MEMBER_REFINER_PREFIX = "vs_"


def member_refiner(member: str) -> str:
    """The name of the member Refiner trained against the ensemble member ``member`` alone."""
    return f"{MEMBER_REFINER_PREFIX}{member}"


def member_names(members: Sequence[MeasurerMember]) -> list[str]:
    """Each member's name: its own, or its model's last path part (``models/base``: base)."""
    return [m.name or Path(m.model).name for m in members]


@dataclass(frozen=True)
class Member:
    """A loaded member of an ensemble follower."""

    name: str
    weight: float
    llm: Any


class Ensemble:
    """An ensemble follower: a candidate's reward is the weighted mean of its reward under
    each member (module docstring)."""

    can_score = True

    def __init__(self, members: Sequence[Member]) -> None:
        if not members:
            raise ValueError("an ensemble Measurer needs at least one member")
        self.members = list(members)

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.members]

    def member(self, name: str) -> Any:
        """The backend of the member ``name`` (a Refiner trained against it alone)."""
        for m in self.members:
            if m.name == name:
                return m.llm
        raise KeyError(f"no ensemble member named {name!r}; members: {', '.join(self.names)}")

    def close(self) -> None:
        for m in self.members:
            m.llm.close()


def load_measurer(entry: MeasurerEntry, load: Callable[[LLMConfig], Any]) -> Any:
    """The Measurer of ``models.measurer``: one model's backend, an ``Ensemble`` of each
    member's (``load``: a model config to its backend), or the ``ExactFollower``."""
    if isinstance(entry, ExactFollowerConfig):
        return ExactFollower()
    if isinstance(entry, LLMConfig):
        return load(entry)
    names = member_names(entry)
    return Ensemble(
        [Member(n, m.weight, load(m.config())) for n, m in zip(names, entry, strict=True)]
    )


def measurer_backends(measurer: Any) -> list[Any]:
    """The backends a Measurer scores with: an ensemble's members', or the one model."""
    return [m.llm for m in measurer.members] if isinstance(measurer, Ensemble) else [measurer]


def ensemble_names(measurer: Any) -> list[str]:
    """The names of an ensemble Measurer's members, in the order of ``member_rewards``
    (one model: none)."""
    return measurer.names if isinstance(measurer, Ensemble) else []


def fitted_follower_lines(
    llm: Any,
    view: InstanceView,
    candidates: Sequence[str],
    responses: Sequence[str],
    settings: ScoreSettings = ScoreSettings(),  # noqa: B008 (frozen)
    candidate_tokens: int = 0,
    reply_tokens: int = 0,
) -> tuple[list[str], int]:
    """The follower's history, cut from the oldest line until everything fits the window.

    The room kept for a candidate is ``candidate_tokens`` (the Refiner's completion limit)
    unless one is longer: an instance's context is then the same whichever candidates are
    scored with it (sample, GRPO's groups, both Refiners held out), so a candidate's reward
    does not depend on its siblings and the Measurer reuses the computed context. The room
    for the follower's reply is the longest response's, or ``reply_tokens`` (a reply to be
    sampled) if more.
    """
    lines = settings.history(view)
    reserve = (
        max([candidate_tokens, *(llm.count_tokens(c) for c in candidates)])
        + max([reply_tokens, *(llm.count_tokens(r) for r in responses)])
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
    ``in_format``: whether each came from a completion in the asked format, None: all).
    ``llm``: one model, an ``Ensemble`` (its parts the members' weighted mean; the most
    lines any member cut), or the ``ExactFollower`` (no prompt, nothing cut)."""
    if isinstance(llm, ExactFollower):
        return exact_parts(llm, view, candidates, desired, undesired, settings, in_format), 0
    if isinstance(llm, Ensemble):
        each = [
            measure(
                m.llm, view, candidates, desired, undesired, settings, candidate_tokens, in_format
            )
            for m in llm.members
        ]
        weights = [m.weight for m in llm.members]
        parts = [
            ensemble_parts(list(column), weights)
            for column in zip(*(p for p, _ in each), strict=True)
        ]
        return parts, max(cut for _, cut in each)
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
