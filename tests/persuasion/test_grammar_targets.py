"""The warm start's targets: the grammar completion the Measurer rewards most, written in the
Refiner's output format, and scored by the reward GRPO trains on."""

from __future__ import annotations

import json

import pytest

from stackelberg.agents import make_agent
from stackelberg.agents.refiner import RefinerProfile, RefinerStyle
from stackelberg.agents.runner import Table, play_tables
from stackelberg.agents.scripted import SAMPLED_KIND
from stackelberg.games import make_game
from stackelberg.persuasion.context import instance_view, speech_instances
from stackelberg.persuasion.exact_follower import ExactFollower, exact_parts, speaker_sentences
from stackelberg.persuasion.grammar_targets import grammar_candidates, grammar_targets
from stackelberg.persuasion.measurer import ScoreSettings
from stackelberg.persuasion.truth import scripted_intents


def _labeled(game_name: str, seed: int, limit: int) -> tuple[list[dict], list]:
    """Intents rows and views of the first ``limit`` labeled speech turns of one
    ``scripted_sampled`` game, labeled from the speaker's own view."""
    probe = make_game(game_name, {})
    probe.reset(seed)
    table = Table(
        make_game(game_name, {}), [make_agent(SAMPLED_KIND, game_name) for _ in probe.players], seed
    )
    record = play_tables([table])[0]
    rows, views = [], []
    for row in speech_instances(record, table.speech_turns, 3):
        view = instance_view(json.dumps(record), row)
        desired, undesired = scripted_intents(view, 3, False, True, row["seed"])
        if desired and undesired:
            rows.append({"desired": desired, "undesired": undesired})
            views.append(view)
    return rows[:limit], views[:limit]


def _profile(output_format: str) -> RefinerProfile:
    return RefinerProfile(RefinerStyle(output_format=output_format), 256, 0.7, 0.9)


@pytest.mark.parametrize("game_name", ["werewolf", "onuw"])
def test_an_addition_target_is_the_best_sentence_after_the_planned_speech(game_name):
    rows, views = _labeled(game_name, 1, 4)
    assert views
    follower, score = ExactFollower(), ScoreSettings()
    targets = [ts[0] for ts in grammar_targets(follower, rows, views, _profile("addition"), score)]
    for row, view, target in zip(rows, views, targets, strict=True):
        base = view.base_utterance
        sentences = [base, *(s for s in speaker_sentences(view) if s != base)]
        parts = exact_parts(
            follower,
            view,
            [f"{base} {s}" for s in sentences],
            row["desired"],
            row["undesired"],
            score,
        )
        rewards = [p.reward for p in parts]
        assert target.candidates == len(sentences)
        assert target.completion in sentences
        assert target.reward == pytest.approx(max(rewards))
        assert target.base_reward == pytest.approx(rewards[0])  # the planned speech said again
        assert target.reward >= target.base_reward


def test_a_speech_target_replaces_the_planned_speech():
    rows, views = _labeled("werewolf", 2, 2)
    candidates = grammar_candidates(views[0], "speech")
    assert candidates[0].utterance == views[0].base_utterance
    assert all(c.raw == c.utterance and c.in_format for c in candidates)
    added = grammar_candidates(views[0], "addition")
    assert [c.utterance for c in added[1:]] == [
        f"{views[0].base_utterance} {c.raw}" for c in candidates[1:]
    ]
    [[target]] = grammar_targets(
        ExactFollower(), rows[:1], views[:1], _profile("speech"), ScoreSettings()
    )
    assert target.completion in {c.raw for c in candidates}


def test_a_format_with_no_grammar_completion_is_refused():
    _, views = _labeled("werewolf", 2, 1)
    with pytest.raises(ValueError, match="addition or speech, not 'analysis'"):
        grammar_candidates(views[0], "analysis")
    with pytest.raises(ValueError, match="not 'analysis'"):
        grammar_targets(ExactFollower(), [{}], [views[0]], _profile("analysis"), ScoreSettings())


def test_helping_targets_are_drawn_from_the_sentences_that_beat_the_planned_speech():
    """``helping``: each draw is a sentence rewarded above the planned speech's words (the
    planned words themselves where none is), the draws replay by seed, and ``best`` gives
    the best sentence as many times as asked."""
    rows, views = _labeled("onuw", 1, 6)
    follower, score, profile = ExactFollower(), ScoreSettings(), _profile("addition")
    helping = grammar_targets(follower, rows, views, profile, score, "helping", 16, seed=3)
    assert helping == grammar_targets(follower, rows, views, profile, score, "helping", 16, seed=3)
    best = grammar_targets(follower, rows, views, profile, score, "best", 2)
    spread = False
    for view, draws, (top, again) in zip(views, helping, best, strict=True):
        assert len(draws) == 16 and top == again
        if draws[0].helping == 0:
            assert {d.completion for d in draws} == {view.base_utterance}
            continue
        assert all(d.reward > d.base_reward for d in draws)
        assert top.reward >= max(d.reward for d in draws)
        spread |= len({d.completion for d in draws}) > 1
    assert spread, "no instance drew more than one sentence: nothing tests the weights"
    with pytest.raises(ValueError, match="best or helping, not 'all'"):
        grammar_targets(follower, rows, views, profile, score, "all")
