"""Benchmark: seconds per GRPO step of the Refiner on the embedded model, and where they go.

Real Refiner prompts (Werewolf, ``agents.refiner.refiner_messages``), the embedded
SmolLM2-135M checkpoint + LoRA r=16, and a cheap deterministic reward (the parsed
``Response:`` length), so ``reward_s`` is the trainer's reward overhead, not a Measurer's.
Prints one JSON line: step_s (mean trainer step time), generation_s and reward_s per step,
the rest (old/ref log-probs, loss, backward, optimizer), the total wall time and the
peak memory (the process's, and the CUDA allocator's on a GPU).

    python bench/grpo_step.py [--steps 2] [--generations 8] [--max-new-tokens 32]
                              [--micro-batch 1] [--generation local] [--no-share-prompts]
                              [--precision auto|float32|bfloat16] [--model CHECKPOINT]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import tempfile
import time

import torch
from transformers import AutoTokenizer

from stackelberg.agents.refiner import parse_refiner_output, refiner_messages
from stackelberg.games import make_game
from stackelberg.llm.embedded import ensure_checkpoint
from stackelberg.training import GRPOSettings, train_refiner
from stackelberg.training.grpo_settings import train_precision

BASES = [
    "I think Player 3 is lying about the vote.",
    "Player 5 has been too quiet, we should watch them.",
    "I am a villager and I trust Player 2.",
    "Let us vote for Player 6 today.",
]


def prompts(n: int) -> list[list[dict]]:
    out = []
    for i in range(n):
        game = make_game("werewolf").reset(seed=i)
        lines = [f"Player {j + 2} says they suspect Player {(j + i) % 7 + 1}." for j in range(4)]
        out.append(refiner_messages(game, 0, 1, BASES[i % len(BASES)], lines))
    return out


def response_length(completions: list[str], base: list[str]) -> list[float]:
    """Longer parsed responses score higher; a tiny stand-in for the Measurer reward.

    >>> response_length(["Analysis: x\\nResponse: hello"], ["b"])
    [5.0]
    """
    return [
        float(len(parse_refiner_output(c, b)[0])) for c, b in zip(completions, base, strict=True)
    ]


def run_steps(
    model: str,
    steps: int = 2,
    generations: int = 8,
    prompts_per_step: int = 1,
    max_new_tokens: int = 32,
    micro_batch: int | None = None,
    generation: str = "trl",
    share_prompts: bool = True,
    precision: str = "auto",
) -> dict:
    """Train ``steps`` GRPO steps of the Refiner on ``model`` (a checkpoint folder) and time them."""
    n = steps * prompts_per_step
    chats = prompts(n)
    settings = GRPOSettings(
        num_generations=generations,
        prompts_per_step=prompts_per_step,
        micro_batch=micro_batch,
        generation=generation,
        share_prompts=share_prompts,
        precision=precision,
    )
    base = [BASES[i % len(BASES)] for i in range(n)]
    tokenizer = AutoTokenizer.from_pretrained(model)
    prompt_tokens = [
        len(
            tokenizer.apply_chat_template(
                c, add_generation_prompt=True, tokenize=True, return_dict=True
            )["input_ids"]
        )
        for c in chats
    ]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        result = train_refiner(
            model,
            chats,
            {"base": base},
            response_length,
            settings,
            f"{tmp}/a",
            completion_limit=max_new_tokens,
        )
        wall = time.perf_counter() - start
    steps = result.steps
    step_s = statistics.mean(h["step_time"] for h in result.history)
    gen, rew = result.generation_s / steps, result.reward_s / steps
    return {
        "steps": steps,
        "prompts_per_step": prompts_per_step,
        "generations": generations,
        "max_new_tokens": max_new_tokens,
        "micro_batch": micro_batch,
        "generation": generation,
        "share_prompts": share_prompts,
        "precision": train_precision(settings.precision, torch.cuda.is_available()),
        "step_s": round(step_s, 3),
        "generation_s_per_step": round(gen, 3),
        "reward_s_per_step": round(rew, 5),
        "other_s_per_step": round(step_s - gen - rew, 3),
        "wall_s": round(wall, 2),
        "mean_prompt_tokens": round(statistics.mean(prompt_tokens), 1),
        "mean_completion_tokens": round(
            statistics.mean(h["completions/mean_length"] for h in result.history), 1
        ),
        "torch_threads": torch.get_num_threads(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "peak_gpu_gib": (
            round(torch.cuda.max_memory_allocated() / 2**30, 2)
            if torch.cuda.is_available()
            else None
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--prompts-per-step", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument(
        "--micro-batch", type=int, default=None, help="completions per forward/backward pass"
    )
    parser.add_argument("--generation", default="trl", help="trl | local (GRPOSettings)")
    parser.add_argument(
        "--no-share-prompts",
        action="store_true",
        help="one row per completion in the log-probability forwards, as TRL does",
    )
    parser.add_argument("--precision", default="auto", help="auto | float32 | bfloat16")
    parser.add_argument("--model", default=None, help="a checkpoint folder; default: embedded")
    args = parser.parse_args()
    row = run_steps(
        args.model or str(ensure_checkpoint()),
        args.steps,
        args.generations,
        args.prompts_per_step,
        args.max_new_tokens,
        args.micro_batch,
        args.generation,
        not args.no_share_prompts,
        args.precision,
    )
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
