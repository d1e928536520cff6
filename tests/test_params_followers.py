"""Params of the ensemble Measurer, its single-member Refiners and the behaviour check:
configs/followers.yaml loads; what cannot work is refused when params load, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from stackelberg.params import ParamsError, load_params

ROOT = Path(__file__).resolve().parents[1]
ENSEMBLE = (
    "models:\n  measurer:\n    - {name: small, model: models/base}\n"
    "    - {name: other, model: embedded-gemma3, weight: 2}\n"
)


def test_the_followers_config_loads_an_ensemble_and_a_refiner_against_one_member():
    params = load_params(ROOT / "configs/followers.yaml")
    measurer = params.models.measurer
    assert [(m.name, m.weight) for m in measurer] == [("smollm2", 1.0), ("gemma3", 1.0)]
    assert params.grpo.member_refiners == ["smollm2"]
    assert params.grpo.extra_refiners() == ["vs_smollm2"]
    unseen = params.models.unseen_follower
    assert (unseen.dtype, unseen.chat_template) == ("int8", False)
    assert params.evaluate.behaviour.responses >= 1


def load(tmp_path, text: str):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    return load_params(path)


@pytest.mark.parametrize(
    "text, words",
    [
        (
            "models:\n  measurer:\n    - {model: models/base}\n"
            "    - {backend: anthropic, model: claude-3-5-haiku-latest}\n",
            "models.measurer[1]: the Measurer scores responses by their log-probabilities",
        ),
        ("models:\n  measurer:\n    - {model: models/base, weight: 0}\n", "greater than 0"),
        ("models:\n  measurer:\n    - {model: models/base, weight: -1}\n", "greater than 0"),
        ("models:\n  measurer: []\n", "an empty list of models"),
        (
            "models:\n  measurer:\n    - {model: models/base}\n    - {model: models/base, dtype: int8}\n",
            "two members named 'base'",
        ),
        (
            ENSEMBLE + "grpo: {member_refiners: [third]}\n",
            "'third' is no member of models.measurer",
        ),
        ("grpo: {member_refiners: [base]}\n", "it is one model"),
        (ENSEMBLE + "grpo: {member_refiners: [small, small]}\n", "each member once"),
        (
            "evaluate: {behaviour: {responses: 2}}\n",
            "the unseen follower responds, but models.unseen_follower is null",
        ),
        ("evaluate: {behaviour: {followers: [player]}}\n", "evaluate.behaviour.followers"),
        (
            "models: {unseen_follower: {backend: openai, model: m, chat_template: false}}\n",
            "chat_template: false is for the local backend",
        ),
    ],
)
def test_what_cannot_work_is_refused_in_one_line(tmp_path, text, words):
    with pytest.raises(ParamsError) as err:
        load(tmp_path, text)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_an_ensemble_member_refiner_and_measurer_responses_load(tmp_path):
    params = load(
        tmp_path,
        ENSEMBLE + "grpo: {member_refiners: [small]}\n"
        "evaluate: {behaviour: {responses: 1, followers: [measurer]}}\n",
    )
    assert params.grpo.extra_refiners() == ["vs_small"]
    assert params.evaluate.behaviour.followers == ["measurer"]
