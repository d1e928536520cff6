"""The evaluate stage's settings: the ``evaluate`` section (held-out reward, tournaments, best
of N, viewer pages) and its ``behaviour`` check."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PositiveInt

from stackelberg.agents import LLM_AGENT_KINDS
from stackelberg.agents.play_settings import PlayerSettings
from stackelberg.evaluation.tournament import matrix_games, parse_condition
from stackelberg.llm.config import Dtype
from stackelberg.settings import Settings


class BehaviourSettings(Settings):
    """``evaluate.behaviour``: the follower's responses to held-out candidates, judged
    (``evaluation.behaviour``)."""

    responses: int = Field(
        0,
        ge=0,
        description="follower responses sampled after each held-out candidate of the "
        "untrained (its first evaluate.n) and every trained Refiner, each judged as matching "
        "a desired or an undesired response (0: none)",
    )
    followers: list[Literal["unseen", "measurer"]] = Field(
        default_factory=lambda: ["unseen"],
        description="who responds: unseen (models.unseen_follower), measurer (the Measurer; "
        "an ensemble: each member)",
    )
    speech_tokens: int = Field(24, ge=4, description="new tokens of a response")
    temperature: float = Field(0.7, ge=0, description="sampling temperature of a response")
    top_p: float = Field(0.9, gt=0, le=1, description="nucleus sampling of a response")
    judge_tokens: int = Field(
        6, ge=1, description="an LLM judge (label.scheme not scripted): new tokens of its answer"
    )


class EvaluateSettings(PlayerSettings):
    n: int = Field(4, ge=1, description="candidates per held-out instance and Refiner")
    bootstrap: int = Field(2000, ge=100, description="bootstrap resamples for the intervals")
    seed: int = Field(0, description="seed of the held-out candidates")
    conditions: list[str] = Field(
        default_factory=lambda: ["direct", "refiner+direct", "react", "refiner+react"],
        description="agents under test: an agent kind X, refiner+X (the trained Refiner "
        "rewrites X's speeches) or bestN+X (N >= 1: the Measurer's best of N untrained "
        "Refiner rewrites, the no-training peer; needs label.scheme: scripted); X and each "
        "wrapped X are paired on the same seeds",
    )
    opponent: str = Field("direct", description="the agent of every other seat (paper: direct)")
    camps: list[str] = Field(
        default_factory=list, description="camps tested (empty: the game's main two)"
    )
    tournament_games: int = Field(0, ge=0, description="seeds per camp and condition (0: none)")
    llm_games: int | None = Field(
        None,
        ge=0,
        description="games in all of each condition whose X is an LLM agent (direct, react, "
        "...; its refiner+X and bestN+X alike, so they stay paired), each of whose moves is a "
        "model call: its seeds take the tested camps in turn (1: one game, in the first "
        "camp); null: tournament_games seeds in every camp, as the other conditions",
    )
    tournament_seed: int = Field(100_000, description="first seed; apart from self-play seeds")
    options: dict[str, Any] = Field(
        default_factory=dict, description="game options of the tournament"
    )
    refiner_dtype: Dtype = Field(
        "auto",
        description="the Refiner's dtype in tournaments and in the held-out reward, before "
        "and after training (local; int8: CPU)",
    )
    batch_games: int = Field(
        256, ge=1, description="tables played at once (their LLM calls batched together)"
    )
    best_of: list[PositiveInt] = Field(
        default_factory=list,
        description="best-of-k held out, the no-training peer: the untrained Refiner samples "
        "max(best_of) candidates and the Measurer keeps the best of the first k, for each k "
        "(e.g. [1, 4, 8]); empty: none",
    )
    examples: int = Field(
        5, ge=0, description="held-out instances shown side by side in the report"
    )
    viewer_games: int = Field(
        4,
        ge=0,
        description="tournament games written as viewer pages (reports/GAME/games, MLflow "
        "artifacts): the first of each condition, in turn",
    )
    behaviour: BehaviourSettings = Field(
        default_factory=BehaviourSettings,
        description="behaviour, not just the Measurer's number: the follower responds to "
        "held-out candidates and the labeler judges its responses",
    )

    def camps_in_turn(self) -> list[str]:
        """The conditions whose seeds take the camps in turn: those of LLM players, when
        ``llm_games`` is set."""
        if self.llm_games is None:
            return []
        return [c for c in self.conditions if parse_condition(c).kind in LLM_AGENT_KINDS]

    def condition_seeds(self) -> dict[str, range]:
        """Each condition's seeds (``games_of``), all from ``tournament_seed`` on, so that
        every pair meets the same deals."""
        first = self.tournament_seed
        return {c: range(first, first + self.games_of(c)) for c in self.conditions}

    def seeds(self) -> range:
        """Every seed some condition plays."""
        most = max(map(self.games_of, self.conditions), default=0)
        return range(self.tournament_seed, self.tournament_seed + most)

    def matrix(self) -> dict[str, Any]:
        """The tournament matrix these settings make: ``play_matrix``'s (and, but for the
        opponent, the batching and the players' options, ``matrix_games``') arguments."""
        return {
            "conditions": self.conditions,
            "seeds": self.condition_seeds(),
            "camps": self.camps or None,
            "options": self.options,
            "camps_in_turn": self.camps_in_turn(),
            "opponent": self.opponent,
            "batch_games": self.batch_games,
            "agent_options": self.agent_options(),
        }

    def games(self, game: str) -> list:
        """Every game of the tournaments (``matrix_games``), in the order they are played."""
        played = ("opponent", "batch_games", "agent_options")
        return matrix_games(game, **{k: v for k, v in self.matrix().items() if k not in played})

    def games_of(self, condition: str) -> int:
        """The seeds ``condition`` plays: ``llm_games`` (in all, the camps in turn) for a
        condition of ``camps_in_turn``, else ``tournament_games`` (in every camp)."""
        if condition in self.camps_in_turn():
            return self.llm_games
        return self.tournament_games
