"""The pipeline's parameters (params.yaml): one validated section per stage.

Every section is a pydantic model with ``extra="forbid"``: an unknown key or a bad value
stops the run with one line naming the key. Per-game tuning lives in ``game_overrides``
(e.g. ``game_overrides.werewolf.grpo.learning_rate``) so that DVC reruns only that game's
stages when one game's values change, while ``dvc exp run -S score.variant=pos_only``
changes a shared value for every game.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from stackelberg.games import GAME_NAMES, check_game_name
from stackelberg.llm.config import Dtype, LLMConfig

GameName = Annotated[str, AfterValidator(check_game_name)]


class ParamsError(ValueError):
    """A params file that cannot be used; the message is one line naming the key."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WeightedLLMConfig(LLMConfig):
    """One model of a list: drawn for a game with probability proportional to ``weight``."""

    weight: float = Field(1.0, gt=0, description="relative chance of this model per game")

    def config(self) -> LLMConfig:
        return LLMConfig(**self.model_dump(exclude={"weight"}))


#: a model, or a list of weighted models of which each game draws one (from its seed)
ModelEntry = LLMConfig | list[WeightedLLMConfig]


def entry_models(entry: ModelEntry) -> list[LLMConfig]:
    """Every model an entry may use."""
    return [m.config() for m in entry] if isinstance(entry, list) else [entry]


def draw_model(entry: ModelEntry, seed: int) -> LLMConfig:
    """The model of the game with this seed: the same seed always draws the same model, so
    paired conditions (X and refiner+X on one seed) meet the same model."""
    if not isinstance(entry, list):
        return entry
    rng = random.Random(f"model:{seed}")
    return rng.choices(entry, weights=[m.weight for m in entry])[0].config()


class ModelsParams(Section):
    backend: ModelEntry = Field(
        default_factory=LLMConfig,
        description="intent labeling LLM (a list: each instance's game draws one)",
    )
    refiner: LLMConfig = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the Refiner's base model (local backend: GRPO trains a LoRA on it)",
    )
    measurer: LLMConfig = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the Measurer that plays the follower and scores responses",
    )
    player: ModelEntry = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the LLM players (direct, react) of self-play and of the tournaments "
        "(a list: each game draws one)",
    )

    @field_validator("backend", "player")
    @classmethod
    def _not_empty(cls, value: ModelEntry) -> ModelEntry:
        if isinstance(value, list) and not value:
            raise ValueError("an empty list of models; give one model or several")
        return value


class PlayerParams(Section):
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
    speech_tokens: int = Field(32, ge=4, description="LLM players: new tokens per speech")
    thought_tokens: int = Field(40, ge=4, description="react players: new tokens per thought")
    max_prompt_tokens: int = Field(512, ge=128, description="LLM players: prompt budget")

    def agent_options(self) -> dict[str, Any]:
        """The keyword arguments of an LLM agent."""
        return {
            "choice": self.choice,
            "max_choice_attempts": self.max_choice_attempts,
            "speech_tokens": self.speech_tokens,
            "thought_tokens": self.thought_tokens,
            "max_prompt_tokens": self.max_prompt_tokens,
        }


class SelfplayParams(PlayerParams):
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
    full_information: bool = Field(
        True, description="the labeler sees every role (paper); false: the speaker's view (release)"
    )
    show_base_utterance: bool = Field(
        True,
        description="the labeler reads the speech it labels (false: the release labels "
        "before the speaker talks)",
    )
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
    max_new_tokens: int = Field(
        48, ge=8, description="the Refiner's completion limit in sampling, GRPO, play (paper: 512)"
    )
    max_prompt_tokens: int = Field(768, ge=128, description="prompt budget; oldest history cut")
    batch_instances: int = Field(8, ge=1)
    # The Refiner's prompt and output (agents.refiner.RefinerStyle), the same in sampling,
    # GRPO and play.
    rules: bool = Field(False, description="the game's rules in the Refiner prompt (release)")
    output_format: Literal["speech", "analysis"] = Field(
        "speech",
        description="speech: the new speech alone on one line, stops at the newline; "
        "analysis: the release's 'Analysis: ...' and 'Response: ...' lines",
    )
    speech_words: int = Field(20, ge=1, description="longest speech asked for (release: 100)")


class ScoreParams(Section):
    variant: Literal["full", "pos_only", "neg_only"] = "full"
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
    max_completion_length: int | None = Field(
        None, ge=8, description="None: sample.max_new_tokens (one limit); a number: GRPO and play"
    )
    temperature: float = Field(0.7, gt=0)
    top_p: float = Field(0.9, gt=0, le=1)
    prompts_per_step: int = Field(1, ge=1, description="distinct prompts in one optimizer step")
    seed: int = 0
    use_vllm: bool = Field(False, description="TRL generation through vLLM (GPU only)")


class EvaluateParams(PlayerParams):
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
    refiner_dtype: Dtype = Field(
        "auto", description="the trained Refiner's dtype in tournaments (local; int8: CPU)"
    )
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
    games: list[GameName] = Field(default_factory=lambda: list(GAME_NAMES))
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
    try:
        check_pairings(params)
    except ParamsError as err:
        raise ParamsError(f"{path}: {err}") from None
    return params


def _where(role: str, entry: ModelEntry, i: int) -> str:
    return f"models.{role}[{i}]" if isinstance(entry, list) else f"models.{role}"


def check_pairings(params: Params) -> None:
    """Refuse, before anything starts, what cannot work: a role on a backend that cannot do
    what the role needs, and agents that do not exist or do not fit the game."""
    from stackelberg.agents import LLM_AGENT_KINDS, seat_agents
    from stackelberg.evaluation.tournament import build_agent
    from stackelberg.games import ConfigError, make_game

    models = params.models
    if not models.measurer.can_score():
        raise ParamsError(
            f"models.measurer: the Measurer scores responses by their log-probabilities, but "
            f"the {models.measurer.describe()} gives none; use a local model or a vLLM server "
            "(backend: openai)"
        )
    if models.refiner.backend != "local":
        raise ParamsError(
            f"models.refiner: GRPO trains the Refiner's weights, so it must be a local model "
            f"(backend: local), not the {models.refiner.describe()}"
        )
    for game in params.games:
        for stage in ("selfplay", "evaluate"):
            section = params.for_game(stage, game)
            if section.choice != "score":
                continue
            for i, config in enumerate(entry_models(models.player)):
                if not config.can_score():
                    raise ParamsError(
                        f"{_where('player', models.player, i)}: {stage}.choice is 'score' "
                        f"({game}), but the {config.describe()} gives no log-probabilities; "
                        "set choice: auto or generate, or use a model that can score"
                    )
        selfplay, evaluate = params.for_game("selfplay", game), params.for_game("evaluate", game)
        try:
            n = make_game(game, selfplay.options).reset(selfplay.seed).n_players
            for kind in seat_agents(selfplay.agents, n):
                build_agent(kind, game, {"default": _NoModel()} if kind in LLM_AGENT_KINDS else {})
            for condition in (*evaluate.conditions, evaluate.opponent):
                build_agent(condition, game, {"default": _NoModel(), "refiner": _NoModel()})
            make_game(game, evaluate.options)
        except ConfigError as err:
            raise ParamsError(f"{game}: {err}") from None


class _NoModel:
    """A stand-in backend for checking agent names without loading a model."""

    name, model, can_score, context_window = "check", "check", True, 4096
