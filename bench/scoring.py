"""Benchmark: shared-prefix scoring vs naive full forwards, for one Measurer instance.

The paper's Werewolf shape with the embedded model: a 2,000-token context, 8 candidate
utterances of ~120 tokens and 6 follower responses of ~28 tokens each. "Naive" is one full
forward of context + candidate + response per pair at batch size 1; it is timed on
``--naive-candidates`` of the 8 candidates and scaled up (printed as ``naive_scale``).
Prints one JSON line.

    python bench/scoring.py [--naive-candidates 2] [--model embedded-gemma3] [--dtype bfloat16]
"""

from __future__ import annotations

import argparse
import json
import random
import time

import torch

from stackelberg.llm import make_llm

NAMES = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace"]
LINES = [
    "{a} says {b} was very quiet during the last vote and that this is suspicious.",
    "{a} claims to be the Seer and checked {b} last night: a villager.",
    "{a} votes to eliminate {b}, because {b} defended the werewolf yesterday.",
    "{a} thinks {b} and {c} are working together and asks the village to watch them.",
    "{a} reminds everyone that {b} changed the story about the night twice.",
    "{a} says the Doctor should protect {b} tonight since {b} is clearly trusted.",
]


def text_of_tokens(llm, n_tokens: int, rng: random.Random, prefix: str = "") -> str:
    """Game-like text cut to exactly ``n_tokens`` tokens of the model's tokenizer."""
    parts = [prefix] if prefix else []
    while len(llm.encode(" ".join(parts), first=False)) < n_tokens + 8:
        a, b, c = rng.sample(NAMES, 3)
        parts.append(rng.choice(LINES).format(a=a, b=b, c=c))
    ids = llm.encode(" ".join(parts), first=False)[:n_tokens]
    return llm.tokenizer.decode(ids)


#: the paper's Werewolf shape of one Measurer instance, in tokens
PAPER_SHAPE = {
    "context_tokens": 2000,
    "candidates": 8,
    "candidate_tokens": 120,
    "responses": 6,
    "response_tokens": 28,
}
JOINER = "\nNext speaker:"


def paper_instance(
    llm,
    context_tokens: int,
    candidates: int,
    candidate_tokens: int,
    responses: int,
    response_tokens: int,
    seed: int = 0,
) -> tuple[str, list[str], list[str]]:
    """A Measurer instance of the given shape: context, candidate utterances, responses."""
    rng = random.Random(seed)
    context = text_of_tokens(llm, context_tokens, rng, "Werewolf, day 3. The discussion so far:")
    cands = [" " + text_of_tokens(llm, candidate_tokens, rng) for _ in range(candidates)]
    resps = [" " + text_of_tokens(llm, response_tokens, rng) for _ in range(responses)]
    return context, cands, resps


def scored_tokens(llm, context: str, cands: list[str], resps: list[str]) -> int:
    """Tokens a shared-prefix scoring of the instance runs through the model."""
    toks = llm.nested_tokens(context, cands, resps, JOINER)
    branches = sum(len(b) for row in toks.branches for b in row)
    return len(toks.context) + sum(map(len, toks.candidates)) + branches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for key, value in PAPER_SHAPE.items():
        parser.add_argument(f"--{key.replace('_', '-')}", type=int, default=value)
    parser.add_argument("--naive-candidates", type=int, default=2)
    parser.add_argument("--model", default="embedded", help="another follower: embedded-gemma3")
    parser.add_argument("--dtype", default="auto", help="auto (float32 on CPU) | bfloat16 | ...")
    args = parser.parse_args()

    llm = make_llm(cache="off", model=args.model, dtype=args.dtype)
    context, cands, resps = paper_instance(llm, **{k: getattr(args, k) for k in PAPER_SHAPE})
    joiner = JOINER

    llm.score("warm up", [" the threads"])
    t0 = time.perf_counter()
    fast = llm.score_nested(context, cands, resps, joiner)
    shared_s = time.perf_counter() - t0

    k = min(args.naive_candidates, args.candidates)
    t0 = time.perf_counter()
    naive = llm.score_nested_naive(context, cands[:k], resps, joiner)
    naive_s = (time.perf_counter() - t0) * args.candidates / k

    diff = max(
        abs(x - y)
        for fc, nc in zip(fast, naive, strict=False)
        for fr, nr in zip(fc, nc, strict=True)
        for x, y in zip(fr, nr, strict=True)
    )
    toks = llm.nested_tokens(context, cands, resps, joiner)
    tokens_naive = sum(
        len(toks.context) + len(cand) + len(branch)
        for cand, row in zip(toks.candidates, toks.branches, strict=True)
        for branch in row
    )
    tokens_shared = scored_tokens(llm, context, cands, resps)
    t0 = time.perf_counter()
    llm.nested_tokens(context, cands, resps, joiner)
    tokenize_s = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "naive_s": round(naive_s, 2),
                "shared_prefix_s": round(shared_s, 2),
                "whole_text_tokenize_s": round(tokenize_s, 3),
                "speedup": round(naive_s / shared_s, 1),
                "max_abs_diff": diff,
                "tokens_naive": tokens_naive,
                "tokens_shared": tokens_shared,
                "threads": torch.get_num_threads(),
                "naive_scale": f"timed on {k} of {args.candidates} candidates, x{args.candidates / k:g}",
                "shape": {
                    "context": len(toks.context),
                    "candidates": [len(c) for c in toks.candidates],
                    "responses": [len(toks.scored(0, r)) for r in range(len(resps))],
                },
            }
        )
    )


if __name__ == "__main__":
    main()
