"""Which split each stage works on: sample, score and GRPO the train instances; the
evaluate stage's held-out reward the test instances (sampled and scored there, before and
after training), so no stage samples the held-out split twice."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from stackelberg import datasets
from stages import grpo, sample, score

INTENTS = pl.DataFrame(
    {
        "instance_id": ["werewolf-1-4", "werewolf-2-7", "werewolf-3-2", "werewolf-4-9"],
        "split": ["train", "test", "train", "test"],
    }
)


@pytest.mark.parametrize("stage", [sample, score, grpo])
def test_sample_score_and_grpo_plan_the_train_split_only(monkeypatch, stage):
    monkeypatch.setattr(datasets, "read_dataset", lambda path, name: INTENTS)
    ctx = SimpleNamespace(
        stage=stage.__name__.rsplit(".", 1)[-1],
        game="werewolf",
        path=lambda s=None: Path(s or "x"),
        section=SimpleNamespace(batch_instances=1, ablations=[], views=[], member_refiners=[]),
    )
    ids = [i for item in stage.plan(ctx) for i in item["ids"]]
    assert ids == ["werewolf-1-4", "werewolf-3-2"]


def test_grpo_trains_each_extra_refiner_on_the_same_instances(monkeypatch):
    monkeypatch.setattr(datasets, "read_dataset", lambda path, name: INTENTS)
    section = SimpleNamespace(
        ablations=["pos_only", "neg_only"], views=["speaker_only"], member_refiners=["small"]
    )
    ctx = SimpleNamespace(
        stage="grpo", game="werewolf", path=lambda s=None: Path(s or "x"), section=section
    )
    items = grpo.plan(ctx)
    assert [item.get("extra") for item in items] == [
        None,
        "pos_only",
        "neg_only",
        "speaker_only",
        "vs_small",
    ]
    assert items[3]["label"] == "train on the speaker_only intents"
    assert items[4]["member"] == "small"
    assert all(item["ids"] == ["werewolf-1-4", "werewolf-3-2"] for item in items)
