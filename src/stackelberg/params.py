"""The pipeline's parameters (params.yaml): one validated section per stage.

Every section is a pydantic model with ``extra="forbid"``: an unknown key or a bad value
stops the run with one line naming the key. Per-game tuning lives in ``game_overrides``
(e.g. ``game_overrides.werewolf.grpo.learning_rate``) so that DVC reruns only that game's
stages when one game's values change, while ``dvc exp run -S score.variant=pos_only``
changes a shared value for every game.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from stackelberg.llm.config import Dtype, LLMConfig

GameName = Literal["werewolf", "avalon", "onuw"]


class ParamsError(ValueError):
    """A params file that cannot be used; the message is one line naming the key."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelsParams(Section):
    backend: LLMConfig = Field(default_factory=LLMConfig, description="intent labeling LLM")
    refiner: LLMConfig = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the Refiner's base model (local backend: GRPO trains a LoRA on it)",
    )
    measurer: LLMConfig = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the Measurer that plays the follower and scores responses",
    )
    player: LLMConfig = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the LLM players (direct, react) of the evaluation tournaments; they "
        "choose by scoring options, so not the anthropic backend",
    )


class SelfplayParams(Section):
    games: int = Field(20, ge=1, description="games per game type")
    seed: int = Field(0, description="seed of the first game; game i uses seed + i")
    agents: str = Field("scripted", description="agent kind for all seats, or one per seat")
    options: dict[str, Any] = Field(default_factory=dict, description="game options (RULES.md)")
    batch_games: int = Field(8, ge=1, description="games played at once (LLM calls batched)")


class SelectParams(Section):
    instances: int = Field(12, ge=1, description="instances to select (paper: 4000)")
    test_fraction: float = Field(0.25, gt=0, lt=1, description="share of game seeds held out")
    seed: int = Field(0, description="seed of the balanced draw and the split")
    min_words: int = Field(3, ge=1, description="speech shorter than this is not an instance")


class LabelParams(Section):
    k: int = Field(3, ge=1, description="desired and undesired responses per instance")
    full_information: bool = Field(True, description="the labeler sees every role (paper)")
    scheme: Literal["per_response", "json"] = Field(
        "per_response", description="one generation per response (small models) or one JSON"
    )
    max_attempts: int = Field(3, ge=1, description="tries per response before dropping")
    max_new_tokens: int = Field(32, ge=8)
    temperature: float = Field(0.7, ge=0)
    top_p: float = Field(0.9, gt=0, le=1)
    max_prompt_tokens: int = Field(768, ge=128, description="prompt budget; oldest history cut")
    batch_instances: int = Field(8, ge=1, description="instances per Prefect task")


class SampleParams(Section):
    n: int = Field(4, ge=1, description="Refiner candidates per instance (paper: 8)")
    temperature: float = Field(0.7, ge=0)
    top_p: float = Field(0.9, gt=0, le=1)
    max_new_tokens: int = Field(64, ge=8, description="paper: 512")
    max_prompt_tokens: int = Field(768, ge=128, description="prompt budget; oldest history cut")
    batch_instances: int = Field(8, ge=1)


class ScoreParams(Section):
    variant: Literal["full", "pos_only", "neg_only"] = "full"
    aggregation: Literal["mean", "sum"] = Field("mean", description="release: mean; summary: sum")
    clamp: float = Field(50.0, gt=0)
    free_words: int = Field(100, ge=0)
    full_penalty_words: int = Field(200, ge=1)
    max_penalty: float = Field(10.0, ge=0)
    batch_instances: int = Field(4, ge=1)


class GRPOParams(Section):
    num_generations: int = Field(4, ge=2, description="completions per prompt (paper: 8)")
    epsilon: float = Field(0.2, gt=0, description="clip range of the ratio")
    beta: float = Field(0.04, ge=0, description="KL coefficient to the reference policy")
    learning_rate: float = Field(1e-4, gt=0, description="paper: 1e-6 on a 7B model")
    epochs: float = Field(1.0, gt=0, description="paper: 3")
    loss_type: str = Field("grpo", description="TRL loss_type; the paper's GRPO is 'grpo'")
    scale_rewards: str = Field("group", description="TRL scale_rewards")
    lora_r: int = Field(16, ge=1)
    lora_alpha: int = Field(32, ge=1)
    max_completion_length: int = Field(48, ge=8, description="paper: 512")
    temperature: float = Field(0.7, gt=0)
    top_p: float = Field(0.9, gt=0, le=1)
    prompts_per_step: int = Field(1, ge=1, description="distinct prompts in one optimizer step")
    seed: int = 0
    use_vllm: bool = Field(False, description="TRL generation through vLLM (GPU only)")


class EvaluateParams(Section):
    n: int = Field(4, ge=1, description="candidates per held-out instance and Refiner")
    bootstrap: int = Field(2000, ge=100, description="bootstrap resamples for the intervals")
    seed: int = 0
    conditions: list[str] = Field(
        default_factory=lambda: ["direct", "refiner+direct", "react", "refiner+react"],
        description="agents under test (X and refiner+X are paired on the same seeds)",
    )
    opponent: str = Field("direct", description="the agent of every other seat (paper: direct)")
    camps: list[str] = Field(
        default_factory=list, description="camps tested (empty: the game's main two)"
    )
    tournament_games: int = Field(0, ge=0, description="seeds per camp and condition (0: none)")
    tournament_seed: int = Field(100_000, description="first seed; apart from self-play seeds")
    options: dict[str, Any] = Field(
        default_factory=dict, description="game options of the tournament"
    )
    speech_tokens: int = Field(32, ge=4, description="LLM players: new tokens per speech")
    thought_tokens: int = Field(40, ge=4, description="react players: new tokens per thought")
    refiner_dtype: Dtype = Field(
        "auto", description="the trained Refiner's dtype in tournaments (local; int8: CPU)"
    )
    max_prompt_tokens: int = Field(512, ge=128, description="LLM players: prompt budget")
    batch_games: int = Field(
        256, ge=1, description="tables played at once (their LLM calls batched together)"
    )


class TrackingParams(Section):
    tracking_uri: str = Field(
        "sqlite:///mlruns.db", description="MLflow; $MLFLOW_TRACKING_URI wins"
    )
    experiment: str = "stackelberg"
    artifact_location: str = Field(
        "mlartifacts", description="folder for the experiment's artifacts"
    )


class OrchestrationParams(Section):
    deploy_cron: str = Field("0 3 * * *", description="schedule of the served pipeline deployment")
    task_retries: int = Field(2, ge=0)


STAGE_SECTIONS = ("selfplay", "select", "label", "sample", "score", "grpo", "evaluate")


class Params(Section):
    games: list[GameName] = Field(default_factory=lambda: ["werewolf", "avalon", "onuw"])
    models: ModelsParams = Field(default_factory=ModelsParams)
    selfplay: SelfplayParams = Field(default_factory=SelfplayParams)
    select: SelectParams = Field(default_factory=SelectParams)
    label: LabelParams = Field(default_factory=LabelParams)
    sample: SampleParams = Field(default_factory=SampleParams)
    score: ScoreParams = Field(default_factory=ScoreParams)
    grpo: GRPOParams = Field(default_factory=GRPOParams)
    evaluate: EvaluateParams = Field(default_factory=EvaluateParams)
    tracking: TrackingParams = Field(default_factory=TrackingParams)
    orchestration: OrchestrationParams = Field(default_factory=OrchestrationParams)
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

    def for_game(self, section: str, game: str) -> Any:
        """A stage section with the game's overrides applied (and validated)."""
        base = getattr(self, section)
        override = (self.game_overrides.get(game) or {}).get(section) or {}
        if not override:
            return base
        try:
            return type(base)(**{**base.model_dump(), **override})
        except ValidationError as err:
            raise ParamsError(_one_line(err, prefix=f"game_overrides.{game}.{section}")) from None


def _one_line(err: ValidationError, prefix: str = "") -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in (prefix, *e["loc"]) if str(x))
        value = e.get("input")
        shown = f" (got {value!r})" if not isinstance(value, dict | list) else ""
        parts.append(f"{loc or 'params'}: {e['msg']}{shown}")
    return "; ".join(parts)


def load_params(path: str | Path = "params.yaml") -> Params:
    """Read and validate a params file; every problem is reported as ParamsError."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ParamsError(f"{path}: no such params file") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise ParamsError(f"{path}: not valid YAML{where}") from None
    if not isinstance(raw, dict):
        raise ParamsError(f"{path}: expected a mapping of sections at the top level")
    try:
        params = Params(**raw)
    except ValidationError as err:
        raise ParamsError(f"{path}: {_one_line(err)}") from None
    for game in params.games:
        for section in STAGE_SECTIONS:
            params.for_game(section, game)
    return params
