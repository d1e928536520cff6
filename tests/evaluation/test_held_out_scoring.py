"""The held-out reward's candidates: the untrained Refiner samples a pool for best-of-k, its
first n are the "before" group, the extra Refiners are kept apart, and every Refiner
samples on the same seeds, apart from the sample stage's."""

from __future__ import annotations

from types import SimpleNamespace

from stackelberg.evaluation import held_out_scoring
from stackelberg.evaluation.held_out import held_out_details
from stackelberg.evaluation.held_out_scoring import (
    CANDIDATE_SEED_STRIDE,
    candidate_seeds,
    sample_held_out,
)
from stackelberg.persuasion.candidates import Candidate, SampleSettings


def test_each_refiner_samples_on_the_same_seeds_and_the_pool_serves_best_of(monkeypatch):
    calls = []

    def sample_candidates(llm, views, profile, n, seeds):
        calls.append((llm, n, list(seeds)))
        # every Refiner's candidates parse but the untrained one's beyond the first two
        return [
            [
                Candidate(f"{llm} {j}", f"{llm} {j}", j < 2 or llm != "untrained", True)
                for j in range(n)
            ]
            for _ in views
        ]

    monkeypatch.setattr(held_out_scoring, "sample_candidates", sample_candidates)
    settings = SampleSettings(max_new_tokens=24)
    refiners = {
        name: settings.profile(model)
        for name, model in [("pool", "untrained"), ("after", "trained"), ("pos_only", "ablation")]
    }
    rows = [{"instance_id": "werewolf-1-5"}, {"instance_id": "werewolf-1-9"}]
    sampled = sample_held_out(
        lambda config: config,
        refiners,
        ["pos_only"],
        rows,
        ["view 1", "view 2"],
        2,
        [1, 3],
        [7, 8],
    )
    assert calls == [("untrained", 3, [7, 8]), ("trained", 2, [7, 8]), ("ablation", 2, [7, 8])]
    assert [len(c) for c in sampled["pool"]] == [3, 3] and list(sampled["extra"]) == ["pos_only"]
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


def _fake_follower_scoring(monkeypatch):
    """``measure_completions`` replaced by one whose reward is read from the candidate's
    text ("name score"), recording which follower saw which candidates."""
    seen = []

    def measure_completions(follower, row, view, cands, score, room):
        seen.append((follower, [c.raw for c in cands]))
        parts = [
            SimpleNamespace(
                member_rewards=(),
                words=2,
                reward=float(c.raw.split()[-1]) + (0.5 if follower == "unseen" else 0.0),
                positive=0.0,
                negative=0.0,
                clamped=0.0,
                length_penalty=0.0,
                format_penalty=0.0,
            )
            for c in cands
        ]
        return [c.raw for c in cands], parts, 0

    monkeypatch.setattr(held_out_scoring, "measure_completions", measure_completions)
    return seen


def test_the_unseen_follower_scores_only_what_its_tables_read(monkeypatch):
    seen = _fake_follower_scoring(monkeypatch)

    def cands(name, scores):
        return [Candidate(f"{name} {s}", f"{name} {s}", True, True) for s in scores]

    # one instance: the untrained pool of 6 (its best of 4 is index 3, its best of 6 index 5),
    # the trained Refiner's 2, an ablation Refiner's 2 and one trained against a member alone
    sampled = {
        "rows": [
            {
                "instance_id": "werewolf-1-5",
                "base_utterance": "b",
                "desired": ["d"],
                "undesired": ["u"],
            }
        ],
        "views": ["view"],
        "room": 24,
        "pool": [cands("u", [1, 2, 0, 9, 3, 11])],
        "after": [cands("t", [4, 5])],
        "extra": {"pos_only": [cands("p", [6, 7])], "vs_smollm2": [cands("m", [8, 8])]},
        "before_outputs": {},
        "after_outputs": {},
    }
    out = held_out_scoring.held_out_reward(
        sampled,
        2,
        None,
        "evaluate@werewolf",
        "measurer",
        unseen=(lambda: "unseen", "gemma"),
        best_of=[1, 4, 6],
    )
    measurer_saw, unseen_saw = seen
    assert measurer_saw[0] == "measurer" and len(measurer_saw[1]) == 12
    assert unseen_saw == ("unseen", ["u 1", "u 2", "u 9", "u 11", "t 4", "t 5", "m 8", "m 8"])
    unseen = out["scored"]["unseen"]
    # each scored record sits at its place in the pool, so the Measurer's picks index it
    assert [r and r["reward"] for r in unseen["pool"][0]] == [1.5, 2.5, None, 9.5, None, 11.5]
    assert list(unseen["extra"]) == ["vs_smollm2"]
    assert out["scored"]["unseen_model"] == "gemma"
    assert out["before"] == [1.5] and out["after"] == [4.5]
    # the tables read nothing that was left unscored
    details = held_out_details(out["rows"], out["scored"], 2, [1, 4, 6], 1, 200, 0)
    assert details["best_of"]["best_of_6"]["unseen"]["estimate"] == 11.5
    assert details["unseen"]["before"]["estimate"] == 2.0


def test_pool_kept_without_best_of_is_the_first_n():
    pool = [[{"reward": r} for r in (3.0, 1.0, 5.0)], [{"reward": 1.0}]]
    assert held_out_scoring.pool_kept(pool, 2, []) == [[0, 1], [0]]
    assert held_out_scoring.pool_kept(pool, 1, [3]) == [[0, 2], [0]]
