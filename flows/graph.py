"""The pipeline's graph as dvc.yaml writes it: each stage's outputs, its inputs, its games.

dvc.yaml is the only description of the graph; this reads it (plain YAML, a few ms, once
per process while the file stays unchanged) for what a stage needs at run time without
DVC: where it writes (``ctx.path``), what it reads (its deps: the task cache key,
flows/stage.py), which stages exist and which games each runs for (``python -m
flows.run``). A per-game stage (``foreach``) is read as its template, ``${item}`` filled
in with the game. tests/pipeline/test_graph.py checks that every stage DVC's own index
builds from dvc.yaml has the outputs and deps read here.

A stage that dvc.yaml does not list (a test's stand-in module) is added for this process
with ``flows.context.register_stage``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

#: the file, in the project (the working directory of every stage); where the working
#: directory has none (a test's scratch folder), the one beside this code
DVC_YAML = Path("dvc.yaml")
HOME_DVC_YAML = Path(__file__).resolve().parents[1] / "dvc.yaml"
#: the one variable a stage's text may name: the game of a ``foreach`` over games
ITEM = "${item}"
#: the game of a stage that runs once, not per game (base_model, grpo_joint, report): its
#: paths name no game, its runs are STAGE@once
ONCE = "once"
#: a stage's keys that name output paths
OUTPUT_KEYS = ("outs", "metrics", "plots")
#: what else a stage may say (the rest is refused, so nothing is read half)
KNOWN_KEYS = frozenset({"cmd", "deps", "params", "desc", "always_changed", *OUTPUT_KEYS})


class GraphError(ValueError):
    """dvc.yaml says something this reading does not understand."""


@dataclass(frozen=True)
class StageSpec:
    """One stage of dvc.yaml; paths are templates (``${item}``: the game) for a per-game one."""

    name: str
    #: ``foreach``: one stage per game
    per_game: bool
    #: the games of a ``foreach`` that lists them; None: ``${games}`` (params' games)
    games: tuple[str, ...] | None
    outs: tuple[str, ...]
    #: files and folders it reads (its ``deps``; params are not among them)
    deps: tuple[str, ...] = ()

    def outputs(self, game: str) -> list[Path]:
        return [Path(_fill(out, game)) for out in self.outs]

    def output(self, game: str) -> Path:
        """Where it writes: its one output, or the folder that holds all of them (evaluate:
        reports/GAME, for its metrics, plots and viewer pages)."""
        paths = self.outputs(game)
        if not paths:
            raise GraphError(f"dvc.yaml stage {self.name!r} has no outputs")
        return paths[0] if len(paths) == 1 else Path(os.path.commonpath(paths))

    def inputs(self, game: str) -> list[Path]:
        return [Path(_fill(dep, game)) for dep in self.deps]


def _fill(template: str, game: str) -> str:
    return template.replace(ITEM, game)


def _paths(entries: list, stage: str, key: str) -> tuple[str, ...]:
    """The paths of a deps or outs list: plain strings, or one-key maps to their options."""
    paths = []
    for entry in entries or []:
        if isinstance(entry, dict) and len(entry) == 1:
            entry = next(iter(entry))
        if not isinstance(entry, str):
            raise GraphError(f"dvc.yaml stage {stage!r}: {key} entry {entry!r} is not a path")
        paths.append(entry)
    return tuple(paths)


def _variables(text: str) -> set[str]:
    return set(re.findall(r"\$\{[^}]*\}", text))


def parse(text: str) -> dict[str, StageSpec]:
    """The stages of dvc.yaml's ``text``, in its order."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    doc = yaml.load(text, Loader=loader) or {}
    if set(doc) - {"stages"}:
        raise GraphError(f"dvc.yaml: top-level keys {sorted(set(doc) - {'stages'})} not read")
    stages = {}
    for name, spec in (doc.get("stages") or {}).items():
        per_game = "foreach" in spec
        body = spec.get("do", {}) if per_game else spec
        if (per_game and set(spec) - {"foreach", "do"}) or set(body) - KNOWN_KEYS:
            raise GraphError(f"dvc.yaml stage {name!r}: keys beyond {sorted(KNOWN_KEYS)}")
        foreach = spec.get("foreach")
        if per_game and not (foreach == "${games}" or isinstance(foreach, list)):
            raise GraphError(f"dvc.yaml stage {name!r}: foreach {foreach!r} not read")
        stage = StageSpec(
            name=name,
            per_game=per_game,
            games=tuple(foreach) if isinstance(foreach, list) else None,
            outs=tuple(p for key in OUTPUT_KEYS for p in _paths(body.get(key), name, key)),
            deps=_paths(body.get("deps"), name, "deps"),
        )
        unread = _variables(" ".join((*stage.outs, *stage.deps))) - ({ITEM} if per_game else set())
        if unread:
            raise GraphError(f"dvc.yaml stage {name!r}: {sorted(unread)} not read")
        stages[name] = stage
    return stages


@cache
def _read(path: str, mtime_ns: int) -> dict[str, StageSpec]:
    return parse(Path(path).read_text())


#: stages added in this process (``add_stage``), beside dvc.yaml's
_ADDED: dict[str, StageSpec] = {}


def stages() -> dict[str, StageSpec]:
    """dvc.yaml's stages by name (in its order), then those added in this process."""
    path = DVC_YAML.resolve() if DVC_YAML.is_file() else HOME_DVC_YAML
    return {**_read(str(path), path.stat().st_mtime_ns), **_ADDED}


def stage(name: str) -> StageSpec:
    try:
        return stages()[name]
    except KeyError:
        raise GraphError(f"dvc.yaml has no stage {name!r}") from None


def add_stage(spec: StageSpec) -> None:
    """A stage dvc.yaml does not list, for this process (``flows.context.register_stage``)."""
    _ADDED[spec.name] = spec


def output(stage_name: str, game: str = ONCE) -> Path:
    """Where ``stage_name`` writes for ``game`` (``StageSpec.output``)."""
    return stage(stage_name).output(game)
