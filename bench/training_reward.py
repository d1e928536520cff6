"""GRPO's training reward, read again from a pipeline workspace's train histories.

    python bench/training_reward.py --workspace runs/study [--games onuw,sotopia]

For each game's trained Refiner (models/refiner/G/train_history.json) and its untrained
baselines (the score stage's data), prints one JSON line with metrics.json's ``training``
entry as the evaluate stage computes it today: the window rise, the gain over each prompt's
untrained baseline, and, for a run of more than one epoch, each revisited prompt's last
visit minus its first. A run evaluated before a measure existed gets it here without
rerunning anything.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import _project_root  # noqa: F401  (flows and stages importable)

from flows import graph
from stackelberg.datasets import read_dataset
from stackelberg.evaluation.game_outputs import training_curves
from stackelberg.evaluation.training_curve import training_summary
from stackelberg.params import ParamsError, load_params
from stackelberg.training.grpo_outputs import TRAIN_HISTORY


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default=".", help="a pipeline workspace (runs/study)")
    parser.add_argument("--games", help="comma-separated (default: the params' games)")
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    args = parser.parse_args()
    os.chdir(Path(args.workspace))
    try:
        games = args.games.split(",") if args.games else load_params("params.yaml").games
    except ParamsError as err:
        sys.exit(f"training_reward: {err}")
    for game in games:
        history_path = graph.output("grpo", game) / TRAIN_HISTORY
        if not history_path.exists():
            sys.exit(f"training_reward: {history_path} not found (run grpo@{game} first)")
        history = json.loads(history_path.read_text())
        scores = lambda: read_dataset(graph.output("score", game), "scores")  # noqa: E731, B023
        summary = training_summary(**training_curves(history, scores), resamples=args.bootstrap)
        print(json.dumps({"game": game, "training": summary}))


if __name__ == "__main__":
    main()
