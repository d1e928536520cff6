"""bench/gpu_check.py: the random models it builds have the paper's shapes (checked at full
size on the meta device) and peaked logits, and its dry run runs the GPU path end to end on
CPU, printing every row."""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def bench_module(name: str):
    """A bench/ script as a module (bench/ on the path: the scripts import each other)."""
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    return importlib.import_module(name)


def run_check(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    return subprocess.run(
        [sys.executable, "bench/gpu_check.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("name", ["Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-72B-Instruct"])
def test_the_built_models_have_the_papers_shapes(name):
    """Built on the meta device (nothing allocated): the config the GPU check builds has the
    published parameter count (test_gpu_cost.py pins ``Arch.params`` to it) and shapes."""
    import torch
    from transformers import AutoModelForCausalLM

    arch = bench_module("gpu_cost").ARCHS[name]
    config = arch.config(bos_token_id=1, eos_token_id=2, pad_token_id=2)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model.parameters()) == arch.params
    layer = model.model.layers[0]
    assert len(model.model.layers) == arch.layers
    assert model.model.embed_tokens.weight.shape == (152064, arch.hidden)
    assert model.lm_head.weight is not model.model.embed_tokens.weight  # untied
    assert layer.self_attn.q_proj.weight.shape == (arch.hidden, arch.hidden)
    assert layer.self_attn.k_proj.weight.shape == (arch.kv_width, arch.hidden)
    assert layer.self_attn.q_proj.bias is not None and layer.self_attn.o_proj.bias is None
    assert layer.mlp.up_proj.weight.shape == (arch.intermediate, arch.hidden)
    assert (config.rope_parameters["rope_theta"], config.rms_norm_eps) == (1e6, 1e-6)
    assert config.max_position_embeddings == 32768 and not config.tie_word_embeddings


def test_the_72b_slice_fits_one_80gb_gpu_beside_its_float32_head():
    cost, check = bench_module("gpu_cost"), bench_module("gpu_check")
    arch = cost.ARCHS["Qwen/Qwen2.5-72B-Instruct"]
    sliced = dataclasses.replace(arch, layers=check.SLICE_LAYERS)
    weights = 2 * sliced.params + 4 * arch.vocab * arch.hidden  # bf16, and the head in fp32
    assert 8 <= check.SLICE_LAYERS < arch.layers and weights < 40e9  # half an H100's 80 GB


@pytest.mark.slow
def test_peaked_logits_reach_the_target_entropy_and_never_write_special_tokens():
    import torch
    from transformers import AutoTokenizer

    from stackelberg.llm.embedded import ensure_checkpoint

    cost, random_model = bench_module("gpu_cost"), bench_module("random_model")
    tokenizer = AutoTokenizer.from_pretrained(ensure_checkpoint())
    arch = random_model.shrunk(cost.ARCHS["Qwen/Qwen2.5-7B-Instruct"], len(tokenizer) + 64)
    model = random_model.build(dataclasses.replace(arch, layers=2), tokenizer, "cpu")
    peaked = random_model.peak_logits(model, tokenizer)
    assert peaked.entropy_before > 10  # random weights: nearly flat over 49,152 tokens
    assert peaked.entropy == pytest.approx(random_model.TARGET_ENTROPY, abs=0.02)
    head = model.get_output_embeddings().weight
    never = [*tokenizer.all_special_ids, *range(len(tokenizer), arch.vocab)]
    assert torch.all(head[never] == 0) and torch.all(head[3:100].abs().sum(-1) > 0)


@pytest.mark.parametrize(
    "args, error",
    [
        (
            ["--gen-rate=-5"],
            "gpu_check: --gen-rate must be a positive number of tokens/s, not -5.0",
        ),
        (
            ["--score-rate=nan"],
            "gpu_check: --score-rate must be a positive number of tokens/s, not nan",
        ),
        (["--tokenizer", "/no/such/dir"], "gpu_check: --tokenizer /no/such/dir: no such folder"),
    ],
)
def test_bad_options_are_refused_in_one_line(args, error):
    done = run_check("--dry-run", *args)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [error]


@pytest.mark.slow
def test_the_dry_run_prints_every_row_and_the_cost_model():
    # rates given for two of the three: the third is the dry run's own
    done = run_check("--dry-run", "--gen-rate=1000", "--score-rate=5000")
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "generation through vLLM skipped (no GPU)" in out
    built = re.findall(
        r"^gpu_check: (\S+), random weights, (\d+) of (\d+) layers.*"
        r"mean next-token entropy ([\d.]+) nats",
        out,
        re.M,
    )
    assert [b[:3] for b in built] == [
        ("Qwen/Qwen2.5-7B-Instruct", "28", "28"),
        ("Qwen/Qwen2.5-72B-Instruct", "2", "80"),
    ]
    assert all(float(b[3]) == pytest.approx(1.0, abs=0.02) for b in built)
    checks = {}
    for check in (
        "grpo step (generate + train)",
        "generate (transformers)",
        "measurer scoring, 1 of 80 layers",
        "measurer scoring, 2 of 80 layers",
        "measurer scoring, 80 layers (extrapolated)",
    ):
        row = re.search(rf"^{re.escape(check)}\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+-$", out, re.M)
        assert row, f"no row {check!r} in:\n{out}"
        seconds, tokens, rate = float(row[1]), int(row[2]), float(row[3])
        assert seconds > 0 and tokens > 0 and rate == pytest.approx(tokens / seconds, rel=0.05)
        checks[check] = seconds
    # the slice's time per layer, added for the 78 layers it lacks (0 if noise made it negative)
    one, two = (
        checks["measurer scoring, 1 of 80 layers"],
        checks["measurer scoring, 2 of 80 layers"],
    )
    whole = checks["measurer scoring, 80 layers (extrapolated)"]
    assert whole == pytest.approx(two + 78 * max(two - one, 0), abs=0.001 * 80)
    assert re.search(r"rate train: [\d.e+]+ tokens/s per GPU \(measured\)", out)
    assert "rate gen: 1000 tokens/s per GPU (given)" in out
    rows = dict(
        re.findall(r"^  ((?:sample|score|grpo|evaluate)[\w +:-]*?)  .*  (\S[^(]*)$", out, re.M)
    )
    assert len(rows) == 6, rows  # sample, score, grpo x 2, evaluate x 2 (test_gpu_cost.py)
    assert all(float(hours) > 0 for hours in rows.values()), rows
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
