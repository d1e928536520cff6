"""The runner scores requests that share a head together, cut at the same place either way."""

from __future__ import annotations

from stackelberg.agents.runner import SharedHeadScore, run_requests
from stackelberg.llm import ScoreRequest


class Recorder:
    """A backend stand-in: the score of a label is minus its length; records the calls."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nested: list[tuple[str, list[str], list[str]]] = []
        self.plain: list[list] = []

    def render_chat(self, messages, add_generation_prompt=True) -> str:
        return "".join(f"<{m['role']}>{m['content']}" for m in messages)

    def score_nested(self, context, candidates, responses, joiner=""):
        self.nested.append((context, list(candidates), list(responses)))
        return [[[-float(len(r))] for r in responses] for _ in candidates]

    def run_batch(self, requests):
        self.plain.append(list(requests))
        return [[[-float(len(c))] for c in r.continuations] for r in requests]


def request(who: str, labels: list[str]) -> SharedHeadScore:
    chat = [
        {"role": "system", "content": f"RULES\n\nYou are {who}"},
        {"role": "user", "content": "?"},
    ]
    return SharedHeadScore(ScoreRequest(chat, labels), "RULES")


def test_same_head_is_scored_once_and_answers_follow_each_request():
    llm = Recorder("local")
    out = run_requests(llm, [request("P1", ["yes", "no"]), request("P2", ["maybe"])])
    assert out == [[[-3.0], [-2.0]], [[-5.0]]]
    assert llm.nested == [
        (
            "<system>RULES",
            ["\n\nYou are P1<user>?", "\n\nYou are P2<user>?"],
            ["yes", "no", "maybe"],
        )
    ]
    alone = Recorder("local")
    run_requests(alone, [request("P2", ["maybe"])])
    assert alone.nested[0][:2] == ("<system>RULES", ["\n\nYou are P2<user>?"])  # same cut


def test_other_backends_get_plain_requests():
    llm = Recorder("openai")
    req = request("P1", ["yes"])
    assert run_requests({"default": llm}, [req]) == [[[-3.0]]]
    assert llm.plain == [[req.request]] and not llm.nested
