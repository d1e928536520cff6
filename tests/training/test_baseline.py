"""The trained baselines (rl_ins's tactic policy, the strategist's value model, lspo's policy)
are one shape: each a ``TrainedBaseline`` with its stage, its params section, its route and
the shared settings keys, its model saved and read back through the shape. Their one stage
body writes the held-out judgement beside the model and logs the curve and the folder."""

from __future__ import annotations

import importlib
import io
import json
import pickle
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import torch

from stackelberg.agents.latent.cfr import LatentPolicy
from stackelberg.agents.latent.clusters import Strategy
from stackelberg.agents.lookahead.value import ValueModel
from stackelberg.agents.tactics.policy import TacticPolicy
from stackelberg.evaluation.routes import TRAINED_BASELINES
from stackelberg.evaluation.trained_baselines import HELD_OUT, HISTORY, BaselineStage
from stackelberg.games import ConfigError
from stackelberg.params import Params
from stackelberg.settings import Settings
from stackelberg.training.baseline import HeldOutPredictions, PairedWins, Trained, TrainedBaseline
from stackelberg.training.baseline_settings import EvalGames, GameOptions, Seed
from stackelberg.training.lspo import LSPO
from stackelberg.training.strategist import STRATEGIST
from stackelberg.training.tactics import TACTICS

BASELINES = (TACTICS, STRATEGIST, LSPO)


@pytest.mark.parametrize("baseline", BASELINES, ids=lambda b: b.name)
def test_each_trained_baseline_is_the_shape_with_its_stage_section_and_route(baseline):
    assert isinstance(baseline, TrainedBaseline)
    stage = importlib.import_module(f"stages.{baseline.name}")
    assert stage.STAGE.baseline is baseline and stage.GAMES == (baseline.game,)
    assert TRAINED_BASELINES[baseline.name] is baseline
    assert Params.model_fields[baseline.name].annotation is baseline.settings_class
    fields = baseline.settings_class.model_fields
    for key, shared in (("eval_games", EvalGames), ("seed", Seed), ("options", GameOptions)):
        assert fields[key].description == shared.__metadata__[0].description, key


def tactic_weights(policy: TacticPolicy) -> bytes:
    buffer = io.BytesIO()
    torch.save(policy.state_dict(), buffer)
    return buffer.getvalue()


SEER = Strategy("seer", 0, "accuse", 1.0, ("Player 3 is a werewolf.",))
#: per baseline: a model as its ``Trained.model`` holds it, and what its ``load`` must return
MODELS = {
    "tactics": (
        {"hidden": 4, "weights": tactic_weights(policy := TacticPolicy(hidden=4))},
        policy,
    ),
    "strategist": (
        {"weights": {"good": [0.5] * 3, "evil": [-0.5] * 3}, "rates": {"good": 0.4}},
        ValueModel({"good": [0.5] * 3, "evil": [-0.5] * 3}),
    ),
    "lspo": (
        {"strategies": {"seer": [SEER.to_dict()]}, "table": {"seer|1": [1.0]}},
        LatentPolicy({"seer": (SEER,)}, {"seer|1": [1.0]}),
    ),
}


def same_model(a, b) -> bool:
    if isinstance(a, TacticPolicy):
        pairs = zip(a.state_dict().values(), b.state_dict().values(), strict=True)
        return a.hidden == b.hidden and all(torch.equal(x, y) for x, y in pairs)
    if isinstance(a, ValueModel):
        return {c: w.tolist() for c, w in a.weights.items()} == {
            c: w.tolist() for c, w in b.weights.items()
        }
    return a == b


@pytest.mark.parametrize("baseline", BASELINES, ids=lambda b: b.name)
def test_a_model_saved_through_the_shape_loads_back_through_it(baseline, tmp_path):
    model, expected = MODELS[baseline.name]
    folder = baseline.save(model, tmp_path / baseline.name, baseline.game, {"seed": 7})
    loaded = baseline.load(folder)
    assert same_model(loaded, expected) and same_model(expected, loaded)
    with pytest.raises(ConfigError):
        baseline.load(tmp_path / "empty")


class StubSettings(Settings):
    eval_games: EvalGames = 4
    seed: Seed = 0
    options: GameOptions


class Stub(TrainedBaseline):
    """A baseline that trains nothing: it hands the stage the ``Trained`` it was given."""

    name, game, settings_class, verb = "stub", "werewolf", StubSettings, "solve"

    def __init__(self, trained: Trained) -> None:
        self.trained = trained

    def train(self, settings, path_of) -> Trained:
        return self.trained

    def save(self, model, folder: Path, game: str, settings: dict) -> Path:
        folder.mkdir(parents=True)
        (folder / "model.json").write_text(json.dumps({"model": model, "game": game}))
        return folder

    def load(self, folder):
        return json.loads((Path(folder) / "model.json").read_text())["model"]


@pytest.fixture
def logged(monkeypatch):
    """What the stage logs to MLflow: (kind, what, where) per call."""
    calls = []
    mlflow = ModuleType("mlflow")
    mlflow.log_metrics = lambda metrics, step: calls.append(("metrics", metrics, step))
    mlflow.log_artifacts = lambda folder, path: calls.append(("artifacts", folder, path))
    monkeypatch.setitem(sys.modules, "mlflow", mlflow)
    return calls


def run_stage(baseline: Stub, folder: Path) -> dict:
    stage = BaselineStage(baseline)
    ctx = SimpleNamespace(game="werewolf", section=StubSettings(), path=lambda stage=None: folder)
    items = stage.plan(ctx)
    assert items == [{"label": "solve"}]
    results = pickle.loads(pickle.dumps([stage.work(ctx, item) for item in items]))  # persisted
    return stage.finish(ctx, results)


def test_the_stage_body_writes_the_curve_and_the_paired_win_rates_beside_the_model(
    tmp_path, logged
):
    wins = PairedWins(("uniform", "solved"), [0, 1, 0, 0.5], [1, 1, 0, 1])
    curve = [{"games": 2, "win_rate": 0.5}, {"games": 4, "win_rate": 1.0}]
    trained = Trained({"table": [1]}, wins, curve, {"information_sets": 3})
    metrics = run_stage(Stub(trained), tmp_path / "out")
    assert list(metrics)[:3] == ["information_sets", "win_rate_uniform", "win_rate_solved"]
    assert metrics["win_rate_gain"] == pytest.approx(0.375)
    written = json.loads((tmp_path / "out" / HISTORY).read_text())
    assert written["history"] == curve and written["held_out"]["difference"]["estimate"] > 0
    assert not (tmp_path / "out" / HELD_OUT).exists()
    assert logged == [
        ("metrics", {"solve/games": 2.0, "solve/win_rate": 0.5}, 1),
        ("metrics", {"solve/games": 4.0, "solve/win_rate": 1.0}, 2),
        ("artifacts", str(tmp_path / "out"), "stub"),
    ]
    assert Stub(trained).load(tmp_path / "out") == {"table": [1]}


def test_a_model_fitted_at_once_gets_its_predictions_judged_and_no_curve(tmp_path, logged):
    games = [(1.0, 0.5, 0.3, 0.6), (0.5, 0.5, 0.4, 0.7)]
    metrics = run_stage(Stub(Trained({}, HeldOutPredictions(games))), tmp_path / "out")
    assert metrics["held_out_log_loss_gain"] == pytest.approx(0.3)
    assert json.loads((tmp_path / "out" / HELD_OUT).read_text())["games"] == 2
    assert not (tmp_path / "out" / HISTORY).exists()
    assert logged == [("artifacts", str(tmp_path / "out"), "stub")]


def test_the_stage_refuses_a_game_its_baseline_is_not_trained_for(tmp_path):
    stage = BaselineStage(Stub(Trained({}, HeldOutPredictions([]))))
    with pytest.raises(ConfigError, match=r"^stub runs for werewolf only, not onuw$"):
        stage.plan(SimpleNamespace(game="onuw"))
