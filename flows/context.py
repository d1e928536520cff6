"""What a stage needs at run time: its params, its files, and the models (loaded once).

A stage's paths, what it writes and what it reads, are its outputs and deps in dvc.yaml
(flows/graph.py). Backends are memoised per process by their config, so stages that share
a model (the embedded default: labeler, Refiner base and Measurer are one checkpoint) load
it once, also across stages of an in-process pipeline run.
"""

from __future__ import annotations

import ctypes
import gc
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from flows import graph
from stackelberg.llm import LLMConfig, make_llm
from stackelberg.params import ModelsParams, Params, entry_models, load_params
from stackelberg.persuasion.context import InstanceView, instance_rows
from stackelberg.persuasion.measurer import load_measurer

#: the params section of a stage not named after it (each runs once, not per game)
SECTION_OF = {"base_model": "models", "report": "evaluate", "grpo_joint": "grpo"}
#: the module of a stage that runs another stage's code: grpo_joint trains the joint Refiner
#: (grpo.joint) with the grpo stage's
MODULE_OF = {"grpo_joint": "grpo"}


def stage_module(stage: str) -> str:
    """The module of the stage named ``stage`` (``stages.<name>``, or ``MODULE_OF``'s)."""
    return f"stages.{MODULE_OF.get(stage, stage)}"


def register_stage(name: str, outs: tuple[str, ...], section: str | None = None) -> None:
    """Run ``stages.<name>``, a module dvc.yaml does not list (a test's stand-in), in this
    process: its outputs (paths, ``${item}`` for the game), and for a stage that runs once
    (not per game: its game ``graph.ONCE``), the params section it reads (None: per game,
    its own section)."""
    graph.add_stage(
        graph.StageSpec(name=name, per_game=section is None, games=None, outs=tuple(outs))
    )
    if section is not None:
        SECTION_OF[name] = section


def params_path() -> Path:
    return Path(os.environ.get("STACKELBERG_PARAMS", "params.yaml"))


@cache
def _params(path: str, mtime: float) -> Params:
    return load_params(path)


def current_params() -> Params:
    path = params_path()
    return _params(str(path), path.stat().st_mtime if path.exists() else 0.0)


_LLMS: dict[str, Any] = {}


@cache
def freeze_libraries() -> None:
    """Exempt the imported libraries (~600k objects) from the cycle collector, once per
    process, before the first stage loads a model: each full collection (after every stage,
    and whenever Python starts one) then takes milliseconds instead of about half a second.
    Models come later, so a dropped one is still collected."""
    import stackelberg.llm.local.backend  # noqa: F401 (torch and transformers, imported once)

    gc.collect()
    gc.freeze()


def get_llm(config: LLMConfig):
    """A backend per distinct config, loaded once per process."""
    key = config.model_dump_json()
    if key not in _LLMS:
        _LLMS[key] = make_llm(LLMConfig.model_validate_json(key))
    return _LLMS[key]


#: the model roles of params.models
MODEL_ROLES = tuple(ModelsParams.model_fields)


def release_models(
    params: Params,
    roles: tuple[str, ...] = MODEL_ROLES,
    also: tuple[LLMConfig, ...] = (),
    keep_prefixes: tuple[str, ...] = (),
) -> None:
    """Drop the backends that none of ``roles`` names, nor ``also`` (after a stage, all
    roles: a game's trained Refiner is not needed by the next stage), and empty the
    prompt-prefix stores of the rest (the next prompts differ), so memory does not grow
    from stage to stage; but the stores of ``keep_prefixes`` (roles whose next prompts
    start the same way: the score stage's Measurer contexts are GRPO's)."""
    keep = {
        config.model_dump_json()
        for role in roles
        for config in entry_models(getattr(params.models, role))
    } | {config.model_dump_json() for config in also}
    kept_stores = {
        id(store)
        for role in keep_prefixes
        for config in entry_models(getattr(params.models, role))
        if (key := config.model_dump_json()) in _LLMS
        and key in keep
        # a served model (vLLM, an API) keeps no store here
        and (store := getattr(_LLMS[key], "prefix_store", None)) is not None
    }
    dropped = [_LLMS.pop(key) for key in [k for k in _LLMS if k not in keep]]
    for backend in [*dropped, *_LLMS.values()]:
        if id(getattr(backend, "prefix_store", None)) not in kept_stores:
            backend.clear_prefix_cache()
    gc.collect()  # a trainer or a dropped model sits in reference cycles
    return_freed_memory()


def return_freed_memory() -> None:
    """Give the memory freed so far back to the system: glibc keeps freed blocks of its
    heap for reuse, so a dropped model or trainer still counts in the resident size (about
    0.5 GiB after the held-out reward) until trimmed. A no-op where there is no glibc."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


@dataclass(frozen=True)
class StageContext:
    stage: str
    game: str
    params: Params

    @property
    def section(self) -> Any:
        """This stage's params section with the game's overrides applied."""
        if not graph.stage(self.stage).per_game:
            return getattr(self.params, SECTION_OF.get(self.stage, self.stage))
        return self.params.for_game(self.stage, self.game)

    def section_dump(self) -> dict[str, Any]:
        return {
            "section": self.section.model_dump(mode="json"),
            "models": self.params.models.model_dump(mode="json"),
        }

    def path(self, stage: str | None = None) -> Path:
        """Where ``stage`` (default: this one) writes for this game, as dvc.yaml says."""
        return graph.stage(stage or self.stage).output(self.game)

    @property
    def inputs(self) -> list[Path]:
        """The files and folders this stage reads for this game: its deps in dvc.yaml."""
        return graph.stage(self.stage).inputs(self.game)

    def instances(self, dataset: str, ids: list[str]) -> tuple[list[dict], list[InstanceView]]:
        """Rows of ``dataset`` (instances or intents) and their views, for ``ids``."""
        stage = {"instances": "select", "intents": "label"}[dataset]
        return instance_rows(self.path(stage), dataset, self.path("selfplay"), ids)

    def llm(self, role: str):
        """The backend of ``models.<role>``, one model (the Refiner's base; the Measurer,
        which may be an ensemble: ``measurer``)."""
        return get_llm(getattr(self.params.models, role))

    def measurer(self):
        """The Measurer (``models.measurer``): one model's backend, or an ensemble of its
        members' (``persuasion.measurer.Ensemble``), each loaded once per process."""
        return load_measurer(self.params.models.measurer, get_llm)

    def model(self, config: LLMConfig):
        """The backend of one model config (e.g. the one a game drew from a list)."""
        return get_llm(config)

    def release_models(
        self, *roles: str, also: tuple[LLMConfig, ...] = (), keep_prefixes: tuple[str, ...] = ()
    ) -> None:
        """Drop every loaded model but those of ``roles`` and ``also`` (memory for what
        comes next); ``keep_prefixes``: roles whose prompt-prefix stores stay."""
        release_models(self.params, roles, also, keep_prefixes)


def stage_context(stage: str, game: str) -> StageContext:
    return StageContext(stage, game, current_params())
