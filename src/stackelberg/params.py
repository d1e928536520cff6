"""The pipeline's parameters (params.yaml): one validated section per stage.

Every section is a pydantic model with ``extra="forbid"``: an unknown key or a bad value
stops the run with one line naming the key. The sections of the method's stages are the
library's own settings classes (``label``: LabelSettings, ``sample``: SampleSettings,
``score``: ScoreSettings, ``grpo``: GRPOSettings, ``tactics``: TacticsSettings,
``strategist``: StrategistSettings, ``lspo``: LspoSettings), so a key is
defined once. Per-game tuning lives in ``game_overrides``
(e.g. ``game_overrides.werewolf.grpo.learning_rate``) so that DVC reruns only that game's
stages when one game's values change, while ``dvc exp run -S score.variant=pos_only``
changes a shared value for every game.
"""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    Field,
    PositiveInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from stackelberg.agents.llm_agents import MAX_SPEECH_ATTEMPTS
from stackelberg.games import GAME_NAMES, GameName
from stackelberg.llm.config import Dtype, LLMConfig
from stackelberg.persuasion.candidates import SampleSettings, trained_sampling
from stackelberg.persuasion.intents import VIEWS, LabelSettings
from stackelberg.persuasion.measurer import (
    MeasurerEntry,
    MeasurerMember,
    ScoreSettings,
    member_names,
)
from stackelberg.settings import Settings, one_line
from stackelberg.training.grpo_settings import GRPOSettings
from stackelberg.training.lspo import GAME as LSPO_GAME
from stackelberg.training.lspo import LspoSettings
from stackelberg.training.strategist import GAME as STRATEGIST_GAME
from stackelberg.training.strategist import StrategistSettings
from stackelberg.training.tactics import GAME as TACTICS_GAME
from stackelberg.training.tactics import TacticsSettings


class ParamsError(ValueError):
    """A params file that cannot be used; the message is one line naming the key."""


class WeightedLLMConfig(LLMConfig):
    """One model of a list: drawn for a game with probability proportional to ``weight``."""

    weight: float = Field(1.0, gt=0, description="relative chance of this model per game")

    def config(self) -> LLMConfig:
        return LLMConfig(**self.model_dump(exclude={"weight"}))


#: a model, or a list of weighted models of which each game draws one (from its seed)
ModelEntry = LLMConfig | list[WeightedLLMConfig]


def entry_models(entry: ModelEntry | None) -> list[LLMConfig]:
    """Every model an entry may use (none for an optional role left out)."""
    if entry is None:
        return []
    return [m.config() for m in entry] if isinstance(entry, list) else [entry]


def draw_model(entry: ModelEntry, seed: int) -> LLMConfig:
    """The model of the game with this seed: the same seed always draws the same model, so
    paired conditions (X and refiner+X on one seed) meet the same model."""
    if not isinstance(entry, list):
        return entry
    rng = random.Random(f"model:{seed}")
    return rng.choices(entry, weights=[m.weight for m in entry])[0].config()


class ModelsParams(Settings):
    labeler: ModelEntry = Field(
        default_factory=LLMConfig,
        description="the intent labeler of label.scheme per_response and json, unused by "
        "scripted; also the LLM evaluator of Sotopia's evaluator: llm (a list: each "
        "instance's game draws one)",
    )
    refiner: LLMConfig = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the Refiner's base model (local backend: GRPO trains a LoRA on it)",
    )
    measurer: MeasurerEntry = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the Measurer that plays the follower and scores responses (a list: an "
        "ensemble follower, every member scores and the reward is the weighted mean of "
        "their rewards, each member's kept beside it)",
    )
    player: ModelEntry = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the LLM players (direct, react) of self-play and of the tournaments "
        "(a list: each game draws one)",
    )
    unseen_follower: LLMConfig | None = Field(
        None,
        description="a follower the Refiner never trained against (another model family): "
        "it rescored the held-out candidates of every Refiner, beside the Measurer (the "
        "Measurer is not the real follower); null: none",
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "backend" in data:
            raise ValueError("'backend' is now 'labeler' (the intent labeling LLM): rename the key")
        return data

    @field_validator("labeler", "player", "measurer")
    @classmethod
    def _not_empty(cls, value: ModelEntry) -> ModelEntry:
        if isinstance(value, list) and not value:
            raise ValueError("an empty list of models; give one model or several")
        return value

    @field_validator("measurer")
    @classmethod
    def _members_named_once(cls, value: MeasurerEntry) -> MeasurerEntry:
        if isinstance(value, list):
            names = member_names(value)
            if twice := sorted({n for n in names if names.count(n) > 1}):
                raise ValueError(
                    f"two members named {twice[0]!r}; give each member its own name (name: ...)"
                )
        return value


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

    def refiner_sampling(self, game: str) -> SampleSettings:
        """The Refiner as GRPO trains it and ``refiner+X`` plays it (``trained_sampling``)."""
        limit = self.for_game("grpo", game).max_completion_length
        return trained_sampling(self.for_game("sample", game), limit)

    def refiner_model(self, game: str | None, adapter: str | Path | None = None) -> LLMConfig:
        """The Refiner as tournaments play it (``evaluate.refiner_dtype``, the ``game``'s; None:
        the shared section's), untrained or with a trained ``adapter`` beside its weights: the
        one definition of the evaluate stage and of ``stackelberg serve``."""
        section = self.evaluate if game is None else self.for_game("evaluate", game)
        dtype = section.refiner_dtype
        update = ({"adapter": str(adapter)} if adapter is not None else {}) | (
            {"dtype": dtype} if dtype != "auto" else {}
        )
        return self.models.refiner.model_copy(update=update)

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
        raise ParamsError(f"{path}: {one_line(err)}") from None
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


def unscoring(role: str, entry: ModelEntry) -> tuple[str, LLMConfig] | None:
    """The first model of ``models.<role>`` that gives no log-probabilities, with its place
    (``models.player[1]``); None when every one can score."""
    for i, config in enumerate(entry_models(entry)):
        if not config.can_score():
            return _where(role, entry, i), config
    return None


def check_pairings(params: Params) -> None:
    """Refuse, before anything starts, what cannot work: a role on a backend that cannot do
    what the role needs, and agents that do not exist or do not fit the game."""
    from stackelberg.agents import LLM_AGENT_KINDS, llm_agent_class, seat_agents
    from stackelberg.evaluation.tournament import build_agent, parse_condition
    from stackelberg.games import ConfigError, make_game
    from stackelberg.persuasion.best_of import MEASURER_ROUTE, REFINER_BASE_ROUTE
    from stackelberg.persuasion.intents import SCRIPTED

    models = params.models
    if found := unscoring("measurer", models.measurer):
        raise ParamsError(
            f"{found[0]}: the Measurer scores responses by their log-probabilities, but the "
            f"{found[1].describe()} gives none; use a local model or a vLLM server "
            "(backend: openai)"
        )
    check_followers(params)
    unseen = models.unseen_follower
    if unseen is not None and not unseen.can_score():
        raise ParamsError(
            f"models.unseen_follower: it rescored held-out candidates by log-probabilities, "
            f"but the {unseen.describe()} gives none; use a local model or a vLLM server"
        )
    if models.refiner.backend != "local":
        raise ParamsError(
            f"models.refiner: GRPO trains the Refiner's weights, so it must be a local model "
            f"(backend: local), not the {models.refiner.describe()}"
        )
    for game in params.games:
        variant = params.for_game("score", game).variant
        if variant in params.for_game("grpo", game).variants:
            raise ParamsError(
                f"grpo.variants ({game}): {variant!r} is score.variant, the game's own Refiner; "
                "list only the other variants"
            )
        for stage in ("selfplay", "evaluate"):
            section = params.for_game(stage, game)
            if section.choice != "score":
                continue
            if found := unscoring("player", models.player):
                raise ParamsError(
                    f"{found[0]}: {stage}.choice is 'score' ({game}), but the "
                    f"{found[1].describe()} gives no log-probabilities; set choice: auto or "
                    "generate, or use a model that can score"
                )
        selfplay, evaluate = params.for_game("selfplay", game), params.for_game("evaluate", game)
        try:
            n = make_game(game, selfplay.options).reset(selfplay.seed).n_players
            for kind in seat_agents(selfplay.agents, n):
                build_agent(kind, game, {"default": _NoModel()} if kind in LLM_AGENT_KINDS else {})
                if kind in LLM_AGENT_KINDS and needs_later_model(llm_agent_class(kind)):
                    raise ParamsError(
                        f"{game}: selfplay.agents: {kind} plays with a trained model of a later "
                        "stage (rl_ins: the tactics stage's policy); name it in "
                        "evaluate.conditions instead"
                    )
            named = (parse_condition(c).refiner_route for c in evaluate.conditions)
            routes = ("default", "refiner", REFINER_BASE_ROUTE, MEASURER_ROUTE, *named)
            for condition in (*evaluate.conditions, evaluate.opponent):
                build_agent(condition, game, dict.fromkeys(routes, _NoModel()))
            make_game(game, evaluate.options)
        except ConfigError as err:
            raise ParamsError(f"{game}: {err}") from None
        scheme = params.for_game("label", game).scheme
        searched = [c for c in evaluate.conditions if parse_condition(c).best_of]
        if searched and scheme != SCRIPTED:
            raise ParamsError(
                f"evaluate.conditions ({game}): {searched[0]} labels speeches at play time with "
                f"label.scheme: {SCRIPTED}, not {scheme}; set label.scheme: {SCRIPTED} or drop it"
            )
    for section, game in (
        ("tactics", TACTICS_GAME),
        ("strategist", STRATEGIST_GAME),
        ("lspo", LSPO_GAME),
    ):
        try:
            make_game(game, getattr(params, section).options)
        except ConfigError as err:
            raise ParamsError(f"{section}.options: {err}") from None
    check_refiners_beside(params)


def check_refiners_beside(params: Params) -> None:
    """Refuse Refiners trained beside the games' own that cannot be trained or found: a
    joint Refiner (``grpo.joint``) on a game the run does not have, set per game, or on a
    game whose overrides change the Refiner's prompt or reward (it trains with the shared
    sections, so that one game's overrides do not retrain it); a Refiner on the other view's
    intents without them (``label.both_views``) or on the view the game's own has; a
    ``refiner-NAME+X`` condition whose Refiner no stage trains."""
    from stackelberg.evaluation.tournament import parse_condition
    from stackelberg.training.grpo_outputs import JOINT_REFINER

    joint = params.grpo.joint
    if missing := [g for g in joint if g not in params.games]:
        raise ParamsError(
            f"grpo.joint: {missing[0]} is not in games {params.games}; a joint Refiner trains "
            "on games the run has (add it to games or drop it from grpo.joint)"
        )
    for game, sections in params.game_overrides.items():
        if "joint" in (sections.get("grpo") or {}):
            raise ParamsError(
                f"game_overrides.{game}.grpo.joint: the joint Refiner is one for all games; "
                "set grpo.joint"
            )
    shared = trained_sampling(params.sample, params.grpo.max_completion_length)
    for game in joint:
        own = params.refiner_sampling(game)
        if (own.style, own.max_prompt_tokens) != (shared.style, shared.max_prompt_tokens) or (
            params.for_game("score", game) != params.score
        ):
            raise ParamsError(
                f"grpo.joint: game_overrides.{game} changes the Refiner's prompt, completion "
                "limit or reward (sample's rules, output_format, speech_words, max_new_tokens, "
                "max_prompt_tokens; grpo.max_completion_length; score); the joint Refiner "
                f"trains with the shared sections: set the value there or leave {game} out"
            )
    for game in params.games:
        label = params.for_game("label", game)
        for variant in params.for_game("grpo", game).variants:
            if variant not in VIEWS:
                continue
            if variant == label.view:
                raise ParamsError(
                    f"grpo.variants ({game}): {variant!r} is label.full_information's view, the "
                    "game's own Refiner's; list the other view"
                )
            if not label.both_views:
                raise ParamsError(
                    f"grpo.variants ({game}): {variant!r} trains on the other view's intents; "
                    "set label.both_views: true"
                )
        variants = params.for_game("grpo", game).variants
        for condition in params.for_game("evaluate", game).conditions:
            name = parse_condition(condition).refiner
            if name == JOINT_REFINER and not joint:
                raise ParamsError(
                    f"evaluate.conditions ({game}): {condition} plays the joint Refiner; set "
                    "grpo.joint (the games it trains on)"
                )
            if name and name != JOINT_REFINER and name not in variants:
                raise ParamsError(
                    f"evaluate.conditions ({game}): {condition}: no Refiner named {name!r} is "
                    f"trained; name {JOINT_REFINER} (grpo.joint) or one of grpo.variants "
                    f"{variants}"
                )


def check_followers(params: Params) -> None:
    """Refuse what the ensemble-vs-single comparison and the behaviour check cannot do: a
    Refiner against a member the Measurer does not have, a response from an unseen follower
    that is not set."""
    measurer = params.models.measurer
    members = member_names(measurer) if isinstance(measurer, list) else []
    for game in params.games:
        for name in params.for_game("grpo", game).member_refiners:
            if name not in members:
                have = f"its members: {', '.join(members)}" if members else "it is one model"
                raise ParamsError(
                    f"grpo.member_refiners ({game}): {name!r} is no member of models.measurer "
                    f"({have}); name a member of an ensemble Measurer (a list)"
                )
        behaviour = params.for_game("evaluate", game).behaviour
        if (
            behaviour.responses
            and "unseen" in behaviour.followers
            and not params.models.unseen_follower
        ):
            raise ParamsError(
                f"evaluate.behaviour.followers ({game}): the unseen follower responds, but "
                "models.unseen_follower is null; set it, or list measurer only"
            )


def needs_later_model(cls: type) -> bool:
    """Whether a kind plays with a model of a later stage it cannot do without (rl_ins's
    policy; strategist's value and lspo's policy are optional: without them the search
    values only finished games, the speech acts are drawn uniformly, so they self-play)."""
    return bool(getattr(cls, "route_args", None)) and not getattr(cls, "plays_untrained", False)


class _NoModel:
    """A stand-in backend for checking agent names without loading a model."""

    name, model, can_score, context_window = "check", "check", True, 4096


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
    return rows
