"""The pipeline's parameters (params.yaml): one validated section per stage.

Every section is a pydantic model with ``extra="forbid"``: an unknown key or a bad value
stops the run with one line naming the key. The sections of the method's stages are the
library's own settings classes (``label``: LabelSettings, ``sample``: SampleSettings,
``score``: ScoreSettings, ``grpo``: GRPOSettings, ``tactics``: TacticsSettings,
``strategist``: StrategistSettings, ``lspo``: LspoSettings), so a key is
defined once. Per-game tuning lives in ``game_overrides``
(e.g. ``game_overrides.werewolf.grpo.learning_rate``) so that DVC reruns only that game's
stages when one game's values change, while ``dvc exp run -S score.terms=pos_only``
changes a shared value for every game.

The schema (``schema``: ``Params`` and its sections; ``models``: the model of each role)
is read and validated by ``load_params``, which first refuses a renamed key (naming the
new one) and then, in one line, what the sections allow alone but not together (``checks``).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from stackelberg.params.checks import (
    check_followers,
    check_pairings,
    check_refiners_beside,
    check_renamed,
    needs_later_model,
    unscoring,
)
from stackelberg.params.models import (
    ModelEntry,
    ModelsParams,
    WeightedLLMConfig,
    draw_model,
    entry_models,
)
from stackelberg.params.schema import (
    RUNNER_PACKAGES,
    STAGE_SECTIONS,
    OrchestrationParams,
    Params,
    ParamsError,
    TrackingParams,
    explain,
)
from stackelberg.settings import one_line

#: a params file's top-level key naming the params file it changes (a path relative to it):
#: the file then holds only what differs (configs/persuasion-llm.yaml)
EXTENDS = "extends"


def merged(base: dict, changes: dict) -> dict:
    """``base`` with ``changes`` over it, section by section: a section's keys replace the
    base's keys of that name whole (``models.measurer`` is the new model, not the two
    mixed); the base's other keys and sections stay."""
    out = dict(base)
    for section, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(section), dict):
            value = {**out[section], **value}
        out[section] = value
    return out


def read_params(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict:
    """The sections a params file describes: its own YAML, over the file it ``extends``
    (resolved the same way); every problem is reported as ParamsError."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ParamsError(f"{path}: no such params file") from None
    except OSError as err:  # a folder, no permission
        raise ParamsError(f"{path}: cannot read the params file ({err.strerror})") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise ParamsError(f"{path}: not valid YAML{where}") from None
    if not isinstance(raw, dict):
        raise ParamsError(f"{path}: expected a mapping of sections at the top level")
    if EXTENDS not in raw:
        return raw
    base = raw.pop(EXTENDS)
    if not isinstance(base, str) or not base:
        raise ParamsError(f"{path}: {EXTENDS} names a params file, as a path relative to it")
    base_path = (path.parent / base).resolve()
    if base_path in (*_seen, path.resolve()):
        raise ParamsError(f"{path}: {EXTENDS}: {base} extends it back (a cycle)")
    try:
        return merged(read_params(base_path, (*_seen, path.resolve())), raw)
    except ParamsError as err:
        raise ParamsError(f"{path}: {EXTENDS}: {err}") from None


def load_params(path: str | Path = "params.yaml") -> Params:
    """Read and validate a params file; every problem is reported as ParamsError."""
    path = Path(path)
    raw = read_params(path)
    try:
        check_renamed(raw)
    except ParamsError as err:
        raise ParamsError(f"{path}: {err}") from None
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


__all__ = [
    "EXTENDS",
    "RUNNER_PACKAGES",
    "STAGE_SECTIONS",
    "ModelEntry",
    "ModelsParams",
    "OrchestrationParams",
    "Params",
    "ParamsError",
    "TrackingParams",
    "WeightedLLMConfig",
    "check_followers",
    "check_pairings",
    "check_refiners_beside",
    "draw_model",
    "entry_models",
    "explain",
    "read_params",
    "load_params",
    "needs_later_model",
    "unscoring",
]
