"""Shared fixtures, and the rule of the `slow` marker: a test that loads the model is slow."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import settings


def _embedded(**options):
    """The embedded model with ``options``, no cache; closed at the end of the session."""
    from stackelberg.llm import make_llm

    llm = make_llm(backend="local", cache="off", **options)
    yield llm
    llm.close()


@pytest.fixture(scope="session")
def local_llm():
    """The embedded model, loaded once per test session (shared by all test folders), no cache."""
    yield from _embedded()


@pytest.fixture(scope="session")
def local_int8_llm():
    """The embedded model as the default's tournament players run it (int8 weights), for
    tests that play whole games: ~1.7x faster than float32 on a CPU."""
    yield from _embedded(dtype="int8")


@pytest.fixture(scope="session")
def gemma_llm():
    """The second embedded model (Gemma 3 270M, another family), loaded once, no cache."""
    yield from _embedded(model="embedded-gemma3")


@pytest.fixture(scope="session", autouse=True)
def prefect_server_stopped_before_exit():
    """Stop the temporary Prefect server an in-process flow started, while pytest's output is
    open: Prefect stops it at exit otherwise, and its last log line meets a closed stream
    (a logging traceback after the test summary)."""
    yield
    server_module = sys.modules.get("prefect.server.api.server")
    if server_module is not None:
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=5)  # the runs' last log lines, sent while it listens
        for server in list(server_module.SubprocessASGIServer._instances.values()):
            server.stop()


#: fixtures that load an embedded model's weights: a test using one is slow, marked or not
MODEL_FIXTURES = frozenset({"local_llm", "local_int8_llm", "gemma_llm"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Keep the fast lane (`pytest -m "not slow"`) free of model loading by rule, not by care."""
    for item in items:
        if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


# Property tests draw the same examples on every run, so CI cannot fail by chance;
# HYPOTHESIS_PROFILE=explore draws new ones (to look for bugs, not to gate a landing).
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
