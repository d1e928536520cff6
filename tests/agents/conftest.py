"""Fixtures of the agents' tests."""

from __future__ import annotations

import pytest
from llm.fake_server import MODEL, FakeServer
from llm.game_policy import play_answer


@pytest.fixture(scope="module")
def api():
    """The openai backend on the loopback server, playing as the pretend chat model (it
    scores too, as vLLM does)."""
    from stackelberg.llm import make_llm

    with FakeServer() as server:
        server.answer = play_answer
        server.models = {MODEL}
        llm = make_llm(
            {"backend": "openai", "model": MODEL, "base_url": server.url + "/v1", "cache": "off"}
        )
        yield llm
        llm.close()
