"""The params schema: ``Params``, its sections, per-game overrides, and ``explain``'s key list."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from stackelberg.agents.play_settings import SelfplaySettings
from stackelberg.agents.refiner import RefinerProfile
from stackelberg.evaluation.settings import EvaluateSettings
from stackelberg.games import GAME_NAMES, GameName
from stackelberg.llm.config import LLMConfig
from stackelberg.params.models import ModelsParams, WeightedLLMConfig
from stackelberg.persuasion.candidates import SampleSettings
from stackelberg.persuasion.context import SelectSettings
from stackelberg.persuasion.exact_follower import ExactFollowerConfig
from stackelberg.persuasion.intents import LabelSettings
from stackelberg.persuasion.measurer import MeasurerMember, ScoreSettings
from stackelberg.settings import Settings, one_line
from stackelberg.training.grpo_settings import GRPOSettings
from stackelberg.training.lspo import LspoSettings
from stackelberg.training.strategist import StrategistSettings
from stackelberg.training.tactics import TacticsSettings
from stackelberg.training.warm_start import WarmStartSettings


class ParamsError(ValueError):
    """A params file that cannot be used; the message is one line naming the key."""


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


STAGE_SECTIONS = (
    "selfplay",
    "select",
    "label",
    "sample",
    "score",
    "warm_start",
    "grpo",
    "evaluate",
)


def _section(cls: type[Settings], description: str) -> Any:
    return Field(default_factory=cls, description=description)


class Params(Settings):
    games: list[GameName] = Field(
        default_factory=lambda: list(GAME_NAMES),
        description="the games the pipeline runs (each stage per game)",
    )
    models: ModelsParams = _section(ModelsParams, "the LLM of each role")
    selfplay: SelfplaySettings = _section(SelfplaySettings, "self-play games, the training data")
    select: SelectSettings = _section(SelectSettings, "instances: a speech and its follower")
    label: LabelSettings = _section(LabelSettings, "intents: desired and undesired responses")
    sample: SampleSettings = _section(SampleSettings, "the Refiner's candidates, prompt and output")
    score: ScoreSettings = _section(ScoreSettings, "the Measurer reward of each candidate")
    warm_start: WarmStartSettings = _section(
        WarmStartSettings, "a supervised warm start of the Refiner's LoRA before GRPO"
    )
    grpo: GRPOSettings = _section(GRPOSettings, "GRPO training of the Refiner's LoRA")
    evaluate: EvaluateSettings = _section(
        EvaluateSettings, "held-out reward and win-rate tournaments"
    )
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
        a trained ``adapter`` folder (``LLMConfig.with_adapter``: beside its local weights, or
        the LoRA module a server serves it as): the sample section's style, prompt budget,
        token limit, temperature and top_p (``SampleSettings.profile``; GRPO's rollouts
        sample at ``grpo.temperature`` and ``grpo.top_p``, its own), and
        ``evaluate.refiner_dtype``, the dtype it plays in."""
        sample = self.sample if game is None else self.for_game("sample", game)
        section = self.evaluate if game is None else self.for_game("evaluate", game)
        dtype = section.refiner_dtype
        model = self.models.refiner.model_copy(update={"dtype": dtype} if dtype != "auto" else {})
        return sample.profile(model if adapter is None else model.with_adapter(adapter))

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
