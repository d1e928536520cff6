"""``bestN+X``: best of n at play time, the no-training peer of ``refiner+X``.

X plays and writes its speech, as under ``refiner+X``; the untrained Refiner (the base
model, no adapter, prompted and sampled as the trained one plays) samples N rewrites in one
request; the scripted labeler writes the follower's desired and undesired responses from
the live game (``truth.scripted_intents``, with the ``label`` section's k and
full_information), and one Measurer call scores the N rewrites: the highest reward is said.
A speech thus costs N Refiner samples and one Measurer call, what the trained Refiner's
single sample is compared against (the held-out best-of table is the same search on the
test instances). A speech with no follower (the round's last speaker) or whose intents come
out short of k says the first sample, as ``refiner+X`` says its one, without a Measurer call.
"""

from __future__ import annotations

from typing import Any

from stackelberg.agents.base import Agent
from stackelberg.agents.refiner import RefinerAgent, RefinerProfile
from stackelberg.games.base import Game
from stackelberg.persuasion.context import InstanceView
from stackelberg.persuasion.intents import LabelSettings, scripted_labels
from stackelberg.persuasion.measurer import ScoreSettings, measure_completions
from stackelberg.persuasion.reward import best_index
from stackelberg.persuasion.truth import TRUTHS

#: ``bestN+X``'s prefix, before N
BEST_OF_PREFIX = "best"
#: the routes of its backends: the Refiner without an adapter, and the Measurer
REFINER_BASE_ROUTE = "refiner_base"
MEASURER_ROUTE = "measurer"
#: what a tournament record sums over its seats (``play_counts``): speeches, Refiner samples,
#: Measurer calls
BEST_OF_COUNTS = ("best_of_speeches", "best_of_samples", "best_of_measurer_calls")


def live_view(game: Game, speaker: int, follower: int, base: str) -> InstanceView:
    """The instance of a speech about to be said in ``game``: the view a record gives of a
    speech already said, with the record's truth read from the game in play."""
    return InstanceView(
        game, speaker, follower, len(game.events), base, TRUTHS[game.name].live_record(game)
    )


class BestOfAgent(RefinerAgent):
    """``bestN+X``: X plays; each speech is the Measurer's best of N untrained Refiner
    rewrites (module docstring)."""

    route = REFINER_BASE_ROUTE

    def __init__(
        self,
        inner: Agent,
        samples: int,
        refiner: Any,
        measurer: Any,
        profile: RefinerProfile,
        label: LabelSettings = LabelSettings(),  # noqa: B008 (frozen, so one shared default is safe)
        score: ScoreSettings = ScoreSettings(),  # noqa: B008
    ) -> None:
        if samples < 1:
            raise ValueError(f"best of {samples}: at least one sample")
        super().__init__(inner, refiner, profile)
        self.kind = f"{BEST_OF_PREFIX}{samples}+{inner.kind}"
        self.samples = samples
        self.measurer = measurer
        self.label = label
        self.score = score
        self.sampled = 0  # Refiner completions
        self.measured = 0  # Measurer calls

    def play_counts(self) -> dict[str, int]:
        """What a tournament record sums over this kind's seats: speeches, Refiner samples
        and Measurer calls (speeches without a follower or intents make none)."""
        return dict(zip(BEST_OF_COUNTS, (self.refined, self.sampled, self.measured), strict=True))

    def choose(self, follower, base, candidates) -> int:
        self.sampled += len(candidates)
        if follower is None:
            return 0
        view = live_view(self.game, self.player, follower, base)
        labels = scripted_labels(view, self.label, self.rng.randrange(2**31))
        if not labels.complete(self.label.k):
            return 0
        row = {"desired": labels.desired, "undesired": labels.undesired}
        measured = measure_completions(
            self.measurer, row, view, candidates, self.score, self.profile.token_limit
        )
        self.measured += 1
        return best_index([part.reward for part in measured.parts])
