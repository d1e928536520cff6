"""Params files: the shipped ones validate; a bad key or value is one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from stackelberg.params import ParamsError, load_params

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "path", ["params.yaml", "configs/paper.yaml", "tests/pipeline/micro_params.yaml"]
)
def test_shipped_params_validate(path):
    params = load_params(ROOT / path)
    assert params.games == ["werewolf", "avalon", "onuw"]


def test_paper_scale_is_the_papers():
    p = load_params(ROOT / "configs/paper.yaml")
    assert (p.selfplay.games, p.select.instances, p.label.k, p.sample.n) == (500, 4000, 3, 8)
    assert (p.grpo.num_generations, p.grpo.epsilon, p.grpo.beta, p.grpo.learning_rate) == (
        8,
        0.2,
        0.04,
        1e-6,
    )
    assert (p.grpo.epochs, p.grpo.lora_r, p.grpo.loss_type) == (3.0, 16, "grpo")
    assert p.models.refiner.model == "Qwen/Qwen2.5-7B-Instruct"
    assert p.models.measurer.backend == "openai" and "72B" in p.models.measurer.model


@pytest.mark.parametrize(
    "text, words",
    [
        ("grpo: {learnin_rate: 0.1}\n", "grpo.learnin_rate"),
        ("grpo: {learning_rate: fast}\n", "grpo.learning_rate"),
        ("score: {variant: both}\n", "score.variant"),
        ("models: {measurer: {backend: gpt}}\n", "models.measurer.backend"),
        ("game_overrides: {werewolf: {grpo: {beta: -1}}}\n", "game_overrides.werewolf.grpo"),
        ("game_overrides: {werewolf: {training: {}}}\n", "training"),
        ("games: [chess]\n", "games.0"),
        ("grpo: [1, 2\n", "not valid YAML"),
    ],
)
def test_bad_params_are_one_line(tmp_path, text, words):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError) as err:
        load_params(path)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_per_game_overrides_apply_to_one_game(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("game_overrides: {avalon: {grpo: {learning_rate: 0.5}}}\n")
    p = load_params(path)
    assert p.for_game("grpo", "avalon").learning_rate == 0.5
    assert p.for_game("grpo", "onuw").learning_rate == p.grpo.learning_rate
