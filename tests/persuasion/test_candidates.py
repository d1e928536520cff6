"""Candidate sampling: the Refiner's style reaches every request, and each candidate says
whether it parsed and whether it ended before the token limit."""

from __future__ import annotations

import json

import pytest

from stackelberg.agents.prompts import rules_text
from stackelberg.agents.refiner import RefinerStyle
from stackelberg.persuasion.candidates import (
    Candidate,
    SampleSettings,
    output_rates,
    refiner_prompt,
    sample_candidates,
)
from stackelberg.persuasion.context import instance_view, speech_instances


class Scripted:
    """A Refiner stand-in: answers each request's samples from a list, one token per word;
    a sample of ``max_new_tokens`` words stands for one cut at the limit."""

    context_window = 4096

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.requests = []

    def count_tokens(self, prompt) -> int:
        return len(json.dumps(prompt)) // 4

    def encode(self, text: str, first: bool = True) -> list[int]:
        return list(range(len(text.split())))

    def run_batch(self, requests):
        self.requests += requests
        return [self.answers[: r.n] for r in requests]


@pytest.fixture
def views(selfplay):
    rec, turns = selfplay("avalon", [2])[0]
    rows = speech_instances(rec, turns, min_words=3)[:2]
    return [instance_view(json.dumps(rec), row) for row in rows]


ANSWERS = [
    "I trust Player 2, you too.",  # ended, parsed
    "Night 1: Player 3 was seen.",  # ended, not a speech
    "one two three four five six seven eight",  # the 8-token limit: clipped, parsed
    "",  # ended at once: nothing, the base is used
]


def test_candidates_carry_parsed_and_ended(views):
    llm = Scripted(ANSWERS)
    settings = SampleSettings(n=4, max_new_tokens=8)
    out = sample_candidates(llm, views, settings.profile(), 4, [1, 2])
    assert len(out) == 2 and all(len(c) == 4 for c in out)
    first = out[0]
    assert [c.parsed for c in first] == [True, False, True, False]
    assert [c.ended for c in first] == [True, True, False, True]
    assert first[3] == Candidate("", views[0].base_utterance, False, True)
    assert output_rates([c for cands in out for c in cands]) == {
        "completions": 8,
        "ended_rate": 0.75,
        "parse_rate": 0.5,
    }
    assert output_rates([]) == {"completions": 0, "ended_rate": 0.0, "parse_rate": 0.0}


def test_the_style_reaches_every_request(views):
    llm = Scripted(ANSWERS)
    settings = SampleSettings(n=2, max_new_tokens=30, rules=True, speech_words=9)
    sample_candidates(llm, views, settings.profile(), 2, [5, 6])
    assert [(r.n, r.max_new_tokens, r.stop, r.seed) for r in llm.requests] == [
        (2, 30, ("\n",), 5),
        (2, 30, ("\n",), 6),
    ]
    system, user = llm.requests[0].prompt[0]["content"], llm.requests[0].prompt[-1]["content"]
    assert system.startswith(rules_text(views[0].game))
    assert "at most 9 words" in user and user.endswith(f'"{views[0].base_utterance}"')


def test_the_analysis_format_needs_its_response_line(views):
    llm = Scripted(["Analysis: calm them.\nResponse: Approve my team.", "Approve my team."])
    settings = SampleSettings(n=2, output_format="analysis", max_new_tokens=64)
    [cands, _] = sample_candidates(llm, views, settings.profile(), 2, [1, 2])
    assert [(c.utterance, c.parsed) for c in cands] == [
        ("Approve my team.", True),
        ("Approve my team.", False),
    ]
    assert llm.requests[0].stop == ()
    assert settings.style == RefinerStyle(output_format="analysis", max_new_tokens=64)


def test_prompt_fits_the_budget_with_the_completion(views):
    llm = Scripted([])
    small = refiner_prompt(llm, views[1], SampleSettings(max_prompt_tokens=128).profile())
    large = refiner_prompt(llm, views[1], SampleSettings(max_prompt_tokens=2048).profile())
    assert len(json.dumps(small)) < len(json.dumps(large))
