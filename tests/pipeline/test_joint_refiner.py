"""The joint Refiner's training data (grpo.joint, the stage grpo_joint) and the label stage's
two views (label.both_views), from the stages' own functions on scripted self-play of two
games in a scratch folder: no Prefect, no model (the Refiner's training is stopped where it
would start, with what it was handed)."""

from __future__ import annotations

import importlib
import json

import pytest

from flows import context
from flows.context import StageContext, stage_module
from flows.graph import ONCE
from stackelberg.datasets import read_dataset
from stackelberg.games import game_spec
from stackelberg.params import Params
from stackelberg.training.grpo_outputs import JOINT_GAMES

GAMES = ["werewolf", "onuw"]
PARAMS = {
    "games": GAMES,
    "selfplay": {"games": 4, "batch_games": 4},
    "select": {"instances": 6, "test_fraction": 0.5},
    "label": {"scheme": "scripted", "k": 2, "both_views": True},
    "grpo": {"joint": GAMES, "views": ["speaker_only"]},
}


def run_stage(stage: str, game: str, params: Params):
    """A stage's plan, work and finish in this process (flows.stage without Prefect)."""
    module = importlib.import_module(stage_module(stage))
    ctx = StageContext(stage, game, params)
    return module.finish(ctx, [module.work(ctx, item) for item in module.plan(ctx)])


class FakeBackend:
    """What building Refiner prompts and releasing models ask of a backend."""

    context_window = 4096
    prefix_store = None

    def count_tokens(self, prompt) -> int:
        return len(json.dumps(prompt)) // 4

    def clear_prefix_cache(self) -> None:
        pass


class Handed(Exception):
    """Raised in place of the training, holding what it was handed."""


@pytest.fixture(scope="module")
def labeled(tmp_path_factory):
    """Scripted self-play, instances and both views' intents of two games."""
    root = tmp_path_factory.mktemp("joint")
    params = Params(**PARAMS)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for game in GAMES:
            for stage in ("selfplay", "select", "label"):
                run_stage(stage, game, params)
    return root, params


@pytest.fixture
def in_project(labeled, monkeypatch):
    root, params = labeled
    monkeypatch.chdir(root)
    monkeypatch.setattr(context, "_LLMS", {})
    monkeypatch.setattr(context, "make_llm", lambda config: FakeBackend())
    return params


def test_the_label_stage_writes_both_views(in_project):
    for game in GAMES:
        df = read_dataset(f"data/intents/{game}.parquet", "intents")
        assert df.height and df["other_desired"].null_count() == 0
        assert all(len(x) == 2 for x in df["other_undesired"].to_list())
        # full information tells apart what the speaker's view cannot: the views differ
        assert (df["desired"] != df["other_desired"]).any()


def test_the_joint_refiner_trains_on_every_games_instances_with_its_game_named(
    in_project, monkeypatch
):
    grpo = importlib.import_module(stage_module("grpo_joint"))
    handed = {}

    def train_refiner(base, prompts, columns, reward_fn, settings, adapter_dir, **kwargs):
        handed.update(prompts=prompts, ids=columns["instance_id"], settings=settings, **kwargs)
        raise Handed

    monkeypatch.setattr(grpo, "train_refiner", train_refiner)
    ctx = StageContext("grpo_joint", ONCE, in_project)
    [item] = grpo.plan(ctx)
    train_ids = {
        game: set(
            read_dataset(f"data/intents/{game}.parquet", "intents")
            .filter(split="train")["instance_id"]
            .to_list()
        )
        for game in GAMES
    }
    assert set(item["ids"]) == train_ids["werewolf"] | train_ids["onuw"]
    with pytest.raises(Handed):
        grpo.train_game(ctx, item["ids"], ctx.path() / "scratch")
    assert sorted(handed["ids"]) == sorted(item["ids"])
    for iid, prompt in zip(handed["ids"], handed["prompts"], strict=True):
        game = iid.rsplit("-", 2)[0]
        assert f"You play {game_spec(game).title}." in prompt[0]["content"]
    # the shared grpo section, the one completion limit of every joint game
    assert handed["completion_limit"] == in_project.refiner_profile(None).token_limit


def test_without_joint_games_the_stage_leaves_a_folder_naming_none(in_project):
    params = in_project.model_copy(
        update={"grpo": in_project.grpo.model_copy(update={"joint": []})}
    )
    run_stage("grpo_joint", ONCE, params)
    out = StageContext("grpo_joint", ONCE, params).path()
    assert out.as_posix() == "models/refiner/joint"
    assert [p.name for p in out.iterdir()] == [JOINT_GAMES]
    assert json.loads((out / JOINT_GAMES).read_text()) == []


def test_a_refiner_of_the_other_view_reads_its_intents(in_project):
    grpo = importlib.import_module(stage_module("grpo"))
    ctx = StageContext("grpo", "werewolf", in_project)
    items = grpo.plan(ctx)
    assert [i.get("extra") for i in items] == [None, "speaker_only"]
    rows, _ = grpo.train_instances(ctx, items[1]["ids"], "speaker_only")
    on_file = {r["instance_id"]: r for r in read_dataset(ctx.path("label"), "intents").to_dicts()}
    for row in rows:
        assert row["desired"] == on_file[row["instance_id"]]["other_desired"]
        assert row["undesired"] == on_file[row["instance_id"]]["other_undesired"]
