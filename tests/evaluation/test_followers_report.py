"""Ensemble vs single Measurer and the behaviour check in metrics.json and the report: the
held-out comparison under each follower, paired by instance, and the two tables."""

from __future__ import annotations

import pytest

from stackelberg.evaluation.behaviour import DESIRED, UNDESIRED, UNJUDGED
from stackelberg.evaluation.held_out import held_out_details, held_out_mlflow
from stackelberg.evaluation.report import behaviour_table, ensemble_table, report_tables


def record(reward: float, members: tuple[float, float] | None = None) -> dict:
    out = {
        "text": "I trust Player 2.",
        "parsed": True,
        "words": 4,
        "reward": reward,
        "positive": reward,
        "negative": 0.0,
        "content": reward,
        "penalty": 0.0,
        "format_penalty": 0.0,
    }
    return out | ({"members": list(members)} if members else {})


def scored() -> dict:
    """Two instances, one candidate per Refiner: the untrained, the one trained against the
    ensemble (after) and the one trained against member a alone (vs_a)."""
    ens = lambda *xs: [[record((x[0] + x[1]) / 2, x)] for x in xs]  # noqa: E731 (equal weights)
    one = lambda *xs: [[record(x)] for x in xs]  # noqa: E731
    return {
        "measurer": {
            "pool": ens((0.0, 0.0), (1.0, -1.0)),
            "after": ens((2.0, 2.0), (1.0, 3.0)),
            "extra": {"vs_a": ens((3.0, -1.0), (2.0, 0.0))},
        },
        "members": ["a", "b"],
        "unseen": {
            "pool": one(0.0, 0.0),
            "after": one(1.0, 0.5),
            "extra": {"vs_a": one(0.5, 0.0)},
        },
        "unseen_model": "models/base",
        "behaviour": {
            "unseen": {
                "model": "models/base",
                "verdicts": {
                    "before": [[[UNDESIRED, UNJUDGED]], [[DESIRED, UNDESIRED]]],
                    "after": [[[DESIRED, DESIRED]], [[DESIRED, UNJUDGED]]],
                    "vs_a": [[[DESIRED, UNDESIRED]], [[UNJUDGED, UNJUDGED]]],
                },
            }
        },
    }


ROWS = [
    {
        "instance_id": f"werewolf-1-{i}",
        "base_utterance": "Hi.",
        "desired": ["Yes."],
        "undesired": ["No."],
    }
    for i in range(2)
]


def test_the_ensemble_comparison_is_paired_by_instance_under_each_follower():
    details = held_out_details(ROWS, scored(), 1, [], 1, 200, 0)
    e = details["ensemble"]
    assert e["members"] == ["a", "b"] and e["unseen_model"] == "models/base"
    cells = e["refiners"]
    assert cells["after"]["ensemble"]["estimate"] == pytest.approx(2.0)
    assert cells["after"]["a"]["estimate"] == pytest.approx(1.5)
    assert cells["vs_a"]["a"]["estimate"] == pytest.approx(2.5)
    assert cells["vs_a"]["b"]["estimate"] == pytest.approx(-0.5)
    assert cells["vs_a"]["unseen"]["estimate"] == pytest.approx(0.25)
    diff = e["diff"]["vs_a"]
    # after minus vs_a, by instance: unseen (1-0.5, 0.5-0) -> 0.5; member a (2-3, 1-2) -> -1
    assert diff["unseen"]["estimate"] == pytest.approx(0.5) and diff["unseen"]["n"] == 2
    assert diff["a"]["estimate"] == pytest.approx(-1.0)
    assert details["refiner_labels"]["vs_a"] == "trained against a alone"
    keys = held_out_mlflow("werewolf", details)
    assert keys["held_out/werewolf/ensemble/vs_a/unseen"] == pytest.approx(0.25)
    assert keys["held_out/werewolf/behaviour/unseen/after"] == pytest.approx(0.75)


def test_the_behaviour_rates_reach_metrics_and_the_report():
    details = held_out_details(ROWS, scored(), 1, [], 1, 200, 0)
    rates = details["behaviour"]["unseen"]["refiners"]
    assert rates["before"]["rate"]["estimate"] == pytest.approx(-0.25)
    assert rates["after"]["rate"]["estimate"] == pytest.approx(0.75)
    assert rates["after"]["diff"]["estimate"] == pytest.approx(1.0)
    game = {"game": "werewolf", "conditions": {}, "paired": [], "held_out": details}
    metrics = {"werewolf": game}
    table = behaviour_table(metrics)
    assert [row[2] for row in table.rows] == ["untrained", "trained", "trained against a alone"]
    assert table.rows[1][-2].startswith("0.750 [") and table.rows[1][-2].endswith("n=2")
    assert table.rows[1][-1].startswith("+1.000 [")
    ensemble = ensemble_table(metrics)
    assert ensemble.headers == ["game", "Refiner", "ensemble", "a", "b", "unseen (models/base)"]
    assert ensemble.rows[-1][1] == "trained - trained against a alone"
    assert ensemble.rows[-1][-1].startswith("+0.500 [")
    titles = [t.title for t in report_tables(metrics)]
    assert ensemble.title in titles and table.title in titles
    assert not any("ablation" in t for t in titles)  # vs_a is a member Refiner, not the ablation


def test_without_members_or_responses_there_is_no_table():
    plain = scored()
    plain["measurer"]["extra"], plain["unseen"]["extra"] = {}, {}
    del plain["behaviour"]
    details = held_out_details(ROWS, plain, 1, [], 1, 200, 0)
    assert "ensemble" not in details and "behaviour" not in details
    metrics = {"werewolf": {"game": "werewolf", "held_out": details}}
    assert not ensemble_table(metrics).rows and not behaviour_table(metrics).rows
