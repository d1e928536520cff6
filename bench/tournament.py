"""Benchmark: a tournament played one game at a time against all games at once.

The same seeded games (ONUW by default, one discussion round, every seat a ``direct`` LLM
agent on the local backend, response cache off) are played twice: one table after another,
then all tables in lockstep with their LLM requests batched (``play_matrix``). The games are
identical both ways (the choices and speeches do not depend on the batch). Prints one JSON
line: {"games", "sequential_s", "batched_s", "speedup", ...}.

Both ways use the same backend features (prefix KV reuse, ``--dtype``); the prefix store is
emptied before each way, so neither inherits the other's blocks.

    python bench/tournament.py [--games 32] [--game onuw] [--speech-tokens 12] [--dtype int8]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from stackelberg.evaluation import play_matrix
from stackelberg.llm import make_llm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=32)
    parser.add_argument("--game", default="onuw")
    parser.add_argument("--camp", default="village", help="the tested camp (every seed has it)")
    parser.add_argument("--agent", default="direct", help="tested and opponent agent")
    parser.add_argument("--speech-tokens", type=int, default=12)
    parser.add_argument("--max-prompt-tokens", type=int, default=640)
    parser.add_argument("--set", action="append", default=["discussion_rounds=1"])
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--dtype", default="int8", help="as the tournament players (params.yaml)")
    args = parser.parse_args()
    llm = make_llm(backend="local", model=args.model, cache="off", batch_size=64, dtype=args.dtype)
    options = dict(kv.split("=", 1) for kv in args.set)

    def play(batch: int) -> tuple[float, list[dict]]:
        llm.prefix_store.clear()
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
                "max_prompt_tokens": args.max_prompt_tokens,
            },
            options=options,
            batch_games=batch,
        )
        return time.perf_counter() - start, records

    sequential, seq_records = play(1)
    batched, bat_records = play(args.games)
    print(
        json.dumps(
            {
                "games": args.games,
                "game": args.game,
                "sequential_s": round(sequential, 1),
                "batched_s": round(batched, 1),
                "speedup": round(sequential / batched, 2),
                "same_games": seq_records == bat_records,
                "decisions": sum(r["decisions"] for r in bat_records),
                "threads": torch.get_num_threads(),
                "dtype": args.dtype,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
