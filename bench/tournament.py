"""Benchmark: a tournament played one game at a time against all games at once.

The same seeded games (ONUW by default, one discussion round, every seat an LLM agent on the
local backend, response cache off) are played twice: one table after another, then all
tables in lockstep with their LLM requests batched (``play_matrix``). The agents speak,
think and fit their prompts as the pipeline's tournaments do (``evaluate`` in params.yaml).
Prints one JSON line: {"games", "sequential_s", "batched_s", "speedup", "same_games", ...}.

Both ways use the same backend features (prefix KV reuse, ``--dtype``); the prefix store is
emptied before each way, so neither inherits the other's blocks. In float32 (the default)
the games are identical both ways; with ``--dtype int8`` (the CPU tournament players) a
row's activations are quantized with its batch, so batched games may differ.

    python bench/tournament.py [--games 32] [--game onuw] [--agent react] [--dtype float32]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from stackelberg.evaluation import play_matrix
from stackelberg.llm import make_llm
from stackelberg.params import load_params


def main() -> None:
    evaluate = load_params("params.yaml").evaluate
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=32)
    parser.add_argument("--game", default="onuw")
    parser.add_argument("--camp", default="village", help="the tested camp (every seed has it)")
    parser.add_argument("--agent", default="react", help="tested and opponent agent")
    parser.add_argument("--speech-tokens", type=int, default=evaluate.speech_tokens)
    parser.add_argument("--thought-tokens", type=int, default=evaluate.thought_tokens)
    parser.add_argument("--max-prompt-tokens", type=int, default=evaluate.max_prompt_tokens)
    parser.add_argument("--set", action="append", default=["discussion_rounds=1"])
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--dtype", default="float32", help="float32 | int8 | ...")
    parser.add_argument(
        "--prefix-cache-mb", type=int, default=None, help="the prefix store (default: auto)"
    )
    args = parser.parse_args()
    llm = make_llm(
        backend="local",
        model=args.model,
        cache="off",
        batch_size=64,
        dtype=args.dtype,
        prefix_cache_mb=args.prefix_cache_mb,
    )
    store = llm.prefix_store
    computed = {}
    options = dict(kv.split("=", 1) for kv in args.set)

    def play(batch: int) -> tuple[float, list[dict]]:
        llm.clear_prefix_cache()
        hits, misses = store.hits, store.misses
        start = time.perf_counter()
        records = play_matrix(
            args.game,
            [args.agent],
            range(args.games),
            camps=[args.camp],
            opponent=args.agent,
            llm_routes=llm,
            agent_options={
                "speech_tokens": args.speech_tokens,
                "thought_tokens": args.thought_tokens,
                "max_prompt_tokens": args.max_prompt_tokens,
            },
            options=options,
            batch_games=batch,
        )
        seconds = time.perf_counter() - start
        computed[batch] = (store.hits - hits, store.misses - misses)
        return seconds, records

    sequential, seq_records = play(1)
    batched, bat_records = play(args.games)
    print(
        json.dumps(
            {
                "games": args.games,
                "game": args.game,
                "agent": args.agent,
                "sequential_s": round(sequential, 1),
                "batched_s": round(batched, 1),
                "speedup": round(sequential / batched, 2),
                "same_games": seq_records == bat_records,
                "decisions": sum(r["decisions"] for r in bat_records),
                # prompt tokens the prefix store served / computed, each way
                "sequential_reused_computed": computed[1],
                "batched_reused_computed": computed[args.games],
                "prefix_cache_mb": store.max_bytes // 2**20,
                "threads": torch.get_num_threads(),
                "dtype": args.dtype,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
