"""The params schema: ``Params``, its sections, per-game overrides, and ``explain``'s key list."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    PositiveInt,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from stackelberg.agents import LLM_AGENT_KINDS
from stackelberg.agents.llm_agents import MAX_SPEECH_ATTEMPTS
from stackelberg.agents.refiner import RefinerProfile
from stackelberg.evaluation.tournament import parse_condition
from stackelberg.games import GAME_NAMES, GameName
from stackelberg.llm.config import Dtype, LLMConfig
from stackelberg.params.models import ModelsParams, WeightedLLMConfig
from stackelberg.persuasion.candidates import SampleSettings
from stackelberg.persuasion.exact_follower import ExactFollowerConfig
from stackelberg.persuasion.intents import LabelSettings
from stackelberg.persuasion.measurer import MeasurerMember, ScoreSettings
from stackelberg.settings import Settings, one_line
from stackelberg.training.grpo_settings import GRPOSettings
from stackelberg.training.lspo import LspoSettings
from stackelberg.training.strategist import StrategistSettings
from stackelberg.training.tactics import TacticsSettings


class ParamsError(ValueError):
    """A params file that cannot be used; the message is one line naming the key."""


class PlayerParams(Settings):
    """How the LLM players of a stage play (self-play, tournaments)."""

    choice: Literal["auto", "score", "generate"] = Field(
        "auto",
        description="how LLM players choose among legal options: score each option (needs "
        "log-probabilities), generate an answer to a numbered list, or auto (score where the "
        "model can)",
    )
    max_choice_attempts: int = Field(
        3, ge=1, description="generate: answers asked for before a random legal option"
    )
    max_speech_attempts: int = Field(
        MAX_SPEECH_ATTEMPTS,
        ge=1,
        description="LLM players: samples of a speech (each with its own seed) while the "
        "model only echoes its prompt (e.g. a heading), before the fallback line",
    )
    speech_tokens: int = Field(32, ge=4, description="LLM players: new tokens per speech")
    thought_tokens: int = Field(40, ge=4, description="react players: new tokens per thought")
    reasoning_tokens: int = Field(
        48,
        ge=4,
        description="recon, lasi, belief, llm_ins, rl_ins players: new tokens per reasoning step "
        "(analysis, draft, strategy, belief)",
    )
    max_prompt_tokens: int = Field(512, ge=128, description="LLM players: prompt budget")

    def agent_options(self) -> dict[str, Any]:
        """The keyword arguments of an LLM agent."""
        return {
            "choice": self.choice,
            "max_choice_attempts": self.max_choice_attempts,
            "max_speech_attempts": self.max_speech_attempts,
            "speech_tokens": self.speech_tokens,
            "thought_tokens": self.thought_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "max_prompt_tokens": self.max_prompt_tokens,
        }


class SelfplayParams(PlayerParams):
    games: int = Field(20, ge=1, description="games per game type")
    seed: int = Field(0, description="seed of the first game; game i uses seed + i")
    agents: str = Field("scripted", description="agent kind for all seats, or one per seat")
    options: dict[str, Any] = Field(
        default_factory=dict, description="game options (docs/games.md)"
    )
    batch_games: int = Field(8, ge=1, description="games played at once (LLM calls batched)")


class SelectParams(Settings):
    instances: int = Field(12, ge=1, description="instances to select (paper: 4000)")
    test_fraction: float = Field(0.25, gt=0, lt=1, description="share of game seeds held out")
    seed: int = Field(0, description="seed of the balanced draw and the split")
    min_words: int = Field(3, ge=1, description="speech shorter than this is not an instance")


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


class EvaluateParams(PlayerParams):
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
        description="seeds per camp of the conditions whose X is an LLM agent (direct, react, "
        "...; its refiner+X and bestN+X alike, so they stay paired), each of whose moves is a "
        "model call; null: tournament_games",
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


    def games_of(self, condition: str) -> int:
        """Seeds per camp that ``condition`` plays: ``llm_games`` where its X is an LLM agent
        (when set), else ``tournament_games``."""
        llm = parse_condition(condition).kind in LLM_AGENT_KINDS
        return self.llm_games if llm and self.llm_games is not None else self.tournament_games


class TrackingParams(Settings):
    tracking_uri: str = Field(
        "sqlite:///mlruns.db", description="MLflow; $MLFLOW_TRACKING_URI wins"
    )
    experiment: str = Field("stackelberg", description="the MLflow experiment of the runs")
    artifact_location: str = Field(
        "mlartifacts", description="folder for the experiment's artifacts"
    )


#: the Prefect task runner of each ``orchestration.task_runner`` that needs a package beyond
#: prefect itself (the ``cluster`` extra), by the module it imports
RUNNER_PACKAGES = {"dask": "prefect_dask", "ray": "prefect_ray"}


class OrchestrationParams(Settings):
    deploy_cron: str = Field("0 3 * * *", description="schedule of the served pipeline deployment")
    task_retries: int = Field(2, ge=0, description="retries of a failed work item (a task)")
    task_runner: Literal["threads", "dask", "ray"] = Field(
        "threads",
        description="where a stage's work items run: threads (this process, one item at a "
        "time), dask or ray (worker processes, items in parallel)",
    )
    address: str | None = Field(
        None,
        description="dask or ray: the address of a running cluster (dask: tcp://HOST:8786, "
        "ray: HOST:6379 or ray://HOST:10001); none starts a local cluster per stage",
    )
    workers: int | None = Field(
        None,
        ge=1,
        description="dask or ray without an address: worker processes of the local cluster "
        "(default: one per CPU core)",
    )

    @field_validator("task_runner")
    @classmethod
    def _installed(cls, value: str) -> str:
        # find_spec looks the package up without importing it: params load stays fast.
        if value in RUNNER_PACKAGES and importlib.util.find_spec(RUNNER_PACKAGES[value]) is None:
            raise ValueError(f"{value!r} needs the 'cluster' extra: pip install -e '.[cluster]'")
        return value

    @field_validator("address", "workers")
    @classmethod
    def _cluster_only(cls, value: Any, info: ValidationInfo) -> Any:
        runner = info.data.get("task_runner")
        if value is not None and runner == "threads":
            raise ValueError(f"is for task_runner dask or ray, not {runner}")
        if value is not None and info.field_name == "workers" and info.data.get("address"):
            raise ValueError("sizes the local cluster; a cluster at an address has its own")
        return value


STAGE_SECTIONS = ("selfplay", "select", "label", "sample", "score", "grpo", "evaluate")


def _section(cls: type[Settings], description: str) -> Any:
    return Field(default_factory=cls, description=description)


class Params(Settings):
    games: list[GameName] = Field(
        default_factory=lambda: list(GAME_NAMES),
        description="the games the pipeline runs (each stage per game)",
    )
    models: ModelsParams = _section(ModelsParams, "the LLM of each role")
    selfplay: SelfplayParams = _section(SelfplayParams, "self-play games, the training data")
    select: SelectParams = _section(SelectParams, "instances: a speech and its follower")
    label: LabelSettings = _section(LabelSettings, "intents: desired and undesired responses")
    sample: SampleSettings = _section(SampleSettings, "the Refiner's candidates, prompt and output")
    score: ScoreSettings = _section(ScoreSettings, "the Measurer reward of each candidate")
    grpo: GRPOSettings = _section(GRPOSettings, "GRPO training of the Refiner's LoRA")
    evaluate: EvaluateParams = _section(EvaluateParams, "held-out reward and win-rate tournaments")
    tactics: TacticsSettings = _section(
        TacticsSettings, "the rl_ins tactic policy: REINFORCE on scripted ONUW self-play"
    )
    strategist: StrategistSettings = _section(
        StrategistSettings, "the strategist's value model: fitted on scripted Avalon self-play"
    )
    lspo: LspoSettings = _section(
        LspoSettings, "the lspo policy: latent strategies, CFR on the abstract Werewolf game"
    )
    tracking: TrackingParams = _section(TrackingParams, "where MLflow records the runs")
    orchestration: OrchestrationParams = _section(
        OrchestrationParams, "Prefect: retries, schedule, where work items run"
    )
    game_overrides: dict[GameName, dict[str, dict[str, Any]]] = Field(
        default_factory=dict, description="per game, per stage section: values that differ"
    )

    @field_validator("game_overrides")
    @classmethod
    def _known_sections(cls, value: dict[str, dict[str, dict[str, Any]]]):
        for game, sections in value.items():
            for name in sections:
                if name not in STAGE_SECTIONS:
                    raise ValueError(
                        f"{game}: unknown section {name!r}; allowed: {', '.join(STAGE_SECTIONS)}"
                    )
        return value

    def refiner_profile(
        self, game: str | None, adapter: str | Path | None = None
    ) -> RefinerProfile:
        """The Refiner as it runs for ``game`` (None: the shared sections), untrained or with
        a trained ``adapter`` beside its weights: the sample section's style, prompt budget,
        token limit, temperature and top_p (``SampleSettings.profile``; GRPO's rollouts
        sample at ``grpo.temperature`` and ``grpo.top_p``, its own), and
        ``evaluate.refiner_dtype``, the dtype it plays in."""
        sample = self.sample if game is None else self.for_game("sample", game)
        section = self.evaluate if game is None else self.for_game("evaluate", game)
        dtype = section.refiner_dtype
        update = ({"adapter": str(adapter)} if adapter is not None else {}) | (
            {"dtype": dtype} if dtype != "auto" else {}
        )
        return sample.profile(self.models.refiner.model_copy(update=update))

    def best_of_options(self, game: str) -> dict[str, Any]:
        """How a ``bestN+X`` speaker labels and scores (``build_agent``'s
        ``best_of_options``): as the label and score stages do."""
        return {"label": self.for_game("label", game), "score": self.for_game("score", game)}

    def for_game(self, section: str, game: str) -> Any:
        """A stage section with the game's overrides applied (and validated)."""
        base = getattr(self, section)
        override = (self.game_overrides.get(game) or {}).get(section) or {}
        if not override:
            return base
        try:
            return type(base)(**{**base.model_dump(), **override})
        except ValidationError as err:
            raise ParamsError(one_line(err, prefix=f"game_overrides.{game}.{section}")) from None


def explain(model: type[BaseModel] | None = None, prefix: str = "") -> list[tuple[str, str, str]]:
    """Every params key as (key, default, description), each section before its keys; the
    keys of a model config are listed once, as ``models.<role>.KEY``."""
    model = model or Params
    rows = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        nested = field.annotation if isinstance(field.annotation, type) else None
        if nested is not None and issubclass(nested, Settings) and nested is not LLMConfig:
            rows.append((key, "", field.description or ""))
            rows += explain(nested, f"{key}.")
            continue
        default = field.get_default(call_default_factory=True)
        if isinstance(default, LLMConfig):
            default = default.model_dump(include={"backend", "model"})
        rows.append((key, json.dumps(default), field.description or ""))
    if model is ModelsParams:
        rows += explain(LLMConfig, "models.<role>.")
        rows.append(
            ("models.<role>.weight", "1.0", WeightedLLMConfig.model_fields["weight"].description)
        )
        rows += [
            (f"models.measurer[].{key}", json.dumps(field.default), field.description or "")
            for key, field in MeasurerMember.model_fields.items()
            if key not in LLMConfig.model_fields
        ]
        rows.append(
            ("models.measurer.exact", "", ExactFollowerConfig.model_fields["exact"].description)
        )
    return rows
