"""The joint Refiner against each game's own, and the 2x2 information table: hand-computed
means and paired differences from candidate records, the other view's scoring, the report's
tables and the MLflow names."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from stackelberg.evaluation import held_out_scoring
from stackelberg.evaluation.held_out_scoring import score_other_view
from stackelberg.evaluation.report import joint_table, report_tables, views_table
from stackelberg.evaluation.transfer import joint_comparison, transfer_mlflow, views_comparison
from stackelberg.persuasion.reward import RewardParts

N = 2


def rec(reward: float) -> dict:
    return {"reward": reward}


def records(pool, after, **extra) -> dict:
    """Candidate records per instance: lists of rewards per group."""
    as_records = lambda groups: [[rec(r) for r in cands] for cands in groups]  # noqa: E731
    return {
        "pool": as_records(pool),
        "after": as_records(after),
        "extra": {name: as_records(groups) for name, groups in extra.items()},
    }


def test_the_joint_refiner_is_compared_with_the_games_own_paired_by_instance():
    # three instances; the untrained pool has a third candidate (best of n) left out of n=2
    measurer = records(
        pool=[[0.0, 1.0, 9.0], [1.0, 1.0, 9.0], [2.0, 0.0, 9.0]],
        after=[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]],
        joint=[[2.0, 2.0], [2.0, 4.0], [3.0, 5.0]],
    )
    out = joint_comparison(
        measurer, measurer["extra"]["joint"], N, ["werewolf", "avalon"], "sotopia", 200, 0
    )
    assert out["seen"] is False and out["trained_on"] == ["werewolf", "avalon"]
    assert out["untrained"]["estimate"] == pytest.approx((0.5 + 1.0 + 1.0) / 3)
    assert out["own"]["estimate"] == pytest.approx(2.0)
    assert out["joint"]["estimate"] == pytest.approx((2.0 + 3.0 + 4.0) / 3)
    assert out["joint_minus_own"]["estimate"] == pytest.approx((1.0 + 1.0 + 1.0) / 3)
    assert out["joint_minus_own"]["n"] == 3
    assert out["joint_minus_untrained"]["estimate"] == pytest.approx(3.0 - 2.5 / 3)
    assert joint_comparison(
        measurer, measurer["extra"]["joint"], N, ["sotopia", "onuw"], "sotopia", 200, 0
    )["seen"]


def scored_views(with_other_refiner: bool = True) -> dict:
    extra = {"speaker_only": [[0.0, 2.0], [2.0, 2.0]]} if with_other_refiner else {}
    return {
        # against the full-information intents (the game's own view)
        "measurer": records(
            pool=[[0.0, 0.0, 5.0], [2.0, 2.0, 5.0]], after=[[3.0, 3.0], [1.0, 1.0]], **extra
        ),
        # the same candidates against the speaker's view's intents
        "other_view": records(
            pool=[[1.0, 1.0], [1.0, 1.0]],
            after=[[0.0, 0.0], [2.0, 2.0]],
            **({"speaker_only": [[4.0, 4.0], [2.0, 2.0]]} if with_other_refiner else {}),
        ),
    }


def test_the_information_table_scores_each_refiner_against_both_views():
    out = views_comparison(scored_views(), N, "full_information", 200, 0)
    cells = out["cells"]
    assert list(cells) == ["untrained", "full_information", "speaker_only"]
    assert cells["untrained"]["full_information"]["estimate"] == pytest.approx(1.0)
    assert cells["untrained"]["speaker_only"]["estimate"] == pytest.approx(1.0)
    assert cells["full_information"]["full_information"]["estimate"] == pytest.approx(2.0)
    assert cells["full_information"]["speaker_only"]["estimate"] == pytest.approx(1.0)
    assert cells["speaker_only"]["full_information"]["estimate"] == pytest.approx(1.5)
    assert cells["speaker_only"]["speaker_only"]["estimate"] == pytest.approx(3.0)
    diff = out["other_minus_own"]
    assert diff["full_information"]["estimate"] == pytest.approx(-0.5)
    assert diff["speaker_only"]["estimate"] == pytest.approx(2.0)
    assert diff["speaker_only"]["n"] == 2
    # without the speaker-view Refiner: its row and the difference are absent
    alone = views_comparison(scored_views(False), N, "full_information", 200, 0)
    assert (
        list(alone["cells"]) == ["untrained", "full_information"] and "other_minus_own" not in alone
    )


def test_the_other_view_is_scored_on_its_intents_for_the_tables_refiners_only(monkeypatch):
    seen = []

    def measure_completions(follower, row, view, cands, score, room):
        seen.append((row["desired"], row["undesired"], [c.utterance for c in cands]))
        # every term 0, one word, a reward of 1
        parts = [RewardParts((), (), (), (), *[0.0] * 6, 1, 1.0) for _ in cands]
        return [c.utterance for c in cands], parts, None

    monkeypatch.setattr(held_out_scoring, "measure_completions", measure_completions)
    cand = lambda text: SimpleNamespace(utterance=text, parsed=True)  # noqa: E731
    row = {
        "instance_id": "werewolf-1-5",
        "desired": ["full d"],
        "undesired": ["full u"],
        "other_desired": ["own d"],
        "other_undesired": ["own u"],
    }
    sampled = {
        "rows": [row],
        "views": ["view"],
        "room": 24,
        "pool": [[cand("u0"), cand("u1"), cand("u2")]],
        "after": [[cand("t0"), cand("t1")]],
        "extra": {"speaker_only": [[cand("s0"), cand("s1")]], "pos_only": [[cand("p0")]]},
    }
    out = score_other_view("follower", sampled, N, "speaker_only", None, "test")
    [(desired, undesired, texts)] = seen
    assert (desired, undesired) == (["own d"], ["own u"])
    assert texts == ["u0", "u1", "t0", "t1", "s0", "s1"]  # best of n's extra and pos_only left out
    assert list(out["extra"]) == ["speaker_only"] and len(out["pool"][0]) == N


def joint_of(game: str, reward: float) -> dict:
    """A joint Refiner on Werewolf and Avalon scoring ``reward`` on each of three instances
    of ``game``, where the untrained Refiner scores 0 and the game's own 1."""
    own = records(pool=[[0.0, 0.0]] * 3, after=[[1.0, 1.0]] * 3)
    joint = [[rec(reward), rec(reward)]] * 3
    return joint_comparison(own, joint, N, ["werewolf", "avalon"], game, 200, 0)


METRICS = {
    "werewolf": {
        "held_out": {
            "joint": joint_of("werewolf", 2.0),
            "views": views_comparison(scored_views(), N, "full_information", 200, 0),
        }
    },
    "sotopia": {"held_out": {"joint": joint_of("sotopia", 0.5)}},
}


def test_the_report_shows_both_tables_with_intervals_and_n():
    joint = joint_table(METRICS)
    assert [r[:2] for r in joint.rows] == [["werewolf", "yes"], ["sotopia", "no (held out)"]]
    assert joint.rows[0][4] == "2.000 [2.000, 2.000] n=3"
    assert joint.rows[1][5] == "-0.500 [-0.500, -0.500] n=3"
    assert "werewolf, avalon" in joint.note
    views = views_table(METRICS)
    assert [r[1] for r in views.rows] == [
        "untrained",
        "trained on full information",
        "trained on speaker's view only",
        "speaker's view only - full information Refiner (paired)",
    ]
    assert views.rows[1][2:] == ["2.000 [1.000, 3.000] n=2", "1.000 [0.000, 2.000] n=2"]
    assert views.rows[3][3].startswith("+2.000") and views.rows[3][3].endswith("n=2")
    plain = {"conditions": {}, "paired": [], "reward": None}
    report = report_tables({g: {"game": g, **plain, **m} for g, m in METRICS.items()})
    titles = [t.title for t in report]
    assert joint.title in titles and views.title in titles
    assert not joint_table({"onuw": {"held_out": {}}}).rows
    assert not views_table({"onuw": {}}).rows


def test_mlflow_names():
    names = transfer_mlflow("werewolf", METRICS["werewolf"]["held_out"])
    assert names["held_out/werewolf/joint/joint_minus_own"] == pytest.approx(1.0)
    assert names["held_out/werewolf/views/speaker_only/speaker_only"] == pytest.approx(3.0)
    assert transfer_mlflow("onuw", {}) == {}
