"""The Measurer reward of a candidate utterance (the method's step 2).

    R(u) = sum_k agg lp(u+_k | ctx, u) - sum_k agg lp(u-_k | ctx, u)

``agg`` is the per-token mean (the release, "to avoid length bias") or the sum (the paper's
summary). ``terms`` may keep only the positive or the negative term (the paper's ablation).
R is clamped to [-clamp, clamp] and a length penalty is added: 0 up to ``free_words`` words,
falling linearly to ``-max_penalty`` at ``full_penalty_words`` and beyond. A Refiner
completion not in the asked format (it did not parse, or it ran to the token limit, cut
mid-speech) loses ``off_format_penalty`` more: its text is still what the follower reads,
but without that cost GRPO is free to drift from the format whenever the drift happens to
please the Measurer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from pydantic import Field, model_validator

from stackelberg.settings import Settings

#: which terms of R count (``score.terms``): both, or one alone (the paper's ablation)
Terms = Literal["full", "pos_only", "neg_only"]
Aggregation = Literal["mean", "sum"]
AGGREGATIONS: tuple[str, ...] = ("mean", "sum")


class RewardConfig(Settings):
    """How token log-probabilities become one reward."""

    terms: Terms = Field("full", description="which terms count: full, pos_only, neg_only")
    aggregation: Aggregation = Field(
        "mean", description="per response: mean (release) or sum (summary) of token log-probs"
    )
    clamp: float = Field(50.0, gt=0, description="|R| before the length penalty is at most this")
    free_words: int = Field(100, ge=0, description="no length penalty up to this many words")
    full_penalty_words: int = Field(200, ge=1, description="the penalty is largest from here")
    max_penalty: float = Field(10.0, ge=0, description="the largest length penalty (subtracted)")
    off_format_penalty: float = Field(
        0.0,
        ge=0,
        description="subtracted from a Refiner completion not in the asked format (unparsed, "
        "or cut at the token limit); 0: scored as its text alone, as the release does",
    )

    @model_validator(mode="after")
    def _penalty_ramp(self) -> RewardConfig:
        if self.free_words >= self.full_penalty_words:
            raise ValueError("free_words must be below full_penalty_words")
        return self


def best_index(rewards: Sequence[float]) -> int:
    """The index of the highest reward; the first wins a tie (held out and in play alike)."""
    return max(range(len(rewards)), key=lambda i: (rewards[i], -i))


@dataclass(frozen=True)
class RewardParts:
    """Every part of one reward, kept so that datasets can be re-weighted later."""

    pos_means: tuple[float, ...]
    neg_means: tuple[float, ...]
    pos_sums: tuple[float, ...]
    neg_sums: tuple[float, ...]
    positive: float  # sum over desired responses of the aggregated lp
    negative: float  # sum over undesired responses of the aggregated lp
    raw: float  # the terms' combination before clamping
    clamped: float
    length_penalty: float  # <= 0
    format_penalty: float  # <= 0: -off_format_penalty for a completion not in the asked format
    words: int
    reward: float
    #: an ensemble Measurer's: each member's reward, in its members' order (one model: none)
    member_rewards: tuple[float, ...] = ()

    def as_dict(self) -> dict:
        return asdict(self)


def ensemble_parts(members: Sequence[RewardParts], weights: Sequence[float]) -> RewardParts:
    """One candidate's parts under an ensemble follower: every number the weighted mean of
    the members' (``weights``: positive, normalised here), so the reward is the weighted
    mean of the members' rewards; each member's reward is kept in ``member_rewards``.

    >>> a = measurer_reward("Hi.", [[-1.0]], [[-3.0]], RewardConfig())  # reward 2
    >>> b = measurer_reward("Hi.", [[-2.0]], [[-2.0]], RewardConfig())  # reward 0
    >>> ensemble_parts([a, b], [3.0, 1.0]).reward, ensemble_parts([a, b], [3.0, 1.0]).member_rewards
    (1.5, (2.0, 0.0))
    """
    if not members or len(members) != len(weights) or min(weights) <= 0:
        raise ValueError("an ensemble needs one positive weight per member, and a member")
    shares = [w / sum(weights) for w in weights]

    def mean(values: Sequence[float]) -> float:
        return sum(s * v for s, v in zip(shares, values, strict=True))

    def means(key: str) -> tuple[float, ...]:
        columns = zip(*(getattr(m, key) for m in members), strict=True)
        return tuple(mean(column) for column in columns)

    first = members[0]
    return RewardParts(
        pos_means=means("pos_means"),
        neg_means=means("neg_means"),
        pos_sums=means("pos_sums"),
        neg_sums=means("neg_sums"),
        **{
            key: mean([getattr(m, key) for m in members])
            for key in ("positive", "negative", "raw", "clamped", "length_penalty")
        },
        format_penalty=mean([m.format_penalty for m in members]),
        words=first.words,
        reward=mean([m.reward for m in members]),
        member_rewards=tuple(m.reward for m in members),
    )


def length_penalty(words: int, cfg: RewardConfig) -> float:
    """0 up to free_words, then linear down to -max_penalty at full_penalty_words."""
    if words <= cfg.free_words:
        return 0.0
    frac = min(1.0, (words - cfg.free_words) / (cfg.full_penalty_words - cfg.free_words))
    return -cfg.max_penalty * frac


def measurer_reward(
    candidate: str,
    pos_token_lps: Sequence[Sequence[float]],
    neg_token_lps: Sequence[Sequence[float]],
    cfg: RewardConfig,
    in_format: bool = True,
) -> RewardParts:
    """The reward of ``candidate`` from the token log-probs of each desired/undesired response
    (``in_format``: whether the Refiner completion it came from was in the asked format).

    >>> cfg = RewardConfig()
    >>> measurer_reward("I am the Seer.", [[-1.0, -3.0]], [[-5.0]], cfg).reward
    3.0
    """
    if not pos_token_lps and cfg.terms != "neg_only":
        raise ValueError("the reward needs at least one desired response")
    if not neg_token_lps and cfg.terms != "pos_only":
        raise ValueError("the reward needs at least one undesired response")
    pos_sums = tuple(float(sum(lp)) for lp in pos_token_lps)
    neg_sums = tuple(float(sum(lp)) for lp in neg_token_lps)
    pos_means = tuple(s / max(len(lp), 1) for s, lp in zip(pos_sums, pos_token_lps, strict=True))
    neg_means = tuple(s / max(len(lp), 1) for s, lp in zip(neg_sums, neg_token_lps, strict=True))
    use_mean = cfg.aggregation == "mean"
    positive = sum(pos_means if use_mean else pos_sums)
    negative = sum(neg_means if use_mean else neg_sums)
    raw = {"full": positive - negative, "pos_only": positive, "neg_only": -negative}[cfg.terms]
    clamped = max(-cfg.clamp, min(cfg.clamp, raw))
    words = len(candidate.split())
    penalty = length_penalty(words, cfg)
    format_penalty = 0.0 if in_format else -cfg.off_format_penalty
    return RewardParts(
        pos_means=pos_means,
        neg_means=neg_means,
        pos_sums=pos_sums,
        neg_sums=neg_sums,
        positive=positive,
        negative=negative,
        raw=raw,
        clamped=clamped,
        length_penalty=penalty,
        format_penalty=format_penalty,
        words=words,
        reward=clamped + penalty + format_penalty,
    )
