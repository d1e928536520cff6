"""Benchmark: the Refiner service's throughput and latency, concurrent clients against one at
a time.

Starts `stackelberg serve`'s app in this process on a free loopback port, with the Refiner
as the evaluate stage plays it (``Params.refiner_profile``: the base of ``--params``' models.refiner,
by default the embedded model) and a LoRA adapter (``--refiner FOLDER``, e.g.
models/refiner/werewolf; default: an untrained one made here, whose update is zero), then
sends the same refine requests (Werewolf speeches, each its own draft and seed) with the
official openai client: first one at a time, then from ``--clients`` threads at once.
Prints one JSON line per way: requests, seconds, requests per second, latency p50 and p90
(seconds), the CPU seconds of this process (server and clients: on a shared machine the
figure that its load does not change much) and requests per CPU second, the batch sizes the
collector formed, and the speed-up of the concurrent way in wall and in CPU time.

    python bench/serve.py [--clients 8] [--requests 16] [--refiner FOLDER] [--params FILE]
        [--max-tokens 40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import openai

from stackelberg.params import Params, load_params
from stackelberg.serving.bodies import ServeLimits
from stackelberg.serving.server import bind, load_service, running

DRAFTS = [
    "I think Player {k} is lying about the night.",
    "Player {k} has been too quiet, vote with me.",
    "I trust Player {k}; look elsewhere today.",
    "Player {k} defended a wolf yesterday.",
]


def untrained_adapter(params: Params) -> str:
    """A LoRA adapter on the Refiner's base with a zero update (PEFT's initialisation): the
    untrained Refiner, run as a trained one is."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from stackelberg.llm.embedded import EMBEDDED_MODELS, ensure_checkpoint

    name = params.models.refiner.model
    path = ensure_checkpoint(name) if name in EMBEDDED_MODELS else name
    base = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    folder = tempfile.mkdtemp(prefix="untrained-refiner-")
    config = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
    get_peft_model(base, config).save_pretrained(folder)
    return folder


def request(i: int) -> dict:
    context = {
        "game": "werewolf",
        "speaker": i % 6 + 1,
        "next_speaker": (i + 1) % 6 + 1,
        "draft": DRAFTS[i % len(DRAFTS)].format(k=(i + 3) % 7 + 1),
        "history": [f"Day 1: Player {(i + 2) % 7 + 1} says: I am a villager."],
    }
    return {"role": "user", "content": json.dumps(context)}


def timed(client: openai.OpenAI, i: int, max_tokens: int) -> float:
    start = time.perf_counter()
    client.chat.completions.create(
        model="refiner", messages=[request(i)], seed=i, max_tokens=max_tokens
    )
    return time.perf_counter() - start


def run(url: str, collector, clients: int, requests: int, max_tokens: int) -> dict:
    client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=3600)
    first_batch = len(collector.batch_sizes)
    start, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(clients) as pool:
        latencies = list(pool.map(lambda i: timed(client, i, max_tokens), range(requests)))
    seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    deciles = statistics.quantiles(latencies, n=10) if len(latencies) > 1 else latencies * 9
    return {
        "clients": clients,
        "requests": requests,
        "seconds": round(seconds, 2),
        "requests_per_s": round(requests / seconds, 3),
        "cpu_s": round(cpu_s, 1),
        "requests_per_cpu_s": round(requests / cpu_s, 3),
        "latency_p50_s": round(statistics.median(latencies), 2),
        "latency_p90_s": round(deciles[8], 2),
        "batch_sizes": collector.batch_sizes[first_batch:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--refiner", help="a trained adapter folder (default: untrained)")
    parser.add_argument("--params", help="the params file (default: the embedded model)")
    parser.add_argument("--max-tokens", type=int, default=40)
    args = parser.parse_args()
    params = (
        load_params(args.params)
        if args.params
        else Params(models={"refiner": {"model": "embedded"}})
    )
    adapter = args.refiner or untrained_adapter(params)
    service = load_service(adapter, params)
    try:
        with running(service, bind("127.0.0.1", 0), ServeLimits()) as (url, collector):
            timed(openai.OpenAI(base_url=url, api_key="unused"), 0, args.max_tokens)  # warm up
            alone = run(url, collector, 1, args.requests, args.max_tokens)
            print(json.dumps({"way": "one at a time", **alone}), flush=True)
            together = run(url, collector, args.clients, args.requests, args.max_tokens)
            speedup = {
                "speedup": round(alone["seconds"] / together["seconds"], 2),
                "speedup_cpu": round(alone["cpu_s"] / together["cpu_s"], 2),
            }
            print(json.dumps({"way": "concurrent", **together, **speedup}), flush=True)
    finally:
        service.close()


if __name__ == "__main__":
    main()
