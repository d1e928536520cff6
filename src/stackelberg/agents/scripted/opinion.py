"""A scripted listener's next sentence as an exact distribution (the exact follower).

After hearing the table, a scripted player holds a *stance* on every other player it may
speak of: how much it would accuse them (a village player: its suspicion; the werewolf
camp: how much it wants them accused, shielding its partners). The sentence it says of its
own accord is drawn from a softmax over the sentences it may say (its game's ``SAYINGS``): an
accusing sentence about player p has logit ``stance[p]``, a vouching one ``-stance[p]``,
the game's "nothing to add" line 0, and game-specific lines (Avalon's approve and reject)
their own; every logit is divided by the temperature.

A scripted player built with ``speech="sampled"`` speaks its role's claims as it always
does (a Seer still reveals what it saw, a leader still proposes) and then one sentence
drawn from this distribution with its seat's random stream. The exact Measurer
(``persuasion.exact_follower``) rebuilds the same distribution from a game record, so that
against sampled scripted followers it is the follower, exactly. The default,
``speech="templated"``, keeps the rule-of-thumb speeches.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from typing import Literal

SpeechMode = Literal["templated", "sampled"]
#: the softmax temperature of a listener's next sentence (stances are in suspicion units)
OPINION_TEMPERATURE = 0.5


#: side (+1 vouches, -1 accuses) -> the sentences that take it on one player
Sayings = Mapping[int, tuple[Callable[[int], str], ...]]


def sentence_logits(
    sayings: Sayings, stance: Mapping[int, float], extra: Mapping[str, float]
) -> dict[str, float]:
    """The logit of every sentence a listener may say (its game's ``SAYINGS``): for each
    player in ``stance``, its accusing sentences at ``stance[p]`` and its vouching ones at
    minus that, then ``extra`` (the nothing-to-add line, team votes)."""
    logits: dict[str, float] = {}
    for side, says in sayings.items():
        for p, s in stance.items():
            for say in says:
                logits[say(p)] = -side * s
    logits.update(extra)
    return logits


def distribution(logits: Mapping[str, float], temperature: float) -> dict[str, float]:
    """The softmax of ``logits`` at ``temperature``: each sentence's probability, summing
    to 1, in the logits' order."""
    return {s: math.exp(lp) for s, lp in log_distribution(logits, temperature).items()}


def log_distribution(logits: Mapping[str, float], temperature: float) -> dict[str, float]:
    """Each sentence's natural-log probability under ``distribution`` (exact in the tails,
    where the probability itself would round to 0)."""
    if not logits:
        raise ValueError("a listener with nothing it may say")
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, not {temperature}")
    top = max(logits.values())
    scaled = {s: (v - top) / temperature for s, v in logits.items()}
    log_total = math.log(math.fsum(math.exp(x) for x in scaled.values()))
    return {s: x - log_total for s, x in scaled.items()}


def draw(probabilities: Mapping[str, float], rng: random.Random) -> str:
    """One sentence drawn from ``probabilities`` with one number of ``rng``."""
    u = rng.random()
    cumulative = 0.0
    last = ""
    for sentence, p in probabilities.items():
        cumulative += p
        last = sentence
        if u < cumulative:
            return sentence
    return last  # rounding: u at the very top


def with_claims(claims: str, sentence: str, nothing: str) -> str:
    """A sampled speech: the role's claims, then the drawn sentence (the nothing-to-add line
    only when there are no claims)."""
    if claims and (sentence == nothing or sentence in claims):
        return claims
    return f"{claims} {sentence}".strip()


class Listening:
    """What a scripted agent adds to speak by its opinion: the speech mode and temperature,
    and the distribution of its next sentence (``opinion_logits``, per game)."""

    def __init__(
        self, speech: SpeechMode = "templated", temperature: float = OPINION_TEMPERATURE
    ) -> None:
        if speech not in ("templated", "sampled"):
            raise ValueError(f"speech must be 'templated' or 'sampled', not {speech!r}")
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, not {temperature}")
        self.speech_mode = speech
        self.temperature = temperature

    def listen(self) -> None:
        """Read the events seen since the last look (each game's agent)."""
        raise NotImplementedError

    def opinion_logits(self) -> dict[str, float]:
        raise NotImplementedError

    def opinion(self) -> dict[str, float]:
        """The distribution of the sentence it says next of its own accord."""
        return distribution(self.opinion_logits(), self.temperature)

    def opinion_logprobs(self) -> dict[str, float]:
        return log_distribution(self.opinion_logits(), self.temperature)

    def said_opinion(self) -> str:
        """One sentence drawn from ``opinion`` with the seat's random stream."""
        return draw(self.opinion(), self.rng)  # type: ignore[attr-defined]
