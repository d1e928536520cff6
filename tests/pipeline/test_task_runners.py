"""The same stages give the same bytes on every task runner: threads, a local Dask cluster of
two worker processes, a local Ray cluster.

In a throw-away project per runner: a micro self-play stage (scripted ONUW games, three
items) on a cluster of its own; on one cluster shared as the pipeline shares it, a micro
evaluate stage (a tournament of scripted and random agents in three batches of tables),
twice: the second reads every item back from the results the workers persisted; then
self-play again on threads, which reads the first run's items back the same way (a stage
resumes on any runner). Every output file of a cluster run equals the thread runner's. The
evaluate stage's upstream inputs are stand-ins (no held-out instances, an empty training
history): its tournament is what fans out here.
"""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from project import make_project, sh

from stackelberg.datasets import from_rows, write_dataset
from stackelberg.training.grpo_outputs import TRAIN_HISTORY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # starts Prefect and clusters

GAME = "onuw"
PARAMS = """\
games: [onuw]
selfplay: {{games: 6, seed: 0, agents: scripted, batch_games: 2}}
evaluate: {{tournament_games: 3, conditions: [scripted, random], opponent: scripted,
           batch_games: 4, viewer_games: 2, bootstrap: 100}}
orchestration: {{task_retries: 0, {runner}}}
"""
RUNNERS = {
    "threads": "task_runner: threads",
    "dask": "task_runner: dask, workers: 2",
    "ray": "task_runner: ray, workers: 2",
}

DRIVER = """
import json
from flows.context import current_params
from flows.runners import shared_cluster
from flows.stage import run_stage
from stackelberg.params import OrchestrationParams

if __name__ == "__main__":  # worker processes start by importing the main module
    ran = {"selfplay": run_stage("selfplay", "onuw")}  # a local cluster of its own
    with shared_cluster(current_params().orchestration) as joined:  # shared, as a pipeline does
        ran["evaluate"] = run_stage("evaluate", "onuw", joined)
        ran["evaluate again"] = run_stage("evaluate", "onuw", joined)
    ran["selfplay again"] = run_stage("selfplay", "onuw", OrchestrationParams())  # threads
    print("ITEMS", json.dumps({k: [m["items"], m["items_cached"]] for k, m in ran.items()}))
"""


def _cluster_extra(runner: str):
    """A cluster runner's test, skipped with the reason when its package is missing."""
    module = {"dask": "prefect_dask", "ray": "prefect_ray"}[runner]
    missing = importlib.util.find_spec(module) is None
    reason = f"{module} is not installed (the 'cluster' extra: pip install -e '.[cluster]')"
    return pytest.param(runner, marks=pytest.mark.skipif(missing, reason=reason))


def stand_in_inputs(root: Path) -> None:
    """What the evaluate stage reads from label and grpo: no held-out instances, no steps."""
    write_dataset(from_rows([], "intents"), root / f"data/intents/{GAME}.parquet", "intents")
    trained = root / f"models/refiner/{GAME}"
    trained.mkdir(parents=True)
    (trained / TRAIN_HISTORY).write_text(json.dumps({"history": []}))


def run_project(root: Path, runner: str) -> tuple[dict[str, bytes], dict, str]:
    """The outputs (path -> bytes), the items and cached items of each stage run, the log."""
    env = make_project(root, PARAMS.format(runner=RUNNERS[runner]))
    stand_in_inputs(root)
    (root / "driver.py").write_text(DRIVER)
    proc = sh([sys.executable, "driver.py"], root, env, timeout=800)
    told = proc.stdout + proc.stderr
    items = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("ITEMS"))[6:])
    outputs = {
        str(f.relative_to(root)): f.read_bytes()
        for folder in ("data/selfplay", f"reports/{GAME}")
        for f in sorted((root / folder).rglob("*"))
        if f.is_file()
    }
    return outputs, items, told


@pytest.fixture(scope="module")
def by_threads(tmp_path_factory):
    return run_project(tmp_path_factory.mktemp("threads"), "threads")


def test_the_thread_runner_plays_the_stages_in_items(by_threads):
    outputs, items, _ = by_threads
    # three self-play items; three batches of tournament tables, the held-out reward with
    # the first
    assert items == {
        "selfplay": [3, 0],
        "evaluate": [3, 0],
        "evaluate again": [3, 3],
        "selfplay again": [3, 3],
    }
    assert f"data/selfplay/{GAME}.parquet" in outputs
    metrics = json.loads(outputs[f"reports/{GAME}/metrics.json"])
    assert set(metrics["conditions"]) == {"scripted", "random"}, metrics
    pages = [p for p in outputs if p.startswith(f"reports/{GAME}/games/") and "index" not in p]
    assert len(pages) == 2


@pytest.mark.parametrize("runner", [_cluster_extra("dask"), _cluster_extra("ray")])
def test_a_cluster_runner_gives_the_thread_runners_bytes(tmp_path, by_threads, runner):
    outputs, items, told = run_project(tmp_path, runner)
    started = {
        "dask": ["Creating a new Dask cluster", "Connecting to an existing Dask cluster"],
        "ray": ["Creating a local Ray instance"],
    }
    assert all(line in told for line in started[runner]), told[-3000:]
    assert items == by_threads[1], items
    assert outputs.keys() == by_threads[0].keys()
    differ = [path for path, data in outputs.items() if by_threads[0][path] != data]
    assert not differ, differ


INTERRUPTED = """
import sys, time, types
from pathlib import Path

import flows.context as context
import flows.stage as stage

endless = types.ModuleType("stages.endless")
endless.__file__ = __file__


def work(ctx, item):
    Path("started").write_text(item["label"])
    while True:  # only an interrupt ends it
        time.sleep(0.1)


endless.plan = lambda ctx: [{"label": "one"}, {"label": "two"}]
endless.work, endless.finish = work, lambda ctx, results: {}
sys.modules["stages.endless"] = endless
context.register_stage("endless", ("out",), section="orchestration")
if __name__ == "__main__":
    try:
        stage.run_stage("endless")
    except KeyboardInterrupt:
        print("interrupted in item", Path("started").read_text())
"""


def test_ctrl_c_stops_the_item_running_on_the_thread_runner(tmp_path):
    """Items run in the flow's own thread: an interrupt ends the running item, where a
    pool's thread would keep it running (this one never ends) and hold the process."""
    env = make_project(tmp_path, "orchestration: {task_retries: 0}\n")
    (tmp_path / "driver.py").write_text(INTERRUPTED)
    proc = subprocess.Popen(
        [sys.executable, "driver.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
    )
    started = tmp_path / "started"
    try:
        deadline = time.monotonic() + 300
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "no item started"
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        told, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert "interrupted in item one" in told, told[-3000:]
