from __future__ import annotations

import pytest

from stackelberg.llm import GenerateRequest, ScoreRequest


class FakeLLM:
    """A stand-in backend: fixed speech, first option always most likely; counts calls."""

    context_window = 4096

    def __init__(self, text: str = "Analysis: be calm.\nResponse: I trust Player 2.") -> None:
        self.text = text
        self.batches: list[int] = []

    def count_tokens(self, prompt) -> int:
        return len(str(prompt)) // 4 + 1

    def run_batch(self, requests):
        self.batches.append(len(requests))
        out = []
        for r in requests:
            if isinstance(r, GenerateRequest):
                out.append([self.text] * r.n)
            else:
                assert isinstance(r, ScoreRequest)
                out.append([[-1.0 - i] for i in range(len(r.continuations))])
        return out


@pytest.fixture
def fake_llm() -> FakeLLM:
    return FakeLLM()


@pytest.fixture
def make_fake_llm() -> type[FakeLLM]:
    return FakeLLM
