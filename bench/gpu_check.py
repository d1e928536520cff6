"""Benchmark: the prepared GPU check, and the cost model of the paper's scale built on it.

On one GPU, in a few minutes, with a tiny random-weight Qwen2-style causal LM built from a
config (no model hub needed; the tokenizer is the embedded model's): one GRPO step of the
Refiner through ``accelerate launch`` (bench/grpo_step.py), generation through the local
backend and, where vLLM is installed, through vLLM, and the Measurer's scoring of one
paper-shaped instance (bench/scoring.py's shape). Prints a table of seconds and tokens per
second per GPU, then GPU-hours per game at the paper's scale, per stage (docs/scaling.md, "Cost model").

The rates of the paper's models (the 7B Refiner, the 72B Measurer) are the measured ones
scaled by parameter count, a rough assumption (a tiny model is bound by overheads, not by
arithmetic, so this overstates the cost); pass rates measured on the real models with
``--gen-rate``, ``--train-rate``, ``--score-rate``, or run the check with ``--model``.

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
from scoring import JOINER, PAPER_SHAPE, paper_instance, scored_tokens

from stackelberg.llm import make_llm
from stackelberg.llm.embedded import ensure_checkpoint

# transformers and TRL (grpo_step, stackelberg.training) are imported where they are used:
# without a GPU the check refuses at once, after importing torch alone

ROOT = Path(__file__).resolve().parents[1]

#: the paper's counts per game (docs/scaling.md; configs/paper.yaml)
PAPER = {
    "instances": 4000,
    "train_fraction": 0.9,  # select.test_fraction 0.1
    "candidates": 8,  # sample.n
    "completion_tokens": 512,  # sample.max_new_tokens: an upper bound of a completion
    "grpo_epochs": 3,
    "grpo_generations": 8,
    "refiner_params": 7.6e9,  # Qwen2.5-7B-Instruct
    "measurer_params": 72.7e9,  # Qwen2.5-72B-Instruct
}


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


def cost_model(
    rates: dict[str, float], scored_per_candidate: float
) -> list[tuple[str, float, str]]:
    """GPU-hours per game at the paper's scale: (stage, GPU-hours, the formula's inputs).

    ``rates``: tokens/s per GPU of the 7B Refiner generating (``gen``), of a GRPO step's
    generate-and-train (``train``), and of the 72B Measurer scoring (``score``).
    """
    n, c = PAPER["instances"], PAPER["completion_tokens"]
    train = PAPER["grpo_epochs"] * round(n * PAPER["train_fraction"]) * PAPER["grpo_generations"]
    candidates = n * PAPER["candidates"]
    rows = [
        ("sample", candidates * c / rates["gen"], f"{candidates} completions x {c} tok / gen"),
        (
            "score",
            candidates * scored_per_candidate / rates["score"],
            f"{candidates} candidates x {scored_per_candidate:.0f} tok / score",
        ),
        (
            "grpo: generate + train",
            train * c / rates["train"],
            f"{train} completions x {c} tok / train",
        ),
        (
            "grpo: Measurer reward",
            train * scored_per_candidate / rates["score"],
            f"{train} completions x {scored_per_candidate:.0f} tok / score",
        ),
    ]
    return [(stage, seconds / 3600, inputs) for stage, seconds, inputs in rows]


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
    model_of = {"gen": "refiner_params", "train": "refiner_params", "score": "measurer_params"}
    rates, sources = {}, {}
    for key, rate in measured.items():
        given = getattr(args, f"{key}_rate")
        rates[key] = given or rate * params / PAPER[model_of[key]]
        sources[key] = (
            "given" if given else f"measured x {params:.3g}/{PAPER[model_of[key]]:.3g} params"
        )
    shape = PAPER_SHAPE
    scored_per_candidate = (
        shape["context_tokens"] / shape["candidates"]
        + shape["candidate_tokens"]
        + shape["responses"] * shape["response_tokens"]
    )
    print(
        "\ncost model: GPU-hours per game at the paper's scale (estimates; docs/scaling.md, Cost model)"
    )
    for key, rate in rates.items():
        print(f"  rate {key}: {rate:.4g} tokens/s per GPU ({sources[key]})")
    total = 0.0
    for stage, hours, inputs in cost_model(rates, scored_per_candidate):
        total += hours
        print(f"  {stage:24} {hours:12.1f} GPU-h   ({inputs})")
    print(f"  {'total':24} {total:12.1f} GPU-h")
    if args.dry_run:
        print("  (a dry run: CPU rates of a tiny model, meaningless as GPU figures)")


if __name__ == "__main__":
    main()
