"""The study (configs/study.yaml) at a micro scale: its scale keys shrunk, its features kept
(the ablation's Refiners, best of n, the unseen follower), one game through the
evaluate stage and the report's tables, in a workspace made as `make study` makes it."""

from __future__ import annotations

import json
import sys

import pytest
import yaml
from project import ROOT, make_project, sh

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

#: the scale keys of the study, shrunk; everything else is the study's own
MICRO = {
    "selfplay": {"games": 6, "batch_games": 6},
    "select": {"instances": 6, "test_fraction": 0.5},
    "label": {"k": 1},
    "sample": {"n": 2, "max_new_tokens": 12, "batch_instances": 3},
    "score": {"batch_instances": 3},
    "grpo": {"num_generations": 2, "prompts_per_step": 1, "micro_batch": 1, "lora_r": 4},
    "evaluate": {"n": 1, "best_of": [1, 2], "bootstrap": 200},
    "tactics": {"episodes": 200, "eval_games": 20},
    "strategist": {"games": 60, "eval_games": 20},
    "lspo": {"candidate_games": 10, "iterations": 200, "eval_games": 20},
}


def shrunk(params: dict, micro: dict) -> dict:
    """``params`` with ``micro``'s keys put in, section by section."""
    return {k: ({**v, **micro[k]} if k in micro else v) for k, v in params.items()}


def test_the_study_runs_its_features_at_a_micro_scale(tmp_path):
    study = yaml.safe_load((ROOT / "configs/study.yaml").read_text())
    params = shrunk(study, MICRO)
    assert params["game_overrides"]["werewolf"]["grpo"]["ablations"] == ["pos_only", "neg_only"]
    root = tmp_path / "study"
    env = make_project(root, yaml.safe_dump(params, sort_keys=False))
    sh([sys.executable, "-m", "flows.pipeline", "evaluate@werewolf"], root, env, 1400)
    metrics = json.loads((root / "reports/werewolf/metrics.json").read_text())
    held = metrics["held_out"]
    assert set(held["best_of"]) == {"best_of_1", "best_of_2", "trained"}
    assert held["best_of"]["best_of_2"]["scorings_per_speech"] == 2
    assert {"before", "after", "pos_only", "neg_only"} <= set(held["terms"])
    assert held["unseen"]["model"] == study["models"]["unseen_follower"]["model"]
    assert held["unseen"]["diff"]["n"] == metrics["reward"]["diff"]["n"] >= 1
    assert metrics["training"]["reward_rise"]["steps"] >= 1
    for terms in ("pos_only", "neg_only"):
        assert (root / f"models/refiner/werewolf/extra/{terms}/adapter_config.json").exists()
    report = sh(["stackelberg", "report", "--markdown"], root, env).stdout
    assert "Best of n" in report and "Reward ablation on held-out instances" in report
