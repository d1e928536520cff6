"""Benchmark: a trained LoRA adapter beside the players' int8 weights against merged in.

Run in a project after the pipeline (`make run`): with the embedded checkpoint (models/base)
loaded in ``--dtype`` as the players run it, each way loads a game's trained Refiner
(models/refiner/GAME) in a fresh process and reports the seconds it took, what it added to
the resident memory, and, merged, the share of the quantized weights the update changed and
its largest change in units of the int8 step (what rounding leaves of it). Memory is
reported as loaded and after freed heap pages go back to the system (``malloc_trim``).
One JSON line per way and repeat, alternating.

    python bench/adapter.py [--game werewolf] [--dtype int8] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import _project_root  # noqa: F401  (flows and stages importable)
import torch

from flows.graph import output

WAYS = ("merged", "beside")


def resident_mib() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 2**20


def rounded_away(base, merged, update) -> dict:
    """Over the adapted int8 layers: the share of weights whose int8 value the merge
    changed, and the largest update as a share of its layer's int8 step."""
    changed = total = 0
    largest = 0.0
    for name, module in base.named_modules():
        target = merged.get_submodule(name)
        if not name.endswith("_proj") or not callable(getattr(module, "weight", None)):
            continue
        before, after = module.weight(), target.weight()
        changed += int((before.int_repr() != after.int_repr()).sum())
        total += before.numel()
        largest = max(largest, update.get(name, 0.0) / before.q_scale())
    return {"int8_weights_changed": changed / total, "largest_update_in_int8_steps": largest}


def one(way: str, game: str, dtype: str) -> dict:
    from flows.context import return_freed_memory
    from stackelberg.llm.local.loading import load_model, lora_beside

    path, adapter, cpu = str(output("base_model")), str(output("grpo", game)), torch.device("cpu")
    _, players = load_model(path, "base", dtype, cpu, None)
    return_freed_memory()
    before = resident_mib()
    start = time.perf_counter()
    if way == "beside":
        lm = lora_beside(players, adapter)
    else:
        _, lm = load_model(path, "base", dtype, cpu, adapter)
    out = {
        "way": way,
        "game": game,
        "dtype": dtype,
        "seconds": round(time.perf_counter() - start, 2),
        "added_mib": round(resident_mib() - before, 1),
    }
    return_freed_memory()  # as the pipeline does after each stage's releases
    out["added_mib_trimmed"] = round(resident_mib() - before, 1)
    if way == "merged" and dtype == "int8":
        beside = lora_beside(players, adapter)
        update = {
            name.removesuffix(".base_layer"): float(
                (m.lora_B["default"].weight @ m.lora_A["default"].weight).abs().max()
                * m.scaling["default"]
            )
            for name, m in beside.named_modules()
            if hasattr(m, "lora_A")
        }
        out |= {k: round(v, 5) for k, v in rounded_away(players, lm, update).items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--game", default="werewolf")
    ap.add_argument("--dtype", default="int8", choices=["int8", "bfloat16", "float32"])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--one", choices=WAYS, help=argparse.SUPPRESS)  # a fresh process's way
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.game, args.dtype)))
        return
    adapter = output("grpo", args.game)
    if not (adapter / "adapter_config.json").exists():
        sys.exit(f"bench/adapter.py: no trained Refiner at {adapter}; run the pipeline first")
    for _ in range(args.repeats):
        for way in WAYS:
            cmd = [sys.executable, __file__, "--one", way, "--game", args.game]
            out = subprocess.run(
                [*cmd, "--dtype", args.dtype], capture_output=True, text=True, check=True
            )
            print(out.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
