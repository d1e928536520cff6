"""bench/gpu_check.py's dry run: the prepared GPU check runs end to end on CPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_dry_run_prints_the_table_and_the_cost_model():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "bench/gpu_check.py", "--dry-run"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "generation through vLLM skipped (no GPU)" in out
    for check in ("grpo step (generate + train)", "generate (transformers)", "measurer scoring"):
        row = re.search(rf"^{re.escape(check)}.*?\s+([\d.]+)\s+(\d+)\s+([\d.]+)$", out, re.M)
        assert row, f"no row {check!r} in:\n{out}"
        seconds, tokens, rate = float(row[1]), int(row[2]), float(row[3])
        assert seconds > 0 and tokens > 0 and rate == pytest.approx(tokens / seconds, rel=0.05)
    hours = dict(re.findall(r"^  (sample|score|grpo: [\w +]+?)\s+([\d.]+) GPU-h", out, re.M))
    assert set(hours) == {"sample", "score", "grpo: generate + train", "grpo: Measurer reward"}
    assert all(float(h) > 0 for h in hours.values())


def test_without_a_gpu_the_full_check_refuses_in_one_line():
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the full check would run")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "bench/gpu_check.py"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "gpu_check: no CUDA GPU here; run with --dry-run to check it on CPU"
    ]
