"""The whole pipeline at a micro scale in a temporary git + DVC repository.

One module-scoped project: the pipeline runs once end to end; the tests use its outputs
(a no-op rerun, per-game staleness, a stage killed halfway that resumes). Each test finds the
project as the first run left it, whatever ran before: what a test changes (params, outputs)
is put back after it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from project import ROOT, make_project, sh

from stackelberg.datasets import read_dataset

GAMES = ["werewolf", "avalon", "onuw", "sotopia"]
DATASETS = {
    "selfplay": "data/selfplay/{g}.parquet",
    "instances": "data/instances/{g}.parquet",
    "intents": "data/intents/{g}.parquet",
    "candidates": "data/candidates/{g}.parquet",
    "scores": "data/scores/{g}.parquet",
}

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # the fixture runs the pipeline


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    env = make_project(root, (ROOT / "tests/pipeline/micro_params.yaml").read_text())
    started = time.perf_counter()
    first = sh([sys.executable, "-m", "flows.pipeline"], root, env, timeout=1500)
    return {"root": root, "env": env, "first": first, "seconds": time.perf_counter() - started}


@pytest.fixture(autouse=True)
def as_first_run(project):
    """Put back params.yaml, dvc.lock and the outputs DVC tracks after each test."""
    root, env = project["root"], project["env"]
    saved = {name: (root / name).read_text() for name in ("params.yaml", "dvc.lock")}
    yield
    for name, text in saved.items():
        (root / name).write_text(text)
    sh(["dvc", "checkout", "--force", "-q"], root, env)


def test_every_output_exists_and_matches_its_schema(project):
    root = project["root"]
    for game in GAMES:
        for name, path in DATASETS.items():
            df = read_dataset(root / path.format(g=game), name)
            assert df.height > 0, f"{name} of {game} is empty"
        assert (root / f"models/refiner/{game}/adapter_config.json").exists()
        # no warm start (warm_start.source: none): its folder says so, GRPO began at the base
        warm = root / f"models/warm_start/{game}"
        assert json.loads((warm / "warm_start.json").read_text()) == {"source": "none"}
        assert not (warm / "adapter_config.json").exists()
        metrics = json.loads((root / f"reports/{game}/metrics.json").read_text())
        assert metrics["game"] == game and metrics["reward"]["before"]["n"] >= 1
        assert (root / f"reports/{game}/plots/reward_curve.png").stat().st_size > 1000
    summary = (root / "reports/summary.md").read_text()
    assert all(g in summary for g in GAMES)
    onuw = json.loads((root / "reports/onuw/metrics.json").read_text())
    played = {c: onuw["conditions"][c]["overall"]["n"] for c in onuw["conditions"]}
    assert set(played) == {"direct", "refiner+direct"} and played["direct"] >= 2
    assert played["direct"] == played["refiner+direct"]  # paired seeds
    assert (root / "reports/onuw/plots/win_rates.png").stat().st_size > 1000
    pages = sorted(p.name for p in (root / "reports/onuw/games").glob("*.html"))
    assert "index.html" in pages and len(pages) == 1 + 4  # viewer_games: 4, by condition in turn
    sotopia = json.loads((root / "reports/sotopia/metrics.json").read_text())
    assert sotopia["conditions"] == {} and sotopia["paired"] == []  # scores, not win rates
    goal = {c: d["goal"] for c, d in sotopia["scores"]["conditions"].items()}
    assert set(goal) == {"direct", "refiner+direct"} and goal["direct"]["n"] == 2  # 2 camps
    assert 0 <= goal["direct"]["estimate"] <= 10
    pairs = [t for t in sotopia["scores"]["paired"] if t["dimension"] == "goal"]
    assert pairs and pairs[0]["n"] == 2
    assert (root / "reports/sotopia/plots/scores.png").stat().st_size > 1000
    assert "sotopia: scores of the agent under test" in summary
    assert "Win rate of the agent under test" in summary and "Reward ablation" in summary
    lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    assert {
        "base_model",
        "report",
        *(f"{s}@{g}" for s in ("selfplay", "grpo", "evaluate") for g in GAMES),
    } <= set(lock)
    status = sh(["dvc", "status"], root, project["env"]).stdout
    assert "up to date" in status, status
    told = project["first"].stdout + project["first"].stderr
    assert "wall time per stage" in told and "grpo@werewolf" in told
    assert f"summary: {root.resolve() / 'reports/summary.md'}" in told


def test_datasets_and_models_push_to_a_dvc_remote(project, tmp_path):
    root, env = project["root"], project["env"]
    sh(["dvc", "remote", "add", "-f", "-d", "store", str(tmp_path / "remote")], root, env)
    sh(["dvc", "push"], root, env)
    pushed = [p for p in (tmp_path / "remote").rglob("*") if p.is_file()]
    assert len(pushed) >= 10


def test_refiners_are_registered_mlflow_model_versions(project):
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=project["env"]["MLFLOW_TRACKING_URI"])
    for game in GAMES:
        versions = client.search_model_versions(f"name='refiner-{game}'")
        assert versions, f"no model version of refiner-{game}"
        # the pipeline's own version (a test may register more by running a stage alone)
        first = min(versions, key=lambda v: int(v.version))
        run = client.get_run(first.run_id)
        assert run.data.tags["stage"] == "grpo" and "mlflow.parentRunId" in run.data.tags
        assert "train/reward" in run.data.metrics
    evaluate = client.search_runs(
        [client.get_experiment_by_name("micro").experiment_id],
        "tags.stage = 'evaluate'",
    )
    shown = {a.path for r in evaluate for a in client.list_artifacts(r.info.run_id, "games")}
    assert "games/index.html" in shown  # the viewer pages of tournament games


def test_the_joint_and_the_speaker_view_refiners_are_trained_and_compared(project):
    """micro_params: a joint Refiner on Werewolf and Avalon (onuw and sotopia unseen), and in
    Sotopia both views' intents and a Refiner on the speaker's own view."""
    from mlflow import MlflowClient

    root = project["root"]
    joint = root / "models/refiner/joint"
    assert json.loads((joint / "joint_games.json").read_text()) == ["werewolf", "avalon"]
    assert (joint / "adapter_config.json").exists()
    assert (root / "models/refiner/sotopia/extra/speaker_only/adapter_config.json").exists()
    client = MlflowClient(tracking_uri=project["env"]["MLFLOW_TRACKING_URI"])
    assert client.search_model_versions("name='refiner-joint'")
    seen = {}
    for game in GAMES:
        held_out = json.loads((root / f"reports/{game}/metrics.json").read_text())["held_out"]
        seen[game] = held_out["joint"]["seen"]
        assert held_out["joint"]["joint_minus_own"]["n"] == held_out["joint"]["own"]["n"] >= 1
        assert ("views" in held_out) == (game == "sotopia")
    assert seen == {"werewolf": True, "avalon": True, "onuw": False, "sotopia": False}
    views = json.loads((root / "reports/sotopia/metrics.json").read_text())["held_out"]["views"]
    assert set(views["cells"]) == {"untrained", "full_information", "speaker_only"}
    assert views["other_minus_own"]["speaker_only"]["n"] >= 1
    intents = read_dataset(root / "data/intents/sotopia.parquet", "intents")
    assert intents["other_desired"].null_count() == 0
    summary = (root / "reports/summary.md").read_text()
    assert "One Refiner for all games" in summary and "speaker's own view" in summary


def test_a_second_run_with_nothing_changed_does_nothing(project):
    proc = sh([sys.executable, "-m", "flows.pipeline"], project["root"], project["env"])
    assert "0 stages run" in proc.stdout + proc.stderr


def test_one_games_grpo_params_make_only_that_game_stale(project):
    root, env = project["root"], project["env"]
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["game_overrides"]["onuw"]["grpo"] = {"learning_rate": 2.0e-4}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    status = sh(["dvc", "status"], root, env).stdout
    stale = {
        line.strip().rstrip(":")
        for line in status.splitlines()
        if line and not line.startswith("\t")
    }
    # the warm start reads GRPO's section for its LoRA (with source none it only writes a
    # marker): that game's too
    assert {"grpo@onuw"} <= stale and not {s for s in stale if "@" in s} - {
        "warm_start@onuw",
        "grpo@onuw",
        "evaluate@onuw",
    }


def test_a_stage_killed_halfway_resumes_without_redoing_finished_items(project):
    root, env = project["root"], project["env"]
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["label"]["temperature"] = 0.8  # new work: nothing of it is cached yet
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    results = root / ".prefect-results"
    before = set(results.iterdir())
    intents = (root / "data/intents/onuw.parquet").read_bytes()
    proc = subprocess.Popen(
        [sys.executable, "-m", "flows.run", "label", "onuw"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the kill takes its Prefect server too
    )
    deadline = time.monotonic() + 300
    while len(set(results.iterdir()) - before) < 1 and proc.poll() is None:
        assert time.monotonic() < deadline, "no work item finished in time"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (root / "data/intents/onuw.parquet").read_bytes() == intents, (
        "a killed stage wrote output"
    )
    rerun = sh([sys.executable, "-m", "flows.run", "label", "onuw"], root, env)
    assert "items=2" in rerun.stderr and "items_cached=1" in rerun.stderr, rerun.stderr[-2000:]
    assert read_dataset(root / "data/intents/onuw.parquet", "intents").height >= 1


def test_a_forced_rerun_reuses_finished_training_and_a_reward_change_retrains(project):
    """`dvc repro` deletes a stage's outputs before rerunning it: a finished (cached) GRPO
    item must still produce the adapter. A change in another section the stage reads
    (score.terms) must not be served from that cache."""
    root, env = project["root"], project["env"]
    adapter = root / "models/refiner/werewolf/adapter_model.safetensors"
    trained = adapter.read_bytes()
    params = yaml.safe_load((root / "params.yaml").read_text())
    forced = sh(["dvc", "repro", "-f", "-s", "grpo@werewolf"], root, env)
    assert "items_cached=1" in forced.stdout + forced.stderr, forced.stderr[-2000:]
    assert adapter.read_bytes() == trained
    params["score"]["terms"] = "pos_only"
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    rerun = sh([sys.executable, "-m", "flows.run", "grpo", "werewolf"], root, env)
    assert "items_cached=0" in rerun.stderr, rerun.stderr[-2000:]
    assert adapter.read_bytes() != trained  # trained anew on the other reward
