"""A pretend model for the service's tests, and the service running on a loopback port."""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Iterator

import pytest

from stackelberg.llm import plain_chat
from stackelberg.params import Params
from stackelberg.serving.bodies import ServeLimits
from stackelberg.serving.collector import Collector
from stackelberg.serving.server import bind, running
from stackelberg.serving.service import RefinerService

#: a draft holding this fails the pretend model's whole call
FAILS = "<fail>"
PLANNED = re.compile(r'Your planned speech: "(.*)"', re.S)
#: how long a test waits for the server to reach a state or to answer (it does at once: a
#: bound on a hang, long enough for a machine under any load, not a timing tests depend on)
WAIT_S = 300


class PretendModel:
    """Stands in for the Refiner and the Measurer: rewrites the planned speech of each
    prompt as "Believe me: <speech>" (one token per word; a call with a draft holding
    ``FAILS`` fails), scores a response by its words.

    ``gate``, when given, holds the first ``run_batch`` call until it is set, so that a test
    can queue requests behind it; ``entered`` is set when that call has begun."""

    context_window = 4096

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.gate = gate
        self.entered = threading.Event()
        self.requests: list = []
        self.batches: list[int] = []
        self.scored: list[tuple] = []

    def count_tokens(self, prompt) -> int:
        return len(json.dumps(prompt)) // 4

    def encode(self, text: str, first: bool = True) -> list[int]:
        return list(range(len(text.split())))

    def render_chat(self, messages, add_generation_prompt: bool = True) -> str:
        return plain_chat(messages, add_generation_prompt)

    def run_batch(self, requests):
        self.entered.set()
        if self.gate is not None and not self.batches:
            assert self.gate.wait(WAIT_S), "the test never opened the gate"
        planned = [PLANNED.search(r.prompt[-1]["content"]).group(1) for r in requests]
        if any(FAILS in p for p in planned):
            raise RuntimeError(f"the pretend model cannot take {FAILS!r}\nsecond line")
        self.batches.append(len(requests))
        self.requests += requests
        return [[f"Believe me: {p}"] * r.n for p, r in zip(planned, requests, strict=True)]

    def score_nested(self, context, candidates, responses, joiner=""):
        self.scored.append((context, list(candidates), list(responses), joiner))
        return [
            [
                [-0.1 * len(c.split()) - 0.5 * r] * len(resp.split())
                for r, resp in enumerate(responses)
            ]
            for c in candidates
        ]

    def close(self) -> None:
        pass


@contextlib.contextmanager
def serving(
    refiner: PretendModel, measurer: PretendModel | None = None, **limits
) -> Iterator[tuple[str, RefinerService, Collector]]:
    """The service over pretend models on a free loopback port: (base URL, service, the
    collector of its batches)."""
    service = RefinerService(refiner, Params(), measurer)
    settings = ServeLimits(**({"batch_wait_ms": 0} | limits))
    with running(service, bind("127.0.0.1", 0), settings) as (url, collector):
        yield url, service, collector


@pytest.fixture
def pretend() -> PretendModel:
    return PretendModel()


def refine_message(**fields) -> dict:
    """A refine request's user message (a Werewolf speech by Player 2 unless told)."""
    context = {
        "game": "werewolf",
        "speaker": 2,
        "next_speaker": 3,
        "draft": "I saw Player 4 at night.",
        "history": ["Day 1: Player 1 says: hello."],
    } | fields
    return {"role": "user", "content": json.dumps(context)}
