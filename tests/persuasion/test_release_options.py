"""The paper release's conventions for labeling and measuring, as named options, on known
games: what the labeler and the Measurer's follower read under each value."""

from __future__ import annotations

import json

import pytest

from stackelberg.agents.prompts import describe_event
from stackelberg.agents.refiner import Candidate
from stackelberg.persuasion.context import (
    CANDIDATE_SLOT,
    follower_messages,
    instance_view,
    speech_instances,
)
from stackelberg.persuasion.intents import (
    DESIRED,
    LabelSettings,
    _system,
    json_question,
    label_views,
    per_response_question,
)
from stackelberg.persuasion.measurer import ScoreSettings, measure, measure_completions


@pytest.fixture
def view(selfplay):
    """The last werewolf speech with a follower: the nights before it had private events."""
    rec, turns = selfplay("werewolf", [1])[0]
    rows = speech_instances(rec, turns, min_words=3)
    row = rows[-1]
    return instance_view(json.dumps(rec), row)


def test_the_labeler_reads_the_speech_or_only_that_it_is_coming(view):
    base = view.base_utterance
    shown = per_response_question(view, DESIRED, 0, repair=False)
    hidden = per_response_question(view, DESIRED, 0, repair=False, show_base_utterance=False)
    assert base in shown and "just said" in shown
    assert base not in hidden and f"{view.speaker_name} (secretly" in hidden
    assert "is about to speak" in hidden
    assert base not in json_question(view, 3, False, show_base_utterance=False)


def test_the_labeler_sees_every_role_or_only_the_speakers_view(view):
    everyone = _system(view, full_information=True)
    own = _system(view, full_information=False)
    others = [p for p in view.game.players if p.id != view.speaker]
    assert all(f"{p.name}: {p.role.replace('_', ' ')}" in everyone for p in others)
    assert "Everyone's secret roles" not in own and f"You are {view.speaker_name}." in own


class Recorder:
    """A labeler that records its prompts and answers usable sentences."""

    context_window = 8192

    def __init__(self):
        self.prompts = []

    def count_tokens(self, prompt) -> int:
        return len(json.dumps(prompt)) // 4

    def run_batch(self, requests):
        out = []
        for r in requests:
            self.prompts.append(r.prompt)
            out.append([f"I think so too, answer {len(self.prompts)}.{i}." for i in range(r.n)])
        return out


def test_label_settings_reach_the_prompts(view):
    llm = Recorder()
    settings = LabelSettings(k=1, full_information=False, show_base_utterance=False)
    [labels] = label_views(llm, [view], settings, [7])
    assert labels.complete(1)
    text = json.dumps(llm.prompts)
    assert view.base_utterance not in text and "Everyone's secret roles" not in text


def test_the_followers_history_is_its_own_view_or_the_global_log(view):
    own = ScoreSettings().history(view)
    log = ScoreSettings(follower_history="global_log").history(view)
    assert own == view.lines(view.follower)
    private = [e for e in view.game.events[: view.event_index] if e.visible_to != "all"]
    hidden = [e for e in private if view.follower not in e.visible_to]
    assert hidden, "the fixture needs night events the follower did not see"
    assert len(log) > len(own)
    marked = [line for line in log if " only) " in line]
    assert len(marked) == sum(1 for e in private if describe_event(view.game, e, -1))
    assert all(not line.startswith("(") for line in own)


def test_the_follower_reads_the_parsed_utterance_or_the_raw_completion():
    raw, parsed = ["Analysis: be calm.\nResponse: I trust Player 2."], ["I trust Player 2."]
    assert ScoreSettings().texts(raw, parsed) == parsed
    assert ScoreSettings(candidate_text="raw").texts(raw, parsed) == raw


class ContextScorer:
    """A Measurer stand-in that keeps the contexts it was asked to score after."""

    context_window = 100_000

    def __init__(self):
        self.contexts = []

    def count_tokens(self, text) -> int:
        return len(text if isinstance(text, str) else json.dumps(text)) // 4

    def render_chat(self, messages, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def score_nested(self, context, candidates, responses, joiner=""):
        self.contexts.append(context)
        return [[[-1.0] for _ in responses] for _ in candidates]


def test_measure_uses_the_chosen_history(view):
    llm = ContextScorer()
    measure(llm, view, ["I am the Seer."], ["Yes."], ["No."], ScoreSettings())
    log = ScoreSettings(follower_history="global_log")
    measure(llm, view, ["I am the Seer."], ["Yes."], ["No."], log)
    own, log = llm.contexts
    assert " only) " not in own and " only) " in log


def test_an_instances_context_does_not_depend_on_the_candidates_scored_with_it(view):
    """With the Refiner's completion limit as a candidate's room, a short group and a long
    group of candidates read the same (cut) history; one longer than the room cuts more."""
    llm = ContextScorer()
    settings = ScoreSettings()
    full = llm.count_tokens(
        llm.render_chat(follower_messages(view, CANDIDATE_SLOT, settings.history(view)))
    )
    llm.context_window = full - 10  # the whole history does not fit: lines are cut
    short, longer = ["Yes."], ["I am the Seer and Player 2 is a werewolf, vote them."]
    _, cut_short = measure(llm, view, short, ["Yes."], ["No."], settings, candidate_tokens=40)
    _, cut_long = measure(llm, view, longer, ["Yes."], ["No."], settings, candidate_tokens=40)
    assert cut_short == cut_long > 0
    assert llm.contexts[0] == llm.contexts[1]
    _, cut_longest = measure(
        llm, view, ["word " * 50], ["Yes."], ["No."], settings, candidate_tokens=40
    )
    assert cut_longest > cut_long
    # without a room, the shortest group keeps more history than the longer one
    _, bare_short = measure(llm, view, short, ["Yes."], ["No."], settings)
    _, bare_long = measure(llm, view, longer, ["Yes."], ["No."], settings)
    assert bare_short <= bare_long


class ResponseScorer(ContextScorer):
    """Also what it was asked to score, and one token per response whose log-probability
    names the response (-1, -2, ...) and the candidate (its length / 100)."""

    def __init__(self):
        super().__init__()
        self.asked = []

    def score_nested(self, context, candidates, responses, joiner=""):
        self.asked.append((list(candidates), list(responses)))
        return [[[-(j + 1) - len(c) / 100] for j in range(len(responses))] for c in candidates]


RAW = ["Analysis: calm.\nResponse: I trust Player 2.", "Vote Player 3 with me now."]
PARSED = ["I trust Player 2.", "Vote Player 3 with me now."]


@pytest.mark.parametrize("candidate_text, read", [("parsed", PARSED), ("raw", RAW)])
def test_the_stages_measurer_call_scores_the_chosen_text_on_the_instances_responses(
    view, candidate_text, read
):
    """``measure_completions``, the score, grpo and evaluate stages' one call."""
    llm = ResponseScorer()
    row = {"desired": ["I vote for Player 3.", "Agreed."], "undesired": ["I vote for Player 1."]}
    settings = ScoreSettings(candidate_text=candidate_text, off_format_penalty=0.5)
    # the second did not end before the limit: off the asked format
    cands = [Candidate(r, p, True, e) for r, p, e in zip(RAW, PARSED, [True, False], strict=True)]
    texts, parts, cut = measure_completions(llm, row, view, cands, settings, 16)
    assert texts == read and cut == 0
    # the completion cut at the limit costs the penalty, whichever text the follower reads
    assert [p.format_penalty for p in parts] == [0.0, -0.5]
    assert [p.reward - p.clamped - p.length_penalty for p in parts] == pytest.approx([0.0, -0.5])
    assert llm.asked == [(read, row["desired"] + row["undesired"])]
    for text, part in zip(read, parts, strict=True):  # the desired responses are the first two
        own = len(text) / 100
        assert part.pos_means == pytest.approx((-1 - own, -2 - own))
        assert part.neg_means == pytest.approx((-3 - own,))
        assert part.words == len(text.split())
