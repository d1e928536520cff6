"""A backend wrapper that counts LLM calls, for tests of calls per decision."""

from __future__ import annotations


class Counting:
    """A backend that counts the requests it answers (one request is one LLM call)."""

    def __init__(self, llm) -> None:
        self.llm, self.calls = llm, 0

    def __getattr__(self, name):
        return getattr(self.llm, name)

    def run_batch(self, requests):
        self.calls += len(requests)
        return self.llm.run_batch(requests)
