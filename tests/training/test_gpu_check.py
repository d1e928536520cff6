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
        # rates given for two of the three: the stage that needs the third is not measured
        [sys.executable, "bench/gpu_check.py", "--dry-run", "--gen-rate=1000", "--score-rate=5000"],
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
    assert "rate train: - (not measured: the tiny model's rate does not scale)" in out
    rows = dict(
        re.findall(r"^  ((?:sample|score|grpo|evaluate)[\w +:-]*?)  .*  (\S[^(]*)$", out, re.M)
    )
    assert len(rows) == 6, rows  # sample, score, grpo x 2, evaluate x 2 (test_gpu_cost.py)
    assert rows["grpo: generate + train"] == "not measured"
    # 4,000 instances x 8 candidates x 256 tokens at 1,000 tokens/s
    assert float(rows["sample"]) == pytest.approx(4000 * 8 * 256 / 1000 / 3600, rel=0.01)


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
