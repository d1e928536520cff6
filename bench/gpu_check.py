"""Benchmark: the prepared GPU check, and the cost model of the paper's scale built on it.

On one GPU, in a few minutes, with random-weight models of the paper's architectures
(bench/random_model.py: no model hub, logits peaked like a trained model's; the tokenizer
is the embedded model's): Qwen2.5-7B-Instruct in full runs one GRPO step of the Refiner
(LoRA rank 16, 8 generations) through ``accelerate launch`` (bench/grpo_step.py) and a
generation batch through the local backend and, where vLLM is installed, through vLLM;
the first ``SLICE_LAYERS`` of Qwen2.5-72B-Instruct's 80 layers score one paper-shaped
Measurer instance (bench/scoring.py's shape). Prints seconds, tokens per second per GPU
and peak GPU memory per check, then GPU-hours per game at the paper's scale, per stage
(docs/scaling.md, "Cost model"): bench/gpu_cost.py's FLOP estimate beside the same token
counts divided by the measured rates (``--gen-rate``, ``--train-rate``, ``--score-rate``
override them, e.g. with rates of the real weights).

The 72B's rate is extrapolated, not measured whole: the slice scores the instance at 1 and
at ``SLICE_LAYERS`` layers, and the time per layer between them is added for the other
layers; the embeddings, the LM head (float32 in scoring) and the backend's own work are
in both, so they count once.

    python bench/gpu_check.py               # on a GPU machine
    python bench/gpu_check.py --dry-run     # on CPU, in seconds: the same path, tiny shapes
    python bench/gpu_check.py --tokenizer DIR   # the tokenizer from DIR

``--tokenizer`` names a folder holding a tokenizer (``tokenizer.json``,
``tokenizer_config.json``, ``chat_template.jinja``), for a machine without the embedded
model's package: the random models need only its tokenizer, not its weights.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from generate import prompt as chat_prompt
from gpu_cost import (
    ARCHS,
    GPUS,
    PAPER_GPU_HOURS,
    PAPER_GPUS,
    PAPER_HOURS,
    PAPER_PARAMS,
    rate_hours,
    spread,
    stage_hours,
    total,
    workload,
)
from random_model import Peaked, shrunk, write_checkpoint
from scoring import JOINER, PAPER_SHAPE, paper_instance, scored_tokens

from stackelberg.llm import make_llm
from stackelberg.llm.embedded import ensure_checkpoint
from stackelberg.params import entry_models, load_params

# transformers and TRL (grpo_step, stackelberg.training) are imported where they are used:
# without a GPU the check refuses at once, after importing torch alone

ROOT = Path(__file__).resolve().parents[1]
#: layers of the 72B Measurer built: 8 of 80 are 9.5e9 parameters, 19 GB in bf16 (and the
#: scoring path's float32 copy of the LM head, 5 GB), beside nothing else on the GPU
SLICE_LAYERS = 8


@dataclass
class Row:
    check: str
    seconds: float
    tokens: int
    gpus: int
    peak_gib: float | None = None  # the CUDA allocator's peak during the check

    @property
    def rate(self) -> float:
        """Tokens per second per GPU (per process on a CPU)."""
        return self.tokens / self.seconds / max(self.gpus, 1) if self.seconds else 0.0


def reset_peak() -> None:
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()


def peak_gib() -> float | None:
    """GiB the CUDA allocator held at most since ``reset_peak``; None without a GPU."""
    return torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None


def grpo_row(model: str, dry_run: bool, gpus: int, shape: dict) -> Row:
    """One GRPO step: in this process on a dry run, else under ``accelerate launch``."""
    from grpo_step import run_steps

    from stackelberg.training.grpo_settings import GRPOSettings
    from stackelberg.training.launch import launch_command

    if dry_run:
        measured = run_steps(model, steps=1, **shape)
    else:
        settings = GRPOSettings(
            launch="accelerate",
            num_processes=1,
            accelerate_config=str(ROOT / "configs/accelerate/multi_gpu.yaml"),
        )
        args = ["--model", model, "--steps", "1"]
        args += [f"--{k.replace('_', '-')}={v}" for k, v in shape.items()]
        command = launch_command(settings, "grpo_step", args)
        done = subprocess.run(command, cwd=ROOT / "bench", capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode or not lines:
            sys.exit(f"gpu_check: the launched GRPO step failed:\n{done.stderr[-3000:]}")
        measured = json.loads(lines[-1])
    tokens = round(
        measured["mean_completion_tokens"] * measured["generations"] * measured["prompts_per_step"]
    )
    seconds = measured["step_s"] - measured["reward_s_per_step"]
    return Row("grpo step (generate + train)", seconds, tokens, gpus, measured["peak_gpu_gib"])


def generation_rows(model: str, device: str, gpus: int, batch: int, new_tokens: int) -> list[Row]:
    """Generation of ``batch`` chats through the local backend, and through vLLM if installed."""
    reset_peak()
    llm = make_llm(backend="local", model=model, device=device, cache="off", batch_size=batch)
    chats = [chat_prompt(i) for i in range(batch)]
    llm.generate(chats[:1], max_new_tokens=4)  # warm up
    t0 = time.perf_counter()
    outs = llm.generate(chats, max_new_tokens=new_tokens, seed=list(range(batch)))
    seconds = time.perf_counter() - t0
    tokens = sum(len(llm.encode(o[0], first=False)) for o in outs)
    rows = [Row("generate (transformers)", seconds, tokens, gpus, peak_gib())]
    texts = [
        llm.tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False)
        for c in chats
    ]
    del llm, outs  # the local backend's copy of the weights, before vLLM loads its own
    if gpus and importlib.util.find_spec("vllm") is not None:
        from vllm import LLM, SamplingParams

        torch.cuda.empty_cache()
        engine = LLM(model=model, dtype="bfloat16", gpu_memory_utilization=0.3, enforce_eager=True)
        params = SamplingParams(max_tokens=new_tokens, temperature=0.7, ignore_eos=True)
        engine.generate(texts[:1], params)  # warm up
        t0 = time.perf_counter()
        results = engine.generate(texts, params)
        seconds = time.perf_counter() - t0
        tokens = sum(len(r.outputs[0].token_ids) for r in results)
        rows.append(Row("generate (vLLM)", seconds, tokens, gpus))
        del engine
    else:
        reason = "no GPU" if not gpus else "vllm not installed"
        print(f"gpu_check: generation through vLLM skipped ({reason})")
    return rows


@contextmanager
def depth(lm, layers: int):
    """``lm`` running only its first ``layers`` layers (the decoder and the local
    backend's KV caches both read ``num_hidden_layers``)."""
    full = lm.config.num_hidden_layers
    lm.config.num_hidden_layers = layers
    try:
        yield
    finally:
        lm.config.num_hidden_layers = full


def scoring_rows(
    model: str, device: str, gpus: int, shape: dict, full_layers: int, repeats: int
) -> list[Row]:
    """The Measurer's shared-prefix scoring of one instance of ``shape`` on a slice of a
    ``full_layers``-layer model: timed (median of ``repeats``) at 1 layer and at all of the
    slice's (``depth``), and extrapolated to ``full_layers`` by the time per layer between the two."""
    reset_peak()
    llm = make_llm(backend="local", model=model, device=device, cache="off")
    context, cands, resps = paper_instance(llm, **shape)
    tokens = scored_tokens(llm, context, cands, resps)
    llm.score_nested(context, cands, resps, JOINER)  # warm up: kernels, the float32 head
    sliced = llm.lm.config.num_hidden_layers
    times: dict[int, list[float]] = {1: [], sliced: []}
    for _ in range(repeats):
        for layers, runs in times.items():  # alternating: a drift in speed hits both
            with depth(llm.lm, layers):
                llm.clear_prefix_cache()  # each run reads the context anew
                if gpus:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                llm.score_nested(context, cands, resps, JOINER)
                if gpus:
                    torch.cuda.synchronize()
                runs.append(time.perf_counter() - t0)
    seconds = {layers: statistics.median(runs) for layers, runs in times.items()}
    per_layer = (seconds[sliced] - seconds[1]) / max(sliced - 1, 1)
    if per_layer < 0:
        print(f"gpu_check: scoring at {sliced} layers was no slower than at 1 (noise); 0 s added")
        per_layer = 0.0
    whole = seconds[sliced] + (full_layers - sliced) * per_layer
    peak = peak_gib()
    return [
        Row(f"measurer scoring, 1 of {full_layers} layers", seconds[1], tokens, gpus, peak),
        Row(
            f"measurer scoring, {sliced} of {full_layers} layers",
            seconds[sliced],
            tokens,
            gpus,
            peak,
        ),
        Row(f"measurer scoring, {full_layers} layers (extrapolated)", whole, tokens, gpus),
    ]


def cost_table(rates: dict[str, float | None], game: str = "werewolf") -> list[str]:
    """Lines of GPU-hours per game at configs/paper.yaml: per stage the FLOP estimate on each
    of ``GPUS`` (middle and range) and the token counts divided by ``rates`` (tokens/s per
    GPU: ``gen`` the 7B Refiner generating, ``train`` a GRPO step's generate-and-train,
    ``score`` the 72B Measurer scoring; None: not measured)."""
    works = workload(load_params(PAPER_PARAMS), game)
    estimates = [stage_hours(works, gpu) for gpu in GPUS]
    measured = rate_hours(works, rates)
    lines = [
        f"  {'stage':24}" + "".join(f" {g.name + ' (FLOPs)':>26}" for g in GPUS) + "  from rates"
    ]
    totals = dict(measured)
    totals["total"] = None if None in measured.values() else sum(measured.values())
    for e in estimates:
        e["total"] = total(e)
    for stage, hours in totals.items():
        cells = "".join(f" {spread(e[stage]):>26}" for e in estimates)
        lines.append(
            f"  {stage:24}{cells}  " + ("not measured" if hours is None else f"{hours:,.3g}")
        )
    lines.append(
        f"  (the paper: ~{PAPER_GPU_HOURS} GPU-hours, {PAPER_GPUS} A800 x ~{PAPER_HOURS} h)"
    )
    return lines


def describe(
    name: str, arch, layers: int, params: int, peaked: Peaked, tokenizer, t0: float
) -> None:
    """One line on a random model as built: its shape, and how peaked its logits are."""
    flat = math.log(len(tokenizer))
    memory = "" if (peak := peak_gib()) is None else f", peak {peak:.1f} GiB"
    print(
        f"gpu_check: {name}, random weights, {layers} of {arch.layers} layers, hidden "
        f"{arch.hidden}, {params:.3g} parameters (built and saved in "
        f"{time.perf_counter() - t0:.0f} s{memory}); LM head x{peaked.scale:.3g}: mean "
        f"next-token entropy {peaked.entropy:.2f} nats on a probe chat "
        f"({peaked.entropy_before:.2f} as built, {flat:.2f} flat)",
        flush=True,
    )


def main() -> None:
    started = time.perf_counter()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes, seconds")
    parser.add_argument(
        "--tokenizer",
        metavar="DIR",
        help="a tokenizer folder (default: the embedded model's checkpoint)",
    )
    for name, what in [
        ("gen", "7B Refiner generation"),
        ("train", "7B GRPO generate+train"),
        ("score", "72B Measurer scoring"),
    ]:
        parser.add_argument(
            f"--{name}-rate", type=float, help=f"tokens/s per GPU of the {what} (overrides)"
        )
    args = parser.parse_args()
    for key in ("gen", "train", "score"):
        given = getattr(args, f"{key}_rate")
        if given is not None and not (given > 0 and math.isfinite(given)):
            sys.exit(f"gpu_check: --{key}-rate must be a positive number of tokens/s, not {given}")
    if args.tokenizer and not Path(args.tokenizer).is_dir():
        sys.exit(f"gpu_check: --tokenizer {args.tokenizer}: no such folder")

    gpus = torch.cuda.device_count()
    if not args.dry_run and not gpus:
        sys.exit("gpu_check: no CUDA GPU here; run with --dry-run to check it on CPU")
    from transformers import AutoTokenizer

    device = "cpu" if args.dry_run else "cuda"
    gpus = 0 if args.dry_run else 1
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer or ensure_checkpoint())
    paper = load_params(PAPER_PARAMS).models
    names = {
        "refiner": entry_models(paper.refiner)[0].model,
        "measurer": entry_models(paper.measurer)[0].model,
    }
    archs = {role: ARCHS[name] for role, name in names.items()}
    if args.dry_run:
        archs = {role: shrunk(arch, len(tokenizer)) for role, arch in archs.items()}
        slice_layers, repeats = 2, 1
        grpo_shape = {"generations": 2, "max_new_tokens": 8}
        gen_shape = {"batch": 4, "new_tokens": 16}
        score_shape = {**PAPER_SHAPE, "context_tokens": 256, "candidates": 2, "responses": 2}
    else:
        slice_layers, repeats = SLICE_LAYERS, 3
        grpo_shape = {"generations": 8, "max_new_tokens": 128}
        gen_shape = {"batch": 64, "new_tokens": 256}
        score_shape = dict(PAPER_SHAPE)
    with tempfile.TemporaryDirectory() as tmp:
        folder, arch = Path(tmp) / "refiner", archs["refiner"]
        reset_peak()
        t0 = time.perf_counter()
        params, peaked = write_checkpoint(arch, folder, tokenizer, device)
        describe(names["refiner"], arch, arch.layers, params, peaked, tokenizer, t0)
        grpo = grpo_row(str(folder), args.dry_run, gpus, grpo_shape)
        rows = [grpo, *generation_rows(str(folder), device, gpus, **gen_shape)]
        shutil.rmtree(folder)  # its disk, before the 72B slice is written
        folder, arch = Path(tmp) / "measurer", archs["measurer"]
        reset_peak()
        t0 = time.perf_counter()
        params, peaked = write_checkpoint(arch, folder, tokenizer, device, slice_layers)
        describe(names["measurer"], arch, slice_layers, params, peaked, tokenizer, t0)
        scores = scoring_rows(str(folder), device, gpus, score_shape, arch.layers, repeats)
        rows += scores
    unit = "per GPU" if gpus else "on CPU"
    print(f"\ngpu_check: device {torch.cuda.get_device_name() if gpus else 'cpu'}")
    print(f"{'check':44} {'seconds':>9} {'tokens':>8} {'tokens/s ' + unit:>18} {'peak GiB':>9}")
    for row in rows:
        peak = "-" if row.peak_gib is None else f"{row.peak_gib:.1f}"
        print(f"{row.check:44} {row.seconds:9.3f} {row.tokens:8d} {row.rate:18.1f} {peak:>9}")

    generation = max((r for r in rows if r.check.startswith("generate")), key=lambda r: r.rate)
    measured = {"gen": generation.rate, "train": grpo.rate, "score": scores[-1].rate}
    rates: dict[str, float] = {}
    print("\ncost model: GPU-hours per game at the paper's scale (docs/scaling.md, Cost model)")
    for key, rate in measured.items():
        given = getattr(args, f"{key}_rate")
        rates[key], source = (given, "given") if given else (rate, "measured")
        print(f"  rate {key}: {rates[key]:.4g} tokens/s per GPU ({source})")
    print("\n".join(cost_table(rates)))
    if args.dry_run:
        print("  (a dry run: CPU rates of shrunk models, meaningless as GPU figures)")
    print(f"\ngpu_check: done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
