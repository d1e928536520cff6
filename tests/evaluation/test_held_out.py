"""The held-out evidence: best-of-k, the reward's terms, an unseen follower, copying."""

from __future__ import annotations

import pytest

from stackelberg.evaluation.held_out import (
    best_of_choice,
    best_of_summary,
    contains_verbatim,
    copying_verdict,
    held_out_details,
    held_out_mlflow,
    learned_summary,
    ngram_overlap,
    term_summary,
)


def cand(reward: float, text: str = "I am a villager.", positive=-1.0, negative=2.0, penalty=0.0):
    return {
        "text": text,
        "parsed": True,
        "words": len(text.split()),
        "reward": reward,
        "positive": positive,
        "negative": negative,
        "content": reward - penalty,
        "penalty": penalty,
        "format_penalty": 0.0,
    }


def test_ngram_overlap_and_verbatim_copies():
    desired = ["I trust Player 2.", "I will vote for Player 5."]
    assert ngram_overlap("Honestly, I will vote for Player 5 today", desired) == pytest.approx(
        4 / 6
    )
    assert ngram_overlap("Vote now", desired) == 0.0  # no 3-gram at all
    assert contains_verbatim("Well... i TRUST player 2, really", desired)
    assert not contains_verbatim("I trust Player 22.", desired)


def test_best_of_k_picks_the_measurers_favourite_among_the_first_k():
    pool = [[cand(1.0), cand(3.0), cand(2.0), cand(9.0)], [cand(5.0), cand(5.0), cand(0.0)]]
    assert best_of_choice(pool, 1) == [0, 0]
    assert best_of_choice(pool, 3) == [1, 0]  # a tie keeps the first
    assert best_of_choice(pool, 8) == [3, 0]


def test_best_of_summary_compares_with_the_trained_single_sample_under_each_follower():
    pool = [[cand(1.0), cand(3.0)], [cand(0.0), cand(-1.0)]]
    trained = [[cand(2.0)], [cand(1.0)]]
    unseen_pool = [[cand(0.5), cand(-0.5)], [cand(0.0), cand(4.0)]]
    unseen_trained = [[cand(1.0)], [cand(1.0)]]
    out = best_of_summary(pool, trained, [1, 2], unseen_pool, unseen_trained, 200, 0)
    assert out["trained"]["scorings_per_speech"] == 0
    assert out["trained"]["measurer"]["estimate"] == pytest.approx(1.5)
    assert out["best_of_2"]["scorings_per_speech"] == 2
    assert out["best_of_2"]["measurer"]["estimate"] == pytest.approx(1.5)  # 3.0 and 0.0
    # the unseen follower judges the Measurer's picks: -0.5 and 0.0
    assert out["best_of_2"]["unseen"]["estimate"] == pytest.approx(-0.25)
    assert out["best_of_2"]["unseen_trained_minus"]["estimate"] == pytest.approx(1.25)
    assert out["best_of_1"]["measurer_trained_minus"]["estimate"] == pytest.approx(1.0)


def test_terms_are_means_of_instance_means():
    groups = [[cand(1.0, positive=-1.0, negative=3.0), cand(3.0, positive=-3.0, negative=1.0)]]
    out = term_summary(groups, 200, 0)
    assert out["reward"]["estimate"] == 2.0 and out["positive"]["estimate"] == -2.0
    assert out["negative"]["estimate"] == 2.0 and out["reward"]["n"] == 1


def test_what_the_refiner_learned_and_the_copying_verdict():
    desired, undesired = [["I trust Player 2."]], [["Player 2 is lying."]]
    base = ["I trust Player 2."]
    plain = learned_summary([[cand(1.0, "We should look at the votes.")]], desired, undesired, base)
    copied = learned_summary(
        [[cand(2.0, "I trust Player 2. Really.", penalty=-1.0)]], desired, undesired, base
    )
    assert plain["verbatim_desired"] == 0.0 and copied["verbatim_desired"] == 1.0
    assert copied["overlap_desired"] == pytest.approx(2 / 3)  # 2 of its 3 word 3-grams
    assert copied["penalty_share"] == pytest.approx(1 / 4)  # |-1| of |3| + |-1|
    assert plain["parse_rate"] == 1.0 and plain["words"] == 6
    assert "reward hacking" in copying_verdict(plain, copied)
    assert "no sign of copying" in copying_verdict(plain, plain)
    # what it says beyond the planned speech: an addition, or the whole speech
    assert (
        copied["top_saying"] == "Really." and plain["top_saying"] == "We should look at the votes."
    )


def test_one_phrase_said_everywhere_shows_as_the_top_saying_and_its_share():
    bases = ["I trust Player 2.", "I suspect Player 4."]
    groups = [
        [cand(1.0, "I trust Player 2. Nah."), cand(1.0, "I trust Player 2.")],
        [cand(1.0, "I suspect Player 4. Nah."), cand(1.0, "I suspect Player 4. Nah.")],
    ]
    out = learned_summary(groups, [["x"], ["x"]], [["y"], ["y"]], bases)
    assert (out["top_saying"], out["top_saying_share"]) == ("Nah.", 0.75)
    assert out["distinct_sayings"] == 2  # "Nah." and "" (the planned speech alone)


def test_details_from_the_scored_records():
    rows = [
        {"instance_id": f"w-{i}", "base_utterance": "Hi.", "desired": ["a b c"], "undesired": ["d"]}
        for i in range(3)
    ]
    measurer = {
        "pool": [[cand(1.0), cand(5.0), cand(0.0)] for _ in rows],
        "after": [[cand(2.0), cand(2.0)] for _ in rows],
        "extra": {"pos_only": [[cand(0.5)] for _ in rows]},
    }
    unseen = {
        "pool": [[cand(0.0), cand(1.0), cand(1.0)] for _ in rows],
        "after": [[cand(0.5)] * 2 for _ in rows],
    }
    scored = {"measurer": measurer, "unseen": unseen, "unseen_model": "other"}
    out = held_out_details(rows, scored, n=2, ks=[1, 2], n_examples=2, resamples=200, seed=0)
    assert out["terms"]["before"]["reward"]["estimate"] == 3.0  # the pool's first 2
    assert out["terms"]["after"]["reward"]["estimate"] == 2.0
    assert out["terms"]["pos_only"]["reward"]["estimate"] == 0.5
    assert out["unseen"]["diff"]["estimate"] == pytest.approx(0.0)  # 0.5 - mean(0, 1)
    assert out["unseen"]["model"] == "other"
    assert out["content"]["measurer"]["estimate"] == pytest.approx(-1.0)  # 2 - mean(1, 5)
    assert out["content"]["unseen"]["estimate"] == pytest.approx(0.0)
    assert len(out["examples"]) == 2 and out["examples"][0]["after_reward"] == 2.0
    assert set(out["best_of"]) == {"trained", "best_of_1", "best_of_2"}


def test_the_details_as_mlflow_metrics():
    rows = [{"instance_id": "w-1", "base_utterance": "Hi.", "desired": ["a"], "undesired": ["b"]}]
    measurer = {"pool": [[cand(1.0), cand(3.0)]], "after": [[cand(2.0)]], "extra": {}}
    scored = {"measurer": measurer, "unseen": measurer, "unseen_model": "m"}
    details = held_out_details(rows, scored, n=1, ks=[2], n_examples=0, resamples=100, seed=0)
    flat = held_out_mlflow("werewolf", details)
    assert flat["held_out/werewolf/terms/after/reward"] == 2.0
    assert flat["held_out/werewolf/best_of/best_of_2/measurer"] == 3.0
    assert flat["held_out/werewolf/best_of/trained/unseen"] == 2.0
    assert flat["held_out/werewolf/unseen/diff"] == 1.0
    assert flat["held_out/werewolf/content_diff/measurer"] == 1.0
    assert flat["held_out/werewolf/learned/before/parse_rate"] == 1.0
    assert all(isinstance(v, float) for v in flat.values())


def test_the_held_out_tables_show_the_measured_cells():
    from stackelberg.evaluation.report import (
        ablation_reward_table,
        best_of_table,
        examples_table,
        learned_table,
        unseen_follower_table,
    )

    rows = [
        {
            "instance_id": f"w-{i}",
            "base_utterance": "Hi.",
            "desired": ["I trust Player 2."],
            "undesired": ["b"],
        }
        for i in range(2)
    ]
    measurer = {
        "pool": [[cand(1.0), cand(3.0)], [cand(1.0), cand(3.0)]],
        "after": [[cand(2.0)], [cand(2.0)]],
        "extra": {"neg_only": [[cand(-1.0)], [cand(-1.0)]]},
    }
    scored = {"measurer": measurer, "unseen": measurer, "unseen_model": "gemma"}
    details = held_out_details(rows, scored, n=1, ks=[1, 2], n_examples=1, resamples=100, seed=0)
    reward = {"diff": {"estimate": 1.0, "ci": [0.5, 1.5], "n": 2}}
    metrics = {"werewolf": {"held_out": details, "reward": reward}}

    best = best_of_table(metrics)
    assert [r[:2] for r in best.rows] == [
        ["untrained, best of 1", "1"],
        ["untrained, best of 2", "2"],
        ["trained Refiner, one sample", "0"],
    ]
    assert best.rows[1][2] == "3.000 [3.000, 3.000]" and best.rows[2][3] == "2.000 [2.000, 2.000]"
    ablation = ablation_reward_table(metrics)
    by_row = {r[0]: r[1:] for r in ablation.rows}
    assert by_row["trained, negative-only reward"][0] == "-1.000 [-1.000, -1.000]"
    assert by_row["trained, positive-only reward"] == ["-", "-", "-"]
    assert by_row["untrained Refiner"][0] == "1.000 [1.000, 1.000]"
    unseen = unseen_follower_table(metrics)
    # the reward's difference and its terms alone, under each follower
    assert unseen.rows == [
        [
            "werewolf",
            "2",
            "+1.000 [0.500, 1.500]",
            "+1.000 [1.000, 1.000]",
            "gemma",
            "+1.000 [1.000, 1.000]",
            "+1.000 [1.000, 1.000]",
        ]
    ]
    assert [r[1] for r in learned_table(metrics).rows] == ["untrained", "trained"]
    assert examples_table(metrics).rows[0][2] == "I am a villager. (1.00)"
