"""The held-out reward's candidates: the untrained Refiner samples a pool for best-of-k, its
first n are the "before" group, the variants' Refiners are kept apart, and every Refiner
samples on the same seeds, apart from the sample stage's."""

from __future__ import annotations

from types import SimpleNamespace

from stackelberg.evaluation import held_out_scoring
from stackelberg.evaluation.held_out_scoring import (
    CANDIDATE_SEED_STRIDE,
    candidate_seeds,
    sample_held_out,
)
from stackelberg.persuasion.candidates import Candidate, SampleSettings


def test_each_refiner_samples_on_the_same_seeds_and_the_pool_serves_best_of(monkeypatch):
    calls = []

    def sample_candidates(llm, views, settings, seeds):
        calls.append((llm, settings.n, list(seeds)))
        # every Refiner's candidates parse but the untrained one's beyond the first two
        return [
            [
                Candidate(f"{llm} {j}", f"{llm} {j}", j < 2 or llm != "untrained", True)
                for j in range(settings.n)
            ]
            for _ in views
        ]

    monkeypatch.setattr(held_out_scoring, "sample_candidates", sample_candidates)
    refiners = {"pool": "untrained", "after": "trained", "pos_only": "variant"}
    rows = [{"instance_id": "werewolf-1-5"}, {"instance_id": "werewolf-1-9"}]
    sampled = sample_held_out(
        lambda config: config,
        refiners,
        ["pos_only"],
        rows,
        ["view 1", "view 2"],
        SampleSettings(n=2, max_new_tokens=24),
        [1, 3],
        [7, 8],
    )
    assert calls == [("untrained", 3, [7, 8]), ("trained", 2, [7, 8]), ("variant", 2, [7, 8])]
    assert [len(c) for c in sampled["pool"]] == [3, 3] and list(sampled["variants"]) == ["pos_only"]
    assert sampled["room"] == 24 and sampled["rows"] == rows
    # the "before" group: the pool's first n per instance, which all parsed
    assert sampled["before_outputs"] == {"completions": 4, "ended_rate": 1.0, "parse_rate": 1.0}
    assert sampled["after_outputs"] == {"completions": 4, "ended_rate": 1.0, "parse_rate": 1.0}


def test_candidate_seeds_move_with_the_evaluate_seed():
    assert candidate_seeds([10, 20], 0) == [10 + CANDIDATE_SEED_STRIDE, 20 + CANDIDATE_SEED_STRIDE]
    assert candidate_seeds([10], 1) == [10 + 2 * CANDIDATE_SEED_STRIDE]


def test_no_instances_no_scoring():
    measurer = SimpleNamespace()  # never called
    assert held_out_scoring.held_out_reward({}, 2, None, "evaluate@x", measurer) == {
        "before": [],
        "after": [],
    }
