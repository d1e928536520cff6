"""Intent labeling: validation of responses, repair retries, drops, and the JSON scheme."""

from __future__ import annotations

import json

import pytest

from stackelberg.datasets import NothingToWorkWithError
from stackelberg.llm import GenerateRequest
from stackelberg.persuasion.context import instance_view, speech_instances
from stackelberg.persuasion.intents import (
    Dropped,
    Labels,
    LabelSettings,
    label_views,
    valid_response,
)


class ScriptedLLM:
    """A stand-in backend: answers generate requests from a queue; counts what it saw."""

    context_window = 4096

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests: list[GenerateRequest] = []

    def count_tokens(self, prompt) -> int:
        return len(json.dumps(prompt)) // 4

    def run_batch(self, requests):
        self.requests += requests
        return [[self.answers.pop(0) for _ in range(r.n)] for r in requests]


@pytest.fixture
def view(selfplay):
    rec, turns = selfplay("werewolf", [1])[0]
    row = speech_instances(rec, turns, min_words=3)[0]
    return instance_view(json.dumps(rec), row)


def test_valid_response_rules(view):
    assert valid_response('Player 2 says: "I agree with you."', view, []) == "I agree with you."
    assert valid_response("Yes.", view, []) is None
    assert valid_response("The game so far: nothing", view, []) is None
    assert valid_response("I agree with you.", view, ["i agree with you."]) is None
    assert valid_response(view.base_utterance, view, []) is None


def test_per_response_retries_with_repair_then_drops(view):
    good = ["I trust you a lot.", "You are right about that.", "I will vote with you."]
    bad = ["I suspect you now.", "You are lying to us.", "I do not trust you."]
    llm = ScriptedLLM([*good[:2], "Yes.", *bad, "I will vote with you."])
    [labels] = label_views(llm, [view], LabelSettings(k=3, max_attempts=2), [0])
    assert labels.complete(3) and labels.attempts == 2
    assert labels.desired == good and labels.undesired == bad
    assert "only, in the first person" in llm.requests[-1].prompt[-1]["content"]

    never = ScriptedLLM(["Yes."] * 12)
    [dropped] = label_views(never, [view], LabelSettings(k=3, max_attempts=2), [0])
    assert not dropped.complete(3) and dropped.attempts == 2


def test_json_scheme(view):
    answer = json.dumps(
        {
            "desired": ["I trust you here.", "Good point, friend."],
            "undesired": ["You lie to us.", "I vote against you."],
        }
    )
    llm = ScriptedLLM(["not json at all", answer])
    [labels] = label_views(llm, [view], LabelSettings(k=2, scheme="json", max_attempts=3), [0])
    assert labels.complete(2) and labels.attempts == 2


# ---- a labeler whose answers leave the stage nothing: one line, in the label stage -----------


def test_an_unusable_answer_is_kept_to_quote(view):
    sure = "Sure!\nHere are a few."
    settings = LabelSettings(k=3, max_attempts=2)
    [per_response] = label_views(ScriptedLLM([sure] * 12), [view], settings, [0])
    json_scheme = LabelSettings(k=2, scheme="json", max_attempts=2)
    [as_json] = label_views(ScriptedLLM(["I'd be glad to help!"] * 2), [view], json_scheme, [0])
    assert per_response.unusable == sure and as_json.unusable == "I'd be glad to help!"
    answer = json.dumps({"desired": ["I trust you here.", "Good point, friend."], "undesired": []})
    [half] = label_views(ScriptedLLM([answer, "no"]), [view], json_scheme, [0])
    assert half.desired and half.unusable == "no"  # the answer that gave something is not kept


def test_a_labeler_that_drops_too_many_stops_the_stage_in_one_line(view):
    settings = LabelSettings(k=3, max_dropped_share=0.5)
    [kept] = label_views(ScriptedLLM(["Yes."] * 36), [view], settings, [0])
    tally = Dropped.of([kept, Labels(["a", "b", "c"], ["d", "e", "f"])], 3)
    assert (tally.instances, tally.dropped, tally.answer) == (2, 1, "Yes.")
    tally.check("pretend-labeler", settings)  # half of them: allowed
    tally += Dropped(3, 3, "Sure!\n  Here are\nsome lines.")
    with pytest.raises(NothingToWorkWithError) as err:
        tally.check("pretend-labeler", settings)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        "labeler pretend-labeler dropped 4 of 5 instances (80%), more than "
        "label.max_dropped_share 0.5:"
    )
    assert message.endswith("one answer: 'Yes.'")  # the first batch's, on one line
    Dropped(5, 5, None).check("pretend-labeler", LabelSettings(max_dropped_share=1.0))
    with pytest.raises(NothingToWorkWithError, match="one answer: none came back$"):
        Dropped(5, 5, None).check("pretend-labeler", settings)


def test_a_long_answer_is_quoted_short():
    quoted = NothingToWorkWithError.quote("word " * 100, limit=20)
    assert quoted == repr("word word word word…")
