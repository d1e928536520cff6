"""The ensemble follower: each member scores as one Measurer does, in its own window, and a
candidate's reward is the weighted mean of the members' rewards, each kept beside it."""

from __future__ import annotations

import json

import pytest

from stackelberg.agents.refiner import Candidate
from stackelberg.llm import LLMConfig
from stackelberg.persuasion.context import instance_view, speech_instances
from stackelberg.persuasion.measurer import (
    Ensemble,
    MeasurerMember,
    Member,
    ScoreSettings,
    ensemble_names,
    load_measurer,
    measure,
    measure_completions,
    measurer_backends,
)
from stackelberg.persuasion.reward import RewardConfig, ensemble_parts, measurer_reward


@pytest.fixture
def view(selfplay):
    """The werewolf speech with a follower that has the longest history."""
    rec, turns = selfplay("werewolf", [1])[0]
    rows = speech_instances(rec, turns, min_words=3)
    return instance_view(json.dumps(rec), max(rows, key=lambda r: r["event_index"]))


class Scorer:
    """A pretend follower: each desired response's token log-probability ``desired``, each
    undesired one's ``undesired``; one token per four characters, a window of its own."""

    def __init__(self, desired: float, undesired: float, context_window: int = 100_000):
        self.desired, self.undesired, self.context_window = desired, undesired, context_window
        self.contexts: list[str] = []

    def count_tokens(self, text) -> int:
        return len(text if isinstance(text, str) else json.dumps(text)) // 4 + 1

    def render_chat(self, messages, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def score_nested(self, context, candidates, responses, joiner=""):
        self.contexts.append(context)
        k = len(responses) // 2
        return [
            [[self.desired]] * k + [[self.undesired]] * (len(responses) - k) for _ in candidates
        ]


def test_the_ensemble_reward_is_the_hand_computed_weighted_mean(view):
    # member a: reward (-1) - (-3) = 2; member b: (-2) - (-2) = 0; weights 3:1
    ensemble = Ensemble(
        [Member("a", 3.0, Scorer(-1.0, -3.0)), Member("b", 1.0, Scorer(-2.0, -2.0))]
    )
    settings = ScoreSettings(max_penalty=0.0)
    parts, _ = measure(ensemble, view, ["I trust Player 2."], ["Yes."], ["No."], settings)
    [p] = parts
    assert p.reward == pytest.approx(0.75 * 2 + 0.25 * 0) == pytest.approx(1.5)
    assert p.member_rewards == (2.0, 0.0)
    assert p.positive == pytest.approx(0.75 * -1 + 0.25 * -2)
    assert p.pos_means == pytest.approx((-1.25,)) and p.neg_means == pytest.approx((-2.75,))
    assert ensemble_names(ensemble) == ["a", "b"]


def test_penalties_are_the_same_for_every_member_and_so_in_the_mean():
    cfg = RewardConfig(free_words=1, full_penalty_words=3, max_penalty=2.0, off_format_penalty=1.0)
    a = measurer_reward("one two three", [[-1.0]], [[-4.0]], cfg, in_format=False)
    b = measurer_reward("one two three", [[-3.0]], [[-2.0]], cfg, in_format=False)
    mean = ensemble_parts([a, b], [1.0, 1.0])
    assert (mean.length_penalty, mean.format_penalty) == (-2.0, -1.0)
    assert mean.reward == pytest.approx((a.reward + b.reward) / 2) == pytest.approx(-2.0)
    with pytest.raises(ValueError, match="positive weight"):
        ensemble_parts([a, b], [1.0, 0.0])


def test_each_member_fits_the_prompt_to_its_own_window(view):
    wide = Scorer(-1.0, -2.0)
    measure(wide, view, ["Hi."], ["Yes."], ["No."], ScoreSettings())
    # a window a little short of the whole prompt: the oldest lines go
    narrow = Scorer(-1.0, -2.0, context_window=wide.count_tokens(wide.contexts[0]) - 10)
    alone = [
        measure(s, view, ["Hi."], ["Yes."], ["No."], ScoreSettings())[1] for s in (wide, narrow)
    ]
    assert alone[0] == 0 < alone[1]  # the narrow member cuts history lines, the wide none
    ensemble = Ensemble([Member("wide", 1.0, wide), Member("narrow", 1.0, narrow)])
    _, cut = measure(ensemble, view, ["Hi."], ["Yes."], ["No."], ScoreSettings())
    assert cut == alone[1]  # the most any member cut
    assert len(wide.contexts[-1]) > len(narrow.contexts[-1])


def test_completions_score_alike_through_the_one_call(view):
    ensemble = Ensemble(
        [Member("a", 1.0, Scorer(-1.0, -3.0)), Member("b", 1.0, Scorer(-3.0, -1.0))]
    )
    cands = [Candidate("I trust Player 2.", "I trust Player 2.", True, True)]
    row = {"desired": ["Yes."], "undesired": ["No."]}
    measured = measure_completions(ensemble, row, view, cands, ScoreSettings(max_penalty=0.0))
    assert measured.parts[0].member_rewards == (2.0, -2.0) and measured.parts[0].reward == 0.0


def test_params_build_one_model_or_an_ensemble_of_named_members():
    loaded = []

    def load(config):
        loaded.append(config)
        return f"backend of {config.model}"

    assert load_measurer(LLMConfig(model="models/base"), load) == "backend of models/base"
    members = [MeasurerMember(model="models/base"), MeasurerMember(model="x/y", name="z", weight=2)]
    ensemble = load_measurer(members, load)
    assert ensemble.names == ["base", "z"] and [m.weight for m in ensemble.members] == [1.0, 2.0]
    assert type(loaded[-1]) is LLMConfig  # a member loads as a plain model config
    assert ensemble.member("z") == "backend of x/y"
    assert measurer_backends(ensemble) == ["backend of models/base", "backend of x/y"]
    with pytest.raises(KeyError, match="no ensemble member named 'w'"):
        ensemble.member("w")
