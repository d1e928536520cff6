"""dvc.yaml is the only description of the pipeline's graph: what flows/graph.py reads of it
(each stage's outputs and inputs, its games) is what DVC itself builds from it, and a
stage's cached work items die when a file dvc.yaml names as its dep changes, and only then.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from project import ROOT

from flows import context, graph
from flows.context import StageContext, register_stage
from stackelberg.games import GAME_NAMES
from stackelberg.params import Params, load_params


@pytest.fixture(scope="module")
def dvc_stages(tmp_path_factory):
    """DVC's own stages of the project's dvc.yaml and params.yaml, by name (``select@onuw``)."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    root = tmp_path_factory.mktemp("dvc")
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(ROOT / name, root / name)
    Repo.init(str(root), no_scm=True).close()
    with Repo(str(root)) as repo:
        return {
            s.name: (
                {str(Path(o.fs_path).relative_to(root)) for o in s.outs},
                {
                    str(Path(d.fs_path).relative_to(root))
                    for d in s.deps
                    if not isinstance(d, ParamsDependency)
                },
            )
            for s in repo.index.stages
        }


def test_every_stage_dvc_builds_has_the_outputs_and_inputs_read_here(dvc_stages):
    read = {}
    for spec in graph.parse((ROOT / "dvc.yaml").read_text()).values():
        games = (spec.games or load_params(ROOT / "params.yaml").games) if spec.per_game else [""]
        for game in games:
            name = f"{spec.name}@{game}" if game else spec.name
            read[name] = (
                {str(p) for p in spec.outputs(game)},
                {str(p) for p in spec.inputs(game)},
            )
    assert read == dvc_stages


def test_a_stage_path_is_its_output_or_the_folder_of_its_outputs():
    ctx = StageContext("evaluate", "onuw", Params())
    assert ctx.path() == Path("reports/onuw")  # metrics, plots and viewer pages
    assert ctx.path("sample") == Path("data/candidates/onuw.parquet")
    assert ctx.path("base_model") == Path("models/base")
    assert StageContext("report", graph.ONCE, Params()).path() == Path("reports/summary.md")
    # the evaluate stage reads the sample stage's candidates (held-out scoring)
    assert ctx.path("sample") in ctx.inputs


def test_a_stage_for_some_games_lists_them_and_the_rest_run_for_every_game():
    stages = graph.parse((ROOT / "dvc.yaml").read_text())
    assert stages["tactics"].games == ("onuw",)
    assert stages["select"].per_game and stages["select"].games is None
    assert not stages["report"].per_game
    assert set(stages["tactics"].games) <= set(GAME_NAMES)


@pytest.mark.parametrize(
    "text",
    [
        "vars: [x.yaml]\nstages: {}\n",
        "stages:\n  a:\n    matrix: {g: [x]}\n    cmd: c\n",
        "stages:\n  a:\n    foreach: ${other}\n    do: {cmd: c}\n",
        "stages:\n  a:\n    cmd: c\n    deps:\n      - data/${item}.parquet\n",
        "stages:\n  a:\n    cmd: c\n    wdir: sub\n",
    ],
)
def test_what_this_reading_does_not_understand_is_refused(text):
    with pytest.raises(graph.GraphError):
        graph.parse(text)


def test_a_registered_stage_runs_beside_dvc_yamls(monkeypatch):
    monkeypatch.setattr(graph, "_ADDED", {})  # this test's stages end with it
    monkeypatch.setattr(context, "SECTION_OF", dict(context.SECTION_OF))
    register_stage("stand_in", ("out/${item}.txt",))
    register_stage("stand_in_once", ("out.txt",), section="orchestration")
    assert StageContext("stand_in", "onuw", Params()).path() == Path("out/onuw.txt")
    once = StageContext("stand_in_once", graph.ONCE, Params())
    assert once.inputs == [] and once.section == Params().orchestration
    assert "select" in graph.stages()  # dvc.yaml's stages stay


def task_cache_key(stage: str, game: str) -> str:
    """The Prefect cache key of the stage's first work item, as ``run_item`` computes it."""
    from flows.stage import item_fingerprint, run_item

    ctx = StageContext(stage, game, Params())
    module = SimpleNamespace(__file__=str(ROOT / "stages" / f"{stage}.py"))  # not imported
    fingerprint = item_fingerprint(ctx, module)
    inputs = {
        "stage": stage,
        "game": game,
        "label": "train",
        "item": {"label": "train", "ids": ["a"]},
        "fingerprint": fingerprint,
        "params": ctx.params,
        "project": str(Path.cwd()),
    }
    return run_item.cache_policy.compute_key(SimpleNamespace(task=run_item), inputs, {})


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with dvc.yaml and the given files (relative path -> text)."""
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    monkeypatch.chdir(tmp_path)

    def write(files: dict[str, str]) -> None:
        for name, text in files.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)

    return write


@pytest.mark.parametrize(
    ("stage", "dep", "unrelated"),
    [
        # dvc.yaml gives grpo no self-play to read (an earlier copy of the graph did)
        ("grpo", "data/intents/onuw.parquet", "data/selfplay/onuw.parquet"),
        ("grpo", "configs/accelerate/zero3.yaml", "data/intents/werewolf.parquet"),
        # evaluate reads the sample stage's candidates (an earlier copy of the graph left
        # them out), and no game's but its own
        ("evaluate", "data/candidates/onuw.parquet", "data/scores/werewolf.parquet"),
        ("evaluate", "data/scores/onuw.parquet", "data/selfplay/onuw.parquet"),
        ("select", "data/selfplay/onuw.parquet", "README.md"),
    ],
)
def test_the_task_cache_key_follows_the_stages_dvc_deps_only(project, stage, dep, unrelated):
    project({dep: "one", unrelated: "one"})
    before = task_cache_key(stage, "onuw")
    project({unrelated: "another text"})  # another size: the digests are kept by size and time
    assert task_cache_key(stage, "onuw") == before
    project({dep: "another text"})
    assert task_cache_key(stage, "onuw") != before


def test_a_large_inputs_hash_is_kept_across_processes_and_dies_with_a_change(
    project, tmp_path, monkeypatch
):
    """``dvc repro`` runs each stage in a process of its own: models/base's weights are
    hashed once, not in every stage that reads them."""
    from flows import stage

    monkeypatch.setenv("STACKELBERG_CACHE_DIR", str(tmp_path / "cache"))
    weights = "models/base/model.safetensors"
    project({weights: "a" * stage.KEPT_DIGEST_BYTES})
    before = task_cache_key("sample", "onuw")
    assert len(list((tmp_path / "cache/digests").glob("file-*.json"))) == 1
    stage._file_digest.cache_clear()  # as in a new process
    hashed = []
    file_digest = stage.hashlib.file_digest

    def counted(fh, name):
        hashed.append(Path(fh.name).name)
        return file_digest(fh, name)

    with monkeypatch.context() as m:
        m.setattr(stage.hashlib, "file_digest", counted)
        assert task_cache_key("sample", "onuw") == before
    assert hashed and "model.safetensors" not in hashed  # small files are hashed again
    project({weights: "b" * stage.KEPT_DIGEST_BYTES})  # the same size, another time
    assert task_cache_key("sample", "onuw") != before
