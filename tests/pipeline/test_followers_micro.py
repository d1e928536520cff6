"""configs/followers.yaml at a micro scale: an ensemble Measurer (SmolLM2 and Gemma 3), a
Refiner against it and one against SmolLM2 alone, the third follower's scores and its judged
responses, through the evaluate stage and the report, in a workspace as `make followers`
makes it."""

from __future__ import annotations

import json
import sys

import polars as pl
import pytest
import yaml
from project import ROOT, make_project, sh
from test_study_micro import MICRO as STUDY_MICRO
from test_study_micro import shrunk

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

#: the study's micro scale, with the followers' own GRPO epochs and behaviour check shrunk
MICRO = {
    **STUDY_MICRO,
    "grpo": {**STUDY_MICRO["grpo"], "epochs": 1.0},
    "evaluate": {
        "n": 1,
        "bootstrap": 200,
        "behaviour": {"responses": 1, "followers": ["unseen"], "speech_tokens": 8},
    },
}


def test_ensemble_against_one_member_under_a_third_follower_at_a_micro_scale(tmp_path):
    config = yaml.safe_load((ROOT / "configs/followers.yaml").read_text())
    root = tmp_path / "followers"
    env = make_project(root, yaml.safe_dump(shrunk(config, MICRO), sort_keys=False))
    sh([sys.executable, "-m", "flows.pipeline", "evaluate@werewolf"], root, env, 1400)
    scores = pl.read_parquet(root / "data/scores/werewolf.parquet")
    assert set(map(tuple, scores["members"].to_list())) == {("smollm2", "gemma3")}
    for row in scores.iter_rows(named=True):  # equal weights: the reward is the plain mean
        assert row["reward"] == pytest.approx(sum(row["member_rewards"]) / 2)
    refiner = root / "models/refiner/werewolf"
    history = json.loads((refiner / "train_history.json").read_text())["history"]
    assert {"member_reward/smollm2", "member_reward/gemma3"} <= set(history[0])
    single = json.loads((refiner / "extra/vs_smollm2/train_history.json").read_text())
    assert not any(k.startswith("member_reward/") for k in single["history"][0])  # one model
    held = json.loads((root / "reports/werewolf/metrics.json").read_text())["held_out"]
    n = held["n_instances"]
    cells = held["ensemble"]["refiners"]
    assert set(cells) == {"before", "after", "vs_smollm2"}
    assert set(cells["vs_smollm2"]) == {"ensemble", "smollm2", "gemma3", "unseen"}
    assert held["ensemble"]["diff"]["vs_smollm2"]["unseen"]["n"] == n >= 1
    responses = held["behaviour"]["unseen"]["refiners"]
    assert set(responses) == {"before", "after", "vs_smollm2"}
    assert all(r["responses"] == n and r["rate"]["n"] == n for r in responses.values())
    report = sh(["stackelberg", "report", "--markdown"], root, env).stdout
    assert "Ensemble vs single Measurer" in report and "Behaviour: the follower's" in report
