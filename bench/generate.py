"""Benchmark: generation throughput of the local backend at batch 1, 8 and 32.

Each row is a different short Werewolf prompt with its own seed, sampled at ``--temperature``
(0.7; 0: greedy) and ``--top-p`` (1: every step draws over the whole vocabulary, the sampler's slow path); the
cache is off. Prints one JSON line per batch size: new tokens per second over the whole
batch, and the seconds.

    python bench/generate.py [--max-new-tokens 32] [--model embedded] [--dtype int8] [--threads 1]
        [--adapter models/refiner/werewolf] [--device cuda] [--top-p 1.0]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from stackelberg.llm import make_llm

ROLES = ["villager", "seer", "werewolf", "doctor"]


def prompt(i: int) -> list[dict[str, str]]:
    role = ROLES[i % len(ROLES)]
    return [
        {
            "role": "user",
            "content": f"You are Player {i % 7 + 1}, a {role} in Werewolf. "
            f"In one sentence, say whom you suspect and why (day {i % 3 + 1}).",
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--batches", default="1,8,32")
    parser.add_argument("--dtype", default="auto", help="auto (float32 on CPU) | int8 | ...")
    parser.add_argument(
        "--threads", type=int, default=None, help="default: the machine's cores; 0: the free cores"
    )
    parser.add_argument("--adapter", default=None, help="a trained Refiner (LoRA) beside the model")
    parser.add_argument(
        "--device", default="auto", help="auto (a GPU if there is one) | cpu | cuda"
    )
    parser.add_argument("--top-p", type=float, default=0.9, help="nucleus sampling of every row")
    parser.add_argument(
        "--temperature",
        type=float,
        default=0.7,
        help="0: greedy, the same tokens under any random stream (a like-for-like speed "
        "comparison across sampler changes: a sampled row's length follows its stream)",
    )
    args = parser.parse_args()
    llm = make_llm(
        backend="local",
        model=args.model,
        cache="off",
        batch_size=64,
        dtype=args.dtype,
        threads=args.threads,
        adapter=args.adapter,
        device=args.device,
    )
    llm.generate([prompt(0)], max_new_tokens=4)  # warm up
    for batch in (int(b) for b in args.batches.split(",")):
        prompts = [prompt(i) for i in range(batch)]
        t0 = time.perf_counter()
        outs = llm.generate(
            prompts,
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            top_p=args.top_p,
            seed=list(range(batch)),
        )
        seconds = time.perf_counter() - t0
        tokens = sum(len(llm.encode(o[0], first=False)) for o in outs)
        print(
            json.dumps(
                {
                    "batch": batch,
                    "new_tokens": tokens,
                    "seconds": round(seconds, 2),
                    "tokens_per_s": round(tokens / seconds, 1),
                    # one decoding step of the batch (the prompt's prefill included)
                    "ms_per_step": round(1000 * seconds * batch / tokens, 1),
                    "max_new_tokens": args.max_new_tokens,
                    "threads": torch.get_num_threads(),
                    "device": str(getattr(llm, "device", "cpu")),  # older commits: no attribute
                    "temperature": args.temperature,
                    "top_p": args.top_p,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
