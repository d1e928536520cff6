"""bench/gpu_cost.py: the FLOP estimate's arithmetic is the docstring's, and its work is
counted from configs/paper.yaml."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from stackelberg.params import load_params

ROOT = Path(__file__).resolve().parents[2]


def bench_module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / f"bench/{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


cost = bench_module("gpu_cost")
REFINER, MEASURER = "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-72B-Instruct"


def test_the_architectures_count_the_published_parameters():
    assert cost.ARCHS[REFINER].params == 7_615_616_512
    assert cost.ARCHS[MEASURER].params == 72_706_203_648
    # N of the FLOP count leaves out the input embedding, a lookup
    assert cost.ARCHS[REFINER].matmul_params == 7_615_616_512 - 152064 * 3584


def test_training_is_6NT_and_reading_or_writing_2NT(monkeypatch):
    small = cost.Arch(hidden=8, intermediate=16, layers=2, heads=2, kv_heads=1, vocab=10)
    monkeypatch.setitem(cost.ARCHS, "small", small)
    n, t = small.matmul_params, 1000
    policy = cost.Work("grpo", "small", "lora_train", t)
    reference = cost.Work("grpo", "small", "forward", t)
    assert policy.flops() + reference.flops() == 6 * n * t
    assert cost.Work("s", "small", "decode", t, batch=4, context=10).flops() == 2 * n * t
    gpu = cost.Gpu("g", peak_flops=1e12, bandwidth=1e12)
    shapes = cost.Shapes(compute_mfu=(0.25, 0.5))
    fewest, middle, most = cost.gpu_hours(policy, gpu, shapes)
    assert (fewest, middle, most) == pytest.approx(
        [4 * n * t / (1e12 * u) / 3600 for u in (0.5, 0.375, 0.25)]
    )


def test_decoding_is_held_to_a_share_of_its_bandwidth_bound():
    arch, gpu = cost.ARCHS[REFINER], cost.GPUS[0]
    bound = cost.decode_bound(arch, gpu, batch=8, context=0)
    # without a KV cache: batch x bandwidth / peak, the weights read once a step (bf16)
    assert bound == pytest.approx(8 * gpu.bandwidth / gpu.peak_flops)
    assert cost.decode_bound(arch, gpu, batch=8, context=2000) < bound
    work = cost.Work("s", REFINER, "decode", 1e6, batch=8, context=0)
    low, _, high = cost.utilization(work, gpu, cost.Shapes(decode_share=(0.1, 0.5)))
    assert (low, high) == pytest.approx((0.1 * bound, 0.5 * bound))
    # a batch large enough to be bound by arithmetic is held to the compute MFU
    big = cost.Work("s", REFINER, "decode", 1e6, batch=100_000, context=0)
    assert cost.utilization(big, gpu, cost.Shapes())[2] == cost.Shapes().compute_mfu[1]


def stage_tokens(works, stage, kind, model=REFINER):
    return sum(w.tokens for w in works if (w.stage, w.kind, w.model) == (stage, kind, model))


def test_the_work_is_counted_from_the_paper_config():
    params = load_params(ROOT / "configs/paper.yaml")
    shapes = cost.Shapes()
    works = cost.workload(params, "werewolf", shapes)
    p, c = shapes.refiner_prompt_tokens, shapes.completion_tokens
    scored = shapes.measurer_context_tokens + 8 * (c + 2 * 3 * shapes.response_tokens)
    # 4,000 instances, n = 8; 3,600 train prompts x 3 epochs, 8 generations
    assert stage_tokens(works, "sample", "decode") == 4000 * 8 * c
    assert stage_tokens(works, "score", "forward", MEASURER) == 4000 * scored
    assert stage_tokens(works, "grpo: generate + train", "lora_train") == 3600 * 3 * (
        p + 8 * (c + 1)
    )
    assert stage_tokens(works, "grpo: Measurer reward", "forward", MEASURER) == 3600 * 3 * scored
    # Werewolf: 3 refiner+X conditions x 2 camps x 100 seeds
    assert stage_tokens(works, "evaluate: tournaments", "decode") == 600 * 20 * c
    hours = cost.stage_hours(works, cost.GPUS[1])
    assert set(hours) == {
        "sample",
        "score",
        "grpo: generate + train",
        "grpo: Measurer reward",
        "evaluate: held-out",
        "evaluate: tournaments",
    }
    assert all(0 < fewest < middle < most for fewest, middle, most in hours.values())


def test_the_total_follows_the_config(tmp_path):
    raw = yaml.safe_load((ROOT / "configs/paper.yaml").read_text())
    paper = cost.workload(load_params(ROOT / "configs/paper.yaml"), "onuw")
    raw["select"]["instances"] *= 2
    raw["evaluate"]["tournament_games"] = 0
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    doubled = cost.workload(load_params(tmp_path / "params.yaml"), "onuw")
    flops = {w.stage: 0.0 for w in paper}
    for w in paper:
        flops[w.stage] += w.flops()
    twice = sum(f for s, f in flops.items() if s != "evaluate: tournaments")
    assert sum(w.flops() for w in doubled) == pytest.approx(2 * twice)


def test_rates_divide_the_same_tokens_and_a_missing_rate_is_not_measured():
    works = cost.workload(load_params(ROOT / "configs/paper.yaml"), "werewolf")
    hours = cost.rate_hours(works, {"gen": 1000.0, "train": None, "score": 5000.0})
    assert hours["sample"] == pytest.approx(4000 * 8 * 256 / 1000 / 3600)
    assert hours["grpo: generate + train"] is None
    measurer = stage_tokens(works, "grpo: Measurer reward", "forward", MEASURER)
    assert hours["grpo: Measurer reward"] == pytest.approx(measurer / 5000 / 3600)
