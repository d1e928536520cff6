"""The LLM evaluator of Sotopia: lenient parsing, clamping counted, bounded re-asks, a
failure recorded rather than raised; and the score metrics and tables built on it."""

from __future__ import annotations

import json

import pytest

from stackelberg.agents import make_agent
from stackelberg.agents.runner import play_game
from stackelberg.evaluation.judge import (
    JudgementError,
    judge_messages,
    judge_records,
    parse_judgement,
)
from stackelberg.evaluation.metrics import game_metrics, mlflow_metrics
from stackelberg.evaluation.plots import scores_figure
from stackelberg.evaluation.report import terminal_report
from stackelberg.evaluation.tournament import play_matrix
from stackelberg.games import make_game
from stackelberg.games.sotopia_scores import DIMENSIONS


def answer(**change) -> str:
    scores = {d: {"score": lo, "reason": f"{d} is fine"} for d, (lo, _) in DIMENSIONS.items()}
    return json.dumps({**scores, **change})


def test_a_well_formed_answer_parses_with_its_reasons():
    j = parse_judgement("Here you go:\n```json\n" + answer(goal=7) + "\n```", DIMENSIONS)
    assert j.scores["goal"] == 7 and j.scores["secret"] == -10 and j.clamped == 0
    assert j.reasons["knowledge"] == "knowledge is fine" and j.reasons["goal"] == ""


def test_out_of_range_values_are_clamped_and_counted():
    j = parse_judgement(answer(goal=14, relationship={"score": "-9", "reason": "rude"}), DIMENSIONS)
    assert j.scores["goal"] == 10 and j.scores["relationship"] == -5 and j.clamped == 2
    assert j.reasons["relationship"] == "rude"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("I think they did well.", "no JSON object"),
        ("{goal: 7}", "did not parse"),
        (answer(secret={"reason": "no score"}), "No number for secret"),
        (answer(knowledge=True), "No number for knowledge"),
        (answer(believability="high"), "No number for believability"),
    ],
)
def test_unusable_answers_name_what_is_wrong(text, words):
    with pytest.raises(JudgementError, match=words):
        parse_judgement(text, DIMENSIONS)


class ScriptedJudge:
    """A backend that answers each evaluator prompt from a list, in turn per character."""

    def __init__(self, answers_by_player: dict[str, list[str]]) -> None:
        self.answers = answers_by_player
        self.calls: list[int] = []

    def run_batch(self, requests):
        self.calls.append(len(requests))
        out = []
        for r in requests:
            who = r.prompt[1]["content"].rsplit("Evaluate ", 1)[1]
            asked = sum(m["role"] == "user" for m in r.prompt)
            out.append([self.answers[who][min(asked, len(self.answers[who])) - 1]])
        return out


def scripted_record(seed: int = 0) -> dict:
    game = make_game("sotopia", {"max_turns": 3})
    return play_game(game, [make_agent("scripted", "sotopia") for _ in range(2)], seed)


def test_the_prompt_shows_the_episode_and_asks_for_one_character():
    record = scripted_record()
    system, user = judge_messages(record, 1)
    for dim, (low, high) in DIMENSIONS.items():
        assert f"- {dim} ({low} to {high})" in system["content"]
    goals = [e["data"]["goal"] for e in record["events"] if e["type"] == "character"]
    assert all(g in user["content"] for g in goals)  # the evaluator sees both goals
    assert user["content"].endswith("Evaluate Player 2.")


def test_judging_retries_then_records_a_failure_without_raising():
    records = [scripted_record(0), scripted_record(1)]
    judge = ScriptedJudge(
        {
            "Player 1.": ["no idea", answer(goal=12)],  # usable on the second ask, clamped
            "Player 2.": ["no idea", "still no idea", "nothing"],  # never usable
        }
    )
    counts = judge_records(judge, records, max_attempts=3)
    assert counts == {"judged": 2, "clamped": 2, "failures": 2}
    assert judge.calls == [4, 4, 2]  # every character, then only those still unusable
    for r in records:
        first, second = r["result"]["scores"]
        assert r["result"]["evaluator"] == "llm"
        assert first["scores"]["goal"] == 10 and first["clamped"] == 1
        assert second["scores"] is None and "no JSON object" in second["failure"]


def test_scored_tournaments_give_score_metrics_tables_and_a_plot():
    options = {"max_turns": 2, "split": "test"}
    records = play_matrix(
        "sotopia", ["random", "scripted"], range(3), opponent="scripted", options=options
    )
    assert {r["camp"] for r in records} == {"first", "second"} and len(records) == 12
    records[0]["players"][0]["scores"] = None  # a seat the LLM evaluator failed on
    records[0]["players"][1]["scores"] = None
    m = game_metrics(records, pairs=[("random", "scripted")], resamples=200)
    assert m["conditions"] == {} and m["paired"] == []
    goal = m["scores"]["conditions"]["random"]["goal"]
    assert goal["n"] == 5 and m["scores"]["conditions"]["random"]["unscored"] == 1
    scored = [r for r in records[1:] if r["condition"] == "random"]
    mine = [p["scores"]["goal"] for r in scored for p in r["players"] if p["tested"]]
    assert goal["estimate"] == pytest.approx(sum(mine) / len(mine))
    paired = {t["dimension"]: t for t in m["scores"]["paired"]}
    assert set(paired) == set(DIMENSIONS) and paired["goal"]["n"] == 5
    assert paired["goal"]["verdict"].startswith("too few")
    flat = mlflow_metrics(m)
    assert (
        "score/sotopia/random/goal" in flat
        and "paired/sotopia/random_vs_scripted/goal_diff" in flat
    )
    text = terminal_report({"sotopia": m})
    assert "sotopia: scores of the agent under test" in text and "Win rate" not in text
    assert "sotopia: paired score difference" in text
    ax = scores_figure(m).axes[0]
    assert len(ax.patches) == 2 * len(DIMENSIONS)  # one bar per condition and dimension
