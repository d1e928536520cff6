"""The behaviour check: a follower's sampled responses to held-out candidates, judged by the
scripted labeler's rule or an LLM judge (a pretend backend here, unparseable answers too),
and the rates (desired minus undesired matches) with their paired differences."""

from __future__ import annotations

import json
import re

import pytest

from stackelberg.agents.refiner import Candidate
from stackelberg.agents.scripted.phrases import suspect, trust, vote_for
from stackelberg.evaluation.behaviour import (
    DESIRED,
    NEITHER,
    UNDESIRED,
    UNJUDGED,
    behaviour_followers,
    behaviour_summary,
    follower_behaviour,
    instance_rates,
    llm_verdicts,
    parse_judgement,
    rule_verdict,
)
from stackelberg.evaluation.settings import BehaviourSettings
from stackelberg.llm import GenerateRequest
from stackelberg.persuasion.context import instance_view, speech_instances
from stackelberg.persuasion.measurer import Ensemble, Member, ScoreSettings


@pytest.fixture
def view():
    from stackelberg.agents import make_agent
    from stackelberg.agents.runner import Table, play_tables
    from stackelberg.games import make_game

    game = make_game("werewolf")
    n = game.reset(1).n_players
    table = Table(game, [make_agent("scripted", "werewolf") for _ in range(n)], 1)
    record = play_tables([table])[0]
    rows = speech_instances(record, table.speech_turns, min_words=3)
    return instance_view(json.dumps(record), rows[0])


def others(view) -> list[int]:
    """Two players other than the follower (whom the rule reads a side on)."""
    return [p for p in range(len(view.game.players)) if p != view.follower][:2]


def test_the_rule_matches_the_stance_and_the_player_named(view):
    a, b = others(view)
    desired, undesired = [trust(a)], [vote_for(a), suspect(b)]
    assert rule_verdict(view, f"Honestly, {trust(a)}", desired, undesired) == DESIRED
    assert rule_verdict(view, suspect(a), desired, undesired) == UNDESIRED  # vote = suspect
    assert rule_verdict(view, suspect(b), desired, undesired) == UNDESIRED
    assert rule_verdict(view, trust(b), desired, undesired) == NEITHER  # a side none took
    assert rule_verdict(view, f"{trust(a)} {suspect(b)}", desired, undesired) == NEITHER
    assert rule_verdict(view, "The weather is nice.", desired, undesired) == UNJUDGED
    assert rule_verdict(view, "", desired, undesired) == UNJUDGED


@pytest.mark.parametrize(
    "answer, number",
    [
        ("2", 2),
        ("Statement 3.", 3),
        ("0", 0),
        (" 1\n", 1),
        ("banana", None),
        ("", None),
        ("7", None),
    ],
)
def test_a_judges_answer_names_a_statement_or_is_unjudged(answer, number):
    assert parse_judgement(answer, 4) == number


class Judge:
    """A pretend LLM judge: names the listed statement that is ``picks[response]`` (0 when
    the pick is None), or answers ``picks[response]`` itself when it is no statement."""

    def __init__(self, picks):
        self.picks, self.requests = picks, []

    def run_batch(self, requests):
        self.requests += requests
        out = []
        for r in requests:
            assert isinstance(r, GenerateRequest) and r.temperature == 0.0
            text = r.prompt[-1]["content"]
            response = re.search(r'said: "(.*)"', text).group(1)
            pick = self.picks[response]
            listed = dict(re.findall(r"^(\d+)\. (.*)$", text, re.M))
            number = next((k for k, s in listed.items() if s == pick), None)
            out.append([number or ("0" if pick is None else pick)])
        return out


def test_an_llm_judge_through_shuffled_statements_and_unparseable_answers(view):
    desired, undesired = ["I agree.", "Well said."], ["I object.", "Nonsense."]
    judge = Judge(
        {"Yes indeed.": "Well said.", "No way.": "Nonsense.", "Hm.": None, "Eh?": "maybe", "X": "9"}
    )
    items = [
        (view, text, desired, undesired)
        for text in ("Yes indeed.", "No way.", "Hm.", "Eh?", "X", "")
    ]
    verdicts = llm_verdicts(judge, items, BehaviourSettings(judge_tokens=4), seed=5)
    assert verdicts == [DESIRED, UNDESIRED, NEITHER, UNJUDGED, UNJUDGED, UNJUDGED]
    assert len(judge.requests) == 5  # no speech: nothing asked
    assert all(r.max_new_tokens == 4 for r in judge.requests)


def test_the_statement_order_is_shuffled_by_seed(view):
    judge = Judge({"Yes.": "a1"})
    statements = (["a1", "a2", "a3"], ["b1", "b2", "b3"])
    orders = set()
    for seed in range(8):
        llm_verdicts(judge, [(view, "Yes.", *statements)], BehaviourSettings(), seed)
        orders.add(
            tuple(re.findall(r"^\d+\. (.*)$", judge.requests[-1].prompt[-1]["content"], re.M))
        )
    assert len(orders) > 1


class Follower:
    """A pretend follower: says ``says[candidate]`` after a candidate, every sample."""

    context_window = 100_000

    def __init__(self, says):
        self.says, self.requests = says, []

    def count_tokens(self, text) -> int:
        return len(text if isinstance(text, str) else json.dumps(text)) // 4 + 1

    def render_chat(self, messages, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages)

    def run_batch(self, requests):
        self.requests += requests
        out = []
        for r in requests:
            said = next(c for c in self.says if c in r.prompt[-1]["content"])
            out.append([self.says[said]] * r.n)
        return out


def test_a_followers_responses_are_judged_per_refiner_instance_and_candidate(view):
    a, b = others(view)
    row = {"desired": [trust(a)], "undesired": [suspect(a)]}
    follower = Follower(
        {"Calm down.": "I have nothing to add.", "Trust me.": trust(a), "Hmm.": suspect(a)}
    )
    cand = lambda text: Candidate(text, text, True, True)  # noqa: E731
    groups = {
        "before": [[cand("Calm down."), cand("Hmm.")]],
        "after": [[cand("Trust me."), cand("Trust me.")]],
    }
    sampled = {"rows": [row], "views": [view], "room": 12}
    settings = BehaviourSettings(responses=3, speech_tokens=10)
    out = follower_behaviour(follower, sampled, groups, ScoreSettings(), settings, None, "t")
    assert out == {"before": [[[UNJUDGED] * 3, [UNDESIRED] * 3]], "after": [[[DESIRED] * 3] * 2]}
    assert [r.n for r in follower.requests] == [3] * 4
    assert len({r.seed for r in follower.requests}) == 4
    assert all(r.max_new_tokens == 10 and r.stop == ("\n",) for r in follower.requests)


def test_rates_and_their_paired_difference_by_instance():
    before = [[[DESIRED, UNDESIRED]], [[UNDESIRED, UNDESIRED], [NEITHER, UNJUDGED]]]
    after = [[[DESIRED, DESIRED]], [[DESIRED, NEITHER], [UNDESIRED, UNJUDGED]]]
    assert instance_rates(before) == [0.0, -0.5] and instance_rates(after) == [1.0, 0.0]
    summary = behaviour_summary({"before": before, "after": after}, resamples=200, seed=0)
    assert summary["before"]["rate"]["estimate"] == pytest.approx(-0.25)
    assert summary["after"]["rate"]["estimate"] == pytest.approx(0.5)
    assert summary["after"]["diff"]["estimate"] == pytest.approx(0.75)
    assert summary["after"]["diff"]["n"] == 2 and "diff" not in summary["before"]
    assert summary["after"]["responses"] == 6
    assert summary["after"]["desired"] == pytest.approx(3 / 6)
    assert summary["after"]["unjudged"] == pytest.approx(1 / 6)


def test_who_responds_the_unseen_follower_and_each_ensemble_member():
    ensemble = Ensemble([Member("a", 1.0, "llm a"), Member("b", 2.0, "llm b")])
    followers = behaviour_followers(
        ["unseen", "measurer"], ensemble, "ensemble", (lambda: "u", "gemma")
    )
    assert [(k, m, load()) for k, m, load in followers] == [
        ("unseen", "gemma", "u"),
        ("measurer/a", "a", "llm a"),
        ("measurer/b", "b", "llm b"),
    ]
    [(key, model, load)] = behaviour_followers(["measurer"], "one", "models/base", None)
    assert (key, model, load()) == ("measurer", "models/base", "one")
