"""A stage's progress reaches the Prefect run's log: the counts advance and end at the total."""

from __future__ import annotations

import re
import sys

import pytest
from project import make_project, sh

pytestmark = pytest.mark.slow  # starts a Prefect server

DRIVER = """
import sys, types

import flows.context as context
import flows.stage as stage
from stackelberg.progress import progress

counted = types.ModuleType("stages.counted")
counted.__file__ = __file__


def plan(ctx):
    return [{"label": f"batch {i}", "ids": [f"a{i}", f"b{i}"]} for i in range(3)]


def work(ctx, item):
    bar = progress(4, f"inner {item['label']}", "step")
    for _ in range(4):
        bar.update(1)
    bar.close()
    return len(item["ids"])


counted.plan, counted.work = plan, work
counted.finish = lambda ctx, results: {"instances": sum(results)}
sys.modules["stages.counted"] = counted
context.register_stage("counted", ("out",), section="orchestration")
print("instances", stage.run_stage("counted")["instances"])  # not per game: counted@once
"""


def test_stage_progress_reaches_the_run_log(tmp_path):
    env = make_project(tmp_path, "orchestration: {task_retries: 0}\n")
    env["STACKELBERG_PROGRESS_SECONDS"] = "0"  # every refresh becomes a line
    (tmp_path / "driver.py").write_text(DRIVER)
    proc = sh([sys.executable, "driver.py"], tmp_path, env, timeout=600)
    told = proc.stdout + proc.stderr
    assert "instances 6" in told, told
    # Through Prefect's run logger (its console lines name the flow run), not a bare print.
    stage_lines = [ln for ln in told.splitlines() if "Flow run 'counted@once'" in ln]
    done = [
        int(m.group(1)) for ln in stage_lines if (m := re.search(r"counted@once: .*?(\d+)/6", ln))
    ]
    assert done[0] == 0 and done[-1] == 6, told
    assert done == sorted(done) and {0, 2, 4, 6} <= set(done), done
    inner = [ln for ln in told.splitlines() if "inner batch 1" in ln]
    assert any("4/4" in ln for ln in inner), told
