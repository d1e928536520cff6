"""Benchmark: the prepared GPU check, and the cost model of the paper's scale built on it.

On one GPU, in a few minutes, with a tiny random-weight Qwen2-style causal LM built from a
config (no model hub needed; the tokenizer is the embedded model's): one GRPO step of the
Refiner through ``accelerate launch`` (bench/grpo_step.py), generation through the local
backend and, where vLLM is installed, through vLLM, and the Measurer's scoring of one
paper-shaped instance (bench/scoring.py's shape). Prints a table of seconds and tokens per
second per GPU, then GPU-hours per game at the paper's scale, per stage (docs/scaling.md,
"Cost model"): bench/gpu_cost.py's FLOP estimate beside the same token counts divided by
rates of the paper's models (the 7B Refiner, the 72B Measurer).

Those rates are given (``--gen-rate``, ``--train-rate``, ``--score-rate``) or measured on a
checkpoint (``--model``) and scaled by parameter count to the paper's models. The tiny
random model's own rates give none: it is bound by overheads, not arithmetic, so scaled up
they overstated the cost by orders of magnitude.

    python bench/gpu_check.py               # on a GPU machine
    python bench/gpu_check.py --dry-run     # on CPU, in seconds: the same checks, tiny shapes
    python bench/gpu_check.py --tokenizer DIR   # the tiny model's tokenizer from DIR

``--tokenizer`` names a folder holding a tokenizer (``tokenizer.json``,
``tokenizer_config.json``, ``chat_template.jinja``), for a machine without the embedded
model's package: the tiny model needs only the tokenizer, not the embedded weights.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
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
from scoring import JOINER, PAPER_SHAPE, paper_instance, scored_tokens

from stackelberg.llm import make_llm
from stackelberg.llm.embedded import ensure_checkpoint
from stackelberg.params import entry_models, load_params

# transformers and TRL (grpo_step, stackelberg.training) are imported where they are used:
# without a GPU the check refuses at once, after importing torch alone

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Row:
    check: str
    seconds: float
    tokens: int
    gpus: int

    @property
    def rate(self) -> float:
        """Tokens per second per GPU (per process on a CPU)."""
        return self.tokens / self.seconds / max(self.gpus, 1) if self.seconds else 0.0


def tiny_model(
    folder: Path, hidden: int = 256, layers: int = 2, tokenizer_dir: str | Path | None = None
) -> int:
    """Save a random-weight Qwen2 causal LM in ``folder``, with the tokenizer of
    ``tokenizer_dir`` (default: the embedded model's); return its parameter count."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2Config

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir or ensure_checkpoint())
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def parameter_count(model: str) -> int:
    """Parameters of a checkpoint, counted on its config without loading the weights."""
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    with init_empty_weights():
        empty = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model))
    empty.tie_weights()  # tied embeddings count once, as in the loaded model
    return sum(p.numel() for p in empty.parameters())


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
    return Row("grpo step (generate + train)", seconds, tokens, gpus)


def generation_rows(model: str, device: str, gpus: int, batch: int, new_tokens: int) -> list[Row]:
    """Generation of ``batch`` chats through the local backend, and through vLLM if installed."""
    llm = make_llm(backend="local", model=model, device=device, cache="off", batch_size=batch)
    chats = [chat_prompt(i) for i in range(batch)]
    llm.generate(chats[:1], max_new_tokens=4)  # warm up
    t0 = time.perf_counter()
    outs = llm.generate(chats, max_new_tokens=new_tokens, seed=list(range(batch)))
    seconds = time.perf_counter() - t0
    tokens = sum(len(llm.encode(o[0], first=False)) for o in outs)
    rows = [Row("generate (transformers)", seconds, tokens, gpus)]
    if gpus and importlib.util.find_spec("vllm") is not None:
        from vllm import LLM, SamplingParams

        engine = LLM(model=model, dtype="bfloat16", gpu_memory_utilization=0.3, enforce_eager=True)
        texts = [
            llm.tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False)
            for c in chats
        ]
        params = SamplingParams(max_tokens=new_tokens, temperature=0.7, ignore_eos=True)
        engine.generate(texts[:1], params)  # warm up
        t0 = time.perf_counter()
        results = engine.generate(texts, params)
        seconds = time.perf_counter() - t0
        tokens = sum(len(r.outputs[0].token_ids) for r in results)
        rows.append(Row("generate (vLLM)", seconds, tokens, gpus))
    else:
        reason = "no GPU" if not gpus else "vllm not installed"
        print(f"gpu_check: generation through vLLM skipped ({reason})")
    return rows


def scoring_row(model: str, device: str, gpus: int, shape: dict) -> Row:
    """The Measurer's shared-prefix scoring of one instance of ``shape``."""
    llm = make_llm(backend="local", model=model, device=device, cache="off")
    context, cands, resps = paper_instance(llm, **shape)
    llm.score("warm up", [" the threads"])
    t0 = time.perf_counter()
    llm.score_nested(context, cands, resps, JOINER)
    seconds = time.perf_counter() - t0
    return Row(
        "measurer scoring (1 instance)", seconds, scored_tokens(llm, context, cands, resps), gpus
    )


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes, seconds")
    parser.add_argument("--model", help="a checkpoint folder instead of the tiny random model")
    parser.add_argument(
        "--tokenizer",
        metavar="DIR",
        help="the tiny model's tokenizer folder (default: the embedded model's checkpoint)",
    )
    for name, what in [
        ("gen", "7B Refiner generation"),
        ("train", "7B GRPO generate+train"),
        ("score", "72B Measurer scoring"),
    ]:
        parser.add_argument(f"--{name}-rate", type=float, help=f"tokens/s per GPU of the {what}")
    args = parser.parse_args()

    gpus = torch.cuda.device_count()
    if not args.dry_run and not gpus:
        sys.exit("gpu_check: no CUDA GPU here; run with --dry-run to check it on CPU")
    device = "cpu" if args.dry_run else "cuda"
    gpus = 0 if args.dry_run else 1
    if args.dry_run:
        grpo_shape = {"generations": 2, "max_new_tokens": 8}
        gen_shape = {"batch": 4, "new_tokens": 16}
        score_shape = {**PAPER_SHAPE, "context_tokens": 256, "candidates": 2, "responses": 2}
    else:
        grpo_shape = {"generations": 8, "max_new_tokens": 128}
        gen_shape = {"batch": 64, "new_tokens": 256}
        score_shape = dict(PAPER_SHAPE)
    with tempfile.TemporaryDirectory() as tmp:
        if args.model:
            model, params = args.model, parameter_count(args.model)
        else:
            model = str(Path(tmp) / "tiny")
            params = tiny_model(Path(model), tokenizer_dir=args.tokenizer)
        grpo = grpo_row(model, args.dry_run, gpus, grpo_shape)
        rows = [grpo, *generation_rows(model, device, gpus, **gen_shape)]
        score = scoring_row(model, device, gpus, score_shape)
        rows.append(score)
    unit = "per GPU" if gpus else "on CPU"
    print(f"\ngpu_check: model {params / 1e6:.1f}M parameters, device {device}")
    print(f"{'check':34} {'seconds':>9} {'tokens':>8} {'tokens/s ' + unit:>18}")
    for row in rows:
        print(f"{row.check:34} {row.seconds:9.3f} {row.tokens:8d} {row.rate:18.1f}")

    generation = max((r for r in rows if r.check.startswith("generate")), key=lambda r: r.rate)
    measured = {"gen": generation.rate, "train": grpo.rate, "score": score.rate}
    paper = load_params(PAPER_PARAMS).models
    model_of = {
        "gen": entry_models(paper.refiner)[0].model,
        "train": entry_models(paper.refiner)[0].model,
        "score": entry_models(paper.measurer)[0].model,
    }
    rates: dict[str, float | None] = {}
    print("\ncost model: GPU-hours per game at the paper's scale (docs/scaling.md, Cost model)")
    for key, rate in measured.items():
        given, target = getattr(args, f"{key}_rate"), ARCHS[model_of[key]].params
        if given:
            rates[key], source = given, "given"
        elif args.model:
            rates[key] = rate * params / target
            source = f"measured x {params:.3g}/{target:.3g} params"
        else:
            rates[key], source = None, "not measured: the tiny model's rate does not scale"
        shown = "-" if rates[key] is None else f"{rates[key]:.4g} tokens/s per GPU"
        print(f"  rate {key}: {shown} ({source})")
    print("\n".join(cost_table(rates)))
    if args.dry_run:
        print("  (a dry run: CPU rates of a tiny model, meaningless as GPU figures)")


if __name__ == "__main__":
    main()
