"""Benchmark: the Measurer's rewards and time in float32 against another dtype.

Run in a project after the pipeline (`make run`): it scores the score stage's candidates of
every game (the train instances, base utterance included) with the embedded checkpoint
(models/base) loaded in float32 and in ``--dtype``, and compares the rewards: overall, and
within an instance (each reward minus its instance's mean: what GRPO's group advantages and
the paired held-out comparison see). Response cache off; one JSON line.

    python bench/measurer_dtype.py [--dtype bfloat16] [--model embedded-gemma3]

``--model``: another follower model (the study's unseen follower, ``embedded-gemma3``)
instead of the project's checkpoint.
"""

from __future__ import annotations

import argparse
import json
import time

import _project_root  # noqa: F401  (flows and stages importable)
import numpy as np
import polars as pl

from flows.graph import output
from stackelberg.datasets import of_split, read_dataset
from stackelberg.llm import make_llm
from stackelberg.params import load_params
from stackelberg.persuasion.context import instance_rows
from stackelberg.persuasion.measurer import measure


def rewards(dtype: str, params, model: str | None = None) -> tuple[list[list[float]], float]:
    """Each instance's candidate rewards, and the seconds the Measurer took (``model``: the
    follower model, by default the project's checkpoint)."""
    window = params.models.measurer.context_window
    llm = make_llm(
        backend="local",
        model=model or str(output("base_model")),
        dtype=dtype,
        context_window=window,
        cache="off",
    )
    out, seconds = [], 0.0
    for game in params.games:
        score = params.for_game("score", game)
        room = params.refiner_profile(game).token_limit
        intents, selfplay, sample = (
            str(output(stage, game)) for stage in ("label", "selfplay", "sample")
        )
        train = of_split(read_dataset(intents, "intents"), "train")
        rows, views = instance_rows(intents, "intents", selfplay, train["instance_id"].to_list())
        cands = read_dataset(sample, "candidates")
        for row, view in zip(rows, views, strict=True):
            mine = cands.filter(pl.col("instance_id") == row["instance_id"])
            texts = mine.sort("candidate_index")["candidate"].to_list()
            if not texts:
                continue
            start = time.perf_counter()
            parts, _ = measure(llm, view, texts, row["desired"], row["undesired"], score, room)
            seconds += time.perf_counter() - start
            out.append([p.reward for p in parts])
    return out, seconds


def ranks(x: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--model", help="another follower model (e.g. embedded-gemma3)")
    args = parser.parse_args()
    params = load_params("params.yaml")
    full, full_s = rewards("float32", params, args.model)
    other, other_s = rewards(args.dtype, params, args.model)
    a, b = np.concatenate(full), np.concatenate(other)
    within_a = np.concatenate([np.array(r) - np.mean(r) for r in full])
    within_b = np.concatenate([np.array(r) - np.mean(r) for r in other])
    print(
        json.dumps(
            {
                "model": args.model or "models/base",
                "dtype": args.dtype,
                "instances": len(full),
                "candidates": int(a.size),
                "float32_s": round(full_s, 1),
                f"{args.dtype}_s": round(other_s, 1),
                "speedup": round(full_s / other_s, 2),
                "mean_abs_diff": round(float(np.abs(a - b).mean()), 4),
                "max_abs_diff": round(float(np.abs(a - b).max()), 4),
                "spearman": round(float(np.corrcoef(ranks(a), ranks(b))[0, 1]), 4),
                "reward_sd": round(float(a.std()), 4),
                "within_instance_corr": round(float(np.corrcoef(within_a, within_b)[0, 1]), 4),
                "within_instance_sd": round(float(within_a.std()), 4),
                "within_instance_max_abs_diff": round(float(np.abs(within_a - within_b).max()), 4),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
