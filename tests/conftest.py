from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def local_llm():
    """The embedded model, loaded once per test session (shared by all test folders), no cache."""
    from stackelberg.llm import make_llm

    llm = make_llm(backend="local", cache="off")
    yield llm
    llm.close()
