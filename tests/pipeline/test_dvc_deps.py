"""dvc.yaml names, for every stage, all the project code that stage runs: otherwise editing a
module it imports would leave its outputs stale while `dvc repro` says nothing changed."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml
from module_imports import ROOT, imported, module_file

from flows.context import stage_module
from stackelberg.games import GAME_NAMES

#: Code that cannot change a stage's outputs: the package version; the params schema, whose
#: values come from params.yaml (which DVC tracks by key), and what it imports only to refuse
#: a params file at load; the settings base class (strictness and error lines only); and the
#: Prefect orchestration that runs a stage (flows/).
NOT_OUTPUT_CODE = {
    "src/stackelberg/__init__.py",
    "src/stackelberg/params/__init__.py",
    "src/stackelberg/params/checks.py",
    "src/stackelberg/params/models.py",
    "src/stackelberg/params/schema.py",
    "src/stackelberg/settings.py",
}


def code_of(stage_module: str) -> set[str]:
    """Every project file a stage module imports, directly or not."""
    seen: set[Path] = set()
    todo = [stage_module]
    while todo:
        path = module_file(todo.pop())
        if path is None or path in seen:
            continue
        seen.add(path)
        if str(path.relative_to(ROOT)) not in NOT_OUTPUT_CODE:  # e.g. params' load checks
            todo += imported(path)
    return {str(p.relative_to(ROOT)) for p in seen}


def dvc_stages() -> dict[str, list[str]]:
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    return {name: (spec.get("do") or spec)["deps"] for name, spec in stages.items()}


def covered(path: str, deps: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps)


@pytest.mark.parametrize("stage", sorted(dvc_stages()))
def test_every_module_a_stage_runs_is_one_of_its_deps(stage):
    deps = dvc_stages()[stage]
    module = stage_module(stage)  # grpo_joint runs the grpo stage's module
    code = code_of(module)
    assert f"{module.replace('.', '/')}.py" in code
    runs = {p for p in code - NOT_OUTPUT_CODE if not p.startswith("flows/")}
    missing = sorted(p for p in runs if not covered(p, deps))
    assert not missing, f"dvc.yaml stage {stage!r} lacks deps: {missing}"


@pytest.mark.parametrize("stage", sorted(p.stem for p in (ROOT / "stages").glob("*.py")))
def test_a_stage_imports_neither_the_orchestration_nor_another_stage(stage):
    """Stages are plain functions over the library: flows/ runs them, never the reverse,
    and what two stages share lives in the library."""
    found = imported(ROOT / "stages" / f"{stage}.py")
    assert not [m for m in found if m.split(".")[0] in ("flows", "stages")], found


def test_the_import_walk_follows_submodules_and_relative_imports():
    code = code_of("stages.evaluate")
    assert "src/stackelberg/llm/local/__init__.py" in code  # through stackelberg.llm's __init__
    assert "src/stackelberg/evaluation/tournament.py" in code
    assert not any(p.startswith("tests/") for p in code)
    assert "src/stackelberg/agents/prompts/onuw.py" in code_of("stages.label")  # by name


def test_the_report_depends_on_the_metrics_of_every_game():
    """DVC cannot loop inside one stage's deps, so dvc.yaml lists the games' metrics: this
    keeps the list equal to the registry of games."""
    metrics = [d for d in dvc_stages()["report"] if d.startswith("reports/")]
    assert metrics == [f"reports/{game}/metrics.json" for game in GAME_NAMES]


@pytest.mark.parametrize(
    ("stage", "kind", "models"),
    [
        ("tactics", "rl_ins", "models/tactics"),
        ("strategist", "strategist", "models/strategist"),
        ("lspo", "lspo", "models/lspo"),
    ],
)
def test_a_policy_stage_runs_for_the_games_its_agent_plays(stage, kind, models):
    """A policy stage's foreach lists the games by hand (not ``${games}``): keep it equal
    to the games its agent plays, in the registry's order, and to the stage's own GAMES;
    the evaluate stage reads its output."""
    from stackelberg.agents import llm_agent_class

    games = importlib.import_module(f"stages.{stage}").GAMES
    listed = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"][stage]["foreach"]
    assert listed == [g for g in GAME_NAMES if g in llm_agent_class(kind).games] == list(games)
    evaluate = dvc_stages()["evaluate"]
    assert all(f"{models}/{game}" in evaluate for game in listed)


@pytest.mark.parametrize("stage", sorted(p.stem for p in (ROOT / "stages").glob("*.py")))
def test_a_stage_runs_for_known_games(stage):
    """`python -m flows.run` reads a stage's ``GAMES`` as the games it runs for (all when
    absent): a module constant of that name for anything else refuses every game."""
    import importlib

    games = getattr(importlib.import_module(f"stages.{stage}"), "GAMES", GAME_NAMES)
    assert not isinstance(games, str) and set(games) <= set(GAME_NAMES), games
