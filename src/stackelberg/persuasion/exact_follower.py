"""The exact follower: a Measurer whose response distribution is known, not modelled.

In Werewolf, Avalon and ONUW the scripted player in the follower's seat, having heard the
game and a candidate speech, says one sentence drawn from its opinion
(``agents.scripted.opinion``). Its log-probability of each of the scripted labeler's
responses is therefore exact, and so is the Measurer reward built from them (the same
formula, each response one "token"). Against ``scripted_sampled`` followers this Measurer
is the follower itself; against any model of a follower it is the ground truth to hold
that model against (``measurer_validity``).

From it follows the Stackelberg optimum of an instance (``optimum``): every speech the
scripted grammar allows the speaker (each sentence, each pair of sentences, over the
other living players and the claims the game permits), and the base speech, scored under
the exact follower.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic import Field

from stackelberg.agents.scripted import OPINION_GAMES, listener_after, sayings
from stackelberg.agents.scripted.avalon import parse_proposal
from stackelberg.agents.scripted.onuw import (
    FAKEABLE,
    robber_claim,
    role_claim,
    seer_saw,
    troublemaker_claim,
)
from stackelberg.agents.scripted.opinion import OPINION_TEMPERATURE
from stackelberg.agents.scripted.phrases import (
    APPROVE_TEAM,
    REJECT_TEAM,
    propose,
    seer_claim,
    werewolf_verdict,
)
from stackelberg.games.base import ALL, Event
from stackelberg.persuasion.context import InstanceView
from stackelberg.persuasion.intents import SCRIPTED
from stackelberg.persuasion.reward import RewardConfig, RewardParts, best_index, measurer_reward
from stackelberg.persuasion.truth import truth_of
from stackelberg.settings import Settings


class ExactFollowerConfig(Settings):
    """``models.measurer: {exact: follower}``: the scripted follower's own response
    distribution as the Measurer (Werewolf, Avalon, ONUW; the scripted labeler's responses),
    at the temperature the ``scripted_sampled`` players speak at, so that against them it is
    the follower exactly."""

    exact: Literal["follower"] = Field(
        description="the scripted follower's own response distribution as the Measurer"
    )

    def describe(self) -> str:
        return f"the exact scripted follower (temperature {OPINION_TEMPERATURE})"


class NotASentence(ValueError):
    """A response the exact follower never says (not one of the scripted sentences)."""


def candidate_event(view: InstanceView, candidate: str) -> Event:
    """The speech event of ``candidate`` said in place of the base utterance."""
    events = view.game.events
    if view.event_index < len(events) and events[view.event_index].type == "speech":
        base = events[view.event_index]
        return Event("speech", base.phase, base.round, view.speaker, ALL, {"text": candidate})
    # a game in play: the speech is not in the log yet
    return Event("speech", view.game.phase, view.game.round, view.speaker, ALL, {"text": candidate})


class ExactFollower:
    """The Measurer that is the follower (module docstring)."""

    can_score = True

    def __init__(self, temperature: float = OPINION_TEMPERATURE) -> None:
        self.temperature = temperature

    def logprobs(
        self, view: InstanceView, candidates: Sequence[str], responses: Sequence[str]
    ) -> list[list[float]]:
        """Each candidate's natural-log probability of each response as the follower's
        next sentence."""
        if view.game.name not in OPINION_GAMES:
            raise ValueError(f"the exact follower plays {', '.join(OPINION_GAMES)} only")
        before = view.game.events[: view.event_index]
        out = []
        for candidate in candidates:
            heard = [*before, candidate_event(view, candidate)]
            listener = listener_after(view.game, view.follower, heard, self.temperature)
            lps = listener.opinion_logprobs()
            missing = [r for r in responses if r not in lps]
            if missing:
                raise NotASentence(
                    f"{missing[0]!r} is not a sentence the exact follower says: it scores "
                    "the scripted labeler's responses (label.scheme: scripted)"
                )
            out.append([lps[r] for r in responses])
        return out

    def close(self) -> None:
        pass


def exact_follower_for(game: str, label_scheme: str) -> ExactFollower | None:
    """The exact follower of ``game``'s instances, where there is one: a game whose scripted
    players speak by opinion, labeled by the scripted labeler (whose responses are the
    sentences the follower says); None elsewhere."""
    scripted = label_scheme == SCRIPTED
    return ExactFollower() if game in OPINION_GAMES and scripted else None


def exact_parts(
    follower: ExactFollower,
    view: InstanceView,
    speeches: Sequence[str],
    desired: Sequence[str],
    undesired: Sequence[str],
    settings: RewardConfig,
    in_format: Sequence[bool] | None = None,
) -> list[RewardParts]:
    """The reward parts of each speech under the exact follower (each response one token;
    ``in_format``: as ``measurer.measure`` takes it)."""
    lps = follower.logprobs(view, speeches, [*desired, *undesired])
    k = len(desired)
    formats = [True] * len(speeches) if in_format is None else list(in_format)
    return [
        measurer_reward(s, [[x] for x in row[:k]], [[x] for x in row[k:]], settings, ok)
        for s, row, ok in zip(speeches, lps, formats, strict=True)
    ]


def terms(parts: RewardParts) -> float:
    """A reward's terms alone: before the length and format penalties."""
    return parts.clamped


# ---- the speaker's grammar and the optimum ---------------------------------------------------


def _claims(view: InstanceView, living: Sequence[int]) -> list[str]:
    """The claims the game permits the speaker, as its scripted players word them: a
    Werewolf Seer's finding; ONUW's role claims (a Seer's sighting, a Robber's or a
    Troublemaker's swap, a plain role); Avalon: the leader's own proposal (the team the
    labels' "this team" is, so that no speech earns its reward by changing the team), the
    others' approval or rejection."""
    game = view.game
    if game.name == "werewolf":
        return [seer_claim([werewolf_verdict(p, w)]) for p in living for w in (True, False)]
    if game.name == "onuw":
        return (
            [seer_saw(p, card) for p in living for card in ("werewolf", "villager")]
            + [robber_claim(p, "villager") for p in living]
            + [troublemaker_claim(a, b) for a, b in itertools.combinations(living, 2)]
            + [role_claim(r) for r in FAKEABLE]
        )
    truth = truth_of(view)
    if truth.discussion_start(view) == view.event_index:  # the leader opens the discussion
        team = parse_proposal(view.base_utterance)
        return [propose(team)] if team else []
    return [APPROVE_TEAM, REJECT_TEAM]


def speaker_sentences(view: InstanceView) -> list[str]:
    """Every sentence the scripted grammar lets the speaker say: each saying about each other
    living player, and the claims the game permits (``_claims``)."""
    truth = truth_of(view)
    living = sorted(truth.alive(view) - {view.speaker})
    says = sayings(view.game.name)
    out = [say(p) for side in (1, -1) for say in says[side] for p in living]
    return list(dict.fromkeys(out + _claims(view, living)))


def grammar_speeches(view: InstanceView, pairs: bool = True) -> list[str]:
    """Each sentence of ``speaker_sentences``, and (``pairs``) each pair of two of them."""
    singles = speaker_sentences(view)
    if not pairs:
        return singles
    return singles + [f"{a} {b}" for a, b in itertools.combinations(singles, 2)]


class Optimum(NamedTuple):
    """An instance's best speech under the exact follower, and the base speech's reward
    (terms only)."""

    speech: str
    reward: float
    base_reward: float
    speeches: int

    @property
    def headroom(self) -> float:
        return self.reward - self.base_reward


def optimum(
    follower: ExactFollower,
    view: InstanceView,
    desired: Sequence[str],
    undesired: Sequence[str],
    settings: RewardConfig,
    pairs: bool = True,
) -> Optimum:
    """The Stackelberg optimum of one instance: the best of the base speech and the
    grammar's speeches (ties: the base, then the first in the grammar's order, a single
    sentence before any pair), so that the headroom is never below 0."""
    speeches = [view.base_utterance, *grammar_speeches(view, pairs)]
    rewards = [
        terms(p) for p in exact_parts(follower, view, speeches, desired, undesired, settings)
    ]
    best = best_index(rewards)
    return Optimum(speeches[best], rewards[best], rewards[0], len(speeches) - 1)
