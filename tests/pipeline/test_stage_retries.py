"""orchestration.task_retries sets how often a failed work item is tried again."""

from __future__ import annotations

import sys

import pytest
from project import make_project, sh

pytestmark = pytest.mark.slow  # starts a Prefect server

DRIVER = """
import os, shutil, sys, time, types
from pathlib import Path

import flows.context as context
import flows.stage as stage

calls = Path("calls.txt")
flaky = types.ModuleType("stages.flaky")
flaky.__file__ = __file__


def plan(ctx):
    return [{"label": "one"}]


def work(ctx, item):
    n = int(calls.read_text()) + 1 if calls.exists() else 1
    calls.write_text(str(n))
    if n == 1:
        raise RuntimeError("the first try fails")
    return n


flaky.plan, flaky.work, flaky.finish = plan, work, lambda ctx, results: {"tries": results[0]}
sys.modules["stages.flaky"] = flaky
context.register_stage("flaky", ("out",), section="orchestration")
stage.run_item = stage.run_item.with_options(retry_delay_seconds=0)
for retries in (1, 0):
    calls.unlink(missing_ok=True)
    # Retries do not change what an item computes: each case starts with no cached result.
    shutil.rmtree(os.environ["PREFECT_LOCAL_STORAGE_PATH"], ignore_errors=True)
    time.sleep(0.01)  # a new mtime: the params are read again
    Path("params.yaml").write_text(f"orchestration: {{task_retries: {retries}}}\\n")
    try:
        print("retries", retries, "tries", stage.run_stage("flaky")["tries"])
    except RuntimeError as err:
        print("retries", retries, "failed after", calls.read_text(), "tries:", err)
"""


def test_task_retries_are_honoured(tmp_path):
    env = make_project(tmp_path, "orchestration: {task_retries: 1}\n")
    (tmp_path / "driver.py").write_text(DRIVER)
    out = sh([sys.executable, "driver.py"], tmp_path, env, timeout=600).stdout
    assert "retries 1 tries 2" in out, out
    assert "retries 0 failed after 1 tries: the first try fails" in out, out
