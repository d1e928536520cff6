"""The pipeline against the exact follower (``models.measurer: {exact: follower}``): Werewolf
at a micro scale, scored and trained against the scripted follower's own distribution, then
evaluated against it and in a tournament of the players it models (``scripted_sampled``)."""

from __future__ import annotations

import json
import math
import sys

import polars as pl
import pytest
import yaml
from project import ROOT, make_project, sh

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

MICRO = {
    "games": ["werewolf"],
    "models": {"measurer": {"exact": "follower"}, "unseen_follower": None},
    "selfplay": {"games": 4, "batch_games": 4, "agents": "scripted_sampled"},
    "select": {"instances": 6, "test_fraction": 0.5},
    "label": {"k": 2, "scheme": "scripted"},
    "sample": {"n": 2, "max_new_tokens": 12, "batch_instances": 3, "output_format": "addition"},
    # GRPO goes on from a warm start on draws from the grammar's helping additions (one
    # short fit), as configs/persuasion.yaml's
    "warm_start": {
        "source": "grammar",
        "targets": "helping",
        "draws": 2,
        "epochs": 1.0,
        "batch_size": 4,
    },
    "grpo": {"num_generations": 2, "prompts_per_step": 1, "micro_batch": 1, "lora_r": 4},
    "evaluate": {
        "n": 2,
        "best_of": [2],
        "bootstrap": 200,
        "conditions": ["scripted_sampled", "refiner+scripted_sampled"],
        "opponent": "scripted_sampled",
        "tournament_games": 2,
    },
}


def test_the_pipeline_scores_trains_and_evaluates_against_the_exact_follower(tmp_path):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for key, value in MICRO.items():
        params[key] = {**params[key], **value} if isinstance(value, dict) else value
    params["game_overrides"] = {"werewolf": params["game_overrides"]["werewolf"]}
    root = tmp_path / "exact"
    env = make_project(root, yaml.safe_dump(params, sort_keys=False))
    sh([sys.executable, "-m", "flows.pipeline", "evaluate@werewolf"], root, env, 1100)
    warm = root / "models/warm_start/werewolf"
    info = json.loads((warm / "warm_start.json").read_text())
    assert info["source"] == "grammar" and info["instances"] >= 1 and info["steps"] >= 1
    assert (info["targets"], info["chats"]) == ("helping", 2 * info["instances"])
    assert json.loads((warm / "adapter_config.json").read_text())["r"] == 4  # GRPO's rank
    scores = pl.read_parquet(root / "data/scores/werewolf.parquet")
    assert scores.height > 0 and all(math.isfinite(r) for r in scores["reward"].to_list())
    metrics = json.loads((root / "reports/werewolf/metrics.json").read_text())
    truth = metrics["held_out"]["ground_truth"]
    assert truth["headroom"]["n"] >= 1 and truth["headroom"]["estimate"] >= 0
    # the Measurer is the exact follower: its scores are the exact ones, not held against
    # themselves
    assert truth["validity"] == {}
    after = truth["refiners"]["after"]
    assert after["gain"]["n"] == truth["headroom"]["n"]
    assert "refiner+scripted_sampled" in metrics["conditions"]
    report = sh(["stackelberg", "report", "--markdown"], root, env).stdout
    assert "Stackelberg headroom" in report
