"""Shared fixtures, and the rule of the `slow` marker: a test that loads or converts a model is
slow, and a test not marked slow that does fails, saying so."""

from __future__ import annotations

import functools
import gc
import importlib.abc
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio._backends._asyncio  # noqa: F401  (see below)
import pytest
from hypothesis import settings

# anyio ships a pytest plugin, so pytest rewrites every anyio module it imports. anyio
# imports its asyncio backend lazily, and in a worker whose first Prefect flow runs it in
# Prefect's loop thread, beside another thread's compile: CPython 3.11's AST constructor is
# not thread-safe there ("AST constructor recursion depth mismatch"). Imported here, once,
# in the main thread, before any test starts a thread.


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


def _allowed_seconds(item) -> float:
    """The time a test's ``timeout`` mark allows it (0 without one)."""
    mark = item.get_closest_marker("timeout")
    return float(mark.args[0]) if mark is not None and mark.args else 0.0


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Keep the fast lane (`pytest -m "not slow"`) free of model loading by rule, not by care;
    and run first the files whose tests allow themselves the longest (the pipeline runs), in
    collection order otherwise: with one process per core they then start together, not as a
    tail."""
    for item in items:
        if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    longest: dict[Path, float] = {}  # a file's tests stay together (its fixtures set up once)
    for item in items:
        longest[item.path] = max(longest.get(item.path, 0.0), _allowed_seconds(item))
    items.sort(key=lambda item: -longest[item.path])


#: the most weights a checkpoint a test builds for itself holds (a real model: hundreds of MB)
TINY_CHECKPOINT_BYTES = 10_000_000
WEIGHT_FILES = (".safetensors", ".bin", ".pt", ".gguf")


def _real_checkpoint(cls: Any, source: Any = None, *args: Any, **kwargs: Any) -> bool:
    """Whether ``from_pretrained`` would load a real model: a hub name, or a folder with
    more than ``TINY_CHECKPOINT_BYTES`` of weights (a test's tiny checkpoint may load)."""
    folder = Path(str(kwargs.get("pretrained_model_name_or_path", source)))
    if not folder.is_dir():
        return True
    weights = sum(f.stat().st_size for f in folder.iterdir() if f.suffix in WEIGHT_FILES)
    return weights > TINY_CHECKPOINT_BYTES


#: a loader that fails a fast test when it hands a real checkpoint over (after it converted
#: one, or found it converted), not when it stops first with an error
WHEN_IT_RETURNS = None
#: where a real model's weights are loaded or converted: module -> its loaders ("Class.method"
#: or a function) and when a call loads a real model. In a test not marked slow each such
#: call fails the test, whatever fixture or helper reached it, so the fast lane loads no
#: model by rule (the fixtures above are marked before the run)
MODEL_LOADERS: dict[str, dict[str, Callable[..., bool] | None]] = {
    # an embedded model's checkpoint, converted from its GGUF on first use
    "stackelberg.llm.embedded": {"ensure_checkpoint": WHEN_IT_RETURNS},
    "transformers.modeling_utils": {"PreTrainedModel.from_pretrained": _real_checkpoint},
    "transformers.models.auto.auto_factory": {
        "_BaseAutoModelClass.from_pretrained": _real_checkpoint
    },
}
LOADS_A_MODEL = "this test loads a model ({}): mark it slow (@pytest.mark.slow)"
_running_fast_test = False


def _refusing(where: str, load: Callable[..., Any], real: Callable[..., bool] | None) -> Callable:
    @functools.wraps(load)
    def refuse_in_a_fast_test(*args: Any, **kwargs: Any) -> Any:
        if _running_fast_test and real is not WHEN_IT_RETURNS and real(*args, **kwargs):
            pytest.fail(LOADS_A_MODEL.format(where), pytrace=False)
        loaded = load(*args, **kwargs)
        if _running_fast_test and real is WHEN_IT_RETURNS:
            pytest.fail(LOADS_A_MODEL.format(where), pytrace=False)
        return loaded

    return refuse_in_a_fast_test


def _guard(module: Any) -> None:
    """Wrap the loaders of ``module`` (a class's classmethod stays a classmethod)."""
    for path, real in MODEL_LOADERS[module.__name__].items():
        *owner_path, name = path.split(".")
        owner = functools.reduce(getattr, owner_path, module)
        load = vars(owner)[name] if owner_path else getattr(owner, name)
        if isinstance(load, classmethod):
            setattr(owner, name, classmethod(_refusing(path, load.__func__, real)))
        else:
            setattr(owner, name, _refusing(path, load, real))


class _GuardLoadersOnImport(importlib.abc.MetaPathFinder):
    """Guards a module of ``MODEL_LOADERS`` as soon as it is imported, before anything can
    take a loader from it (``from ... import ensure_checkpoint``); importing it costs the
    fast lane nothing when no test needs it."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in MODEL_LOADERS:
            return None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                if (spec := finder.find_spec(fullname, path, target)) is not None:
                    break
        else:
            return None
        execute = spec.loader.exec_module

        def exec_and_guard(module: Any) -> None:
            execute(module)
            _guard(module)

        spec.loader.exec_module = exec_and_guard
        return spec


for _name in MODEL_LOADERS.keys() & sys.modules.keys():  # imported before this file
    _guard(sys.modules[_name])
sys.meta_path.insert(0, _GuardLoadersOnImport())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test not marked slow, with its fixtures' setup and teardown, may load no model; and
    it runs torch on one thread: its tensors are tiny, so a second thread only spins, or
    waits on a descheduled core when the machine is busy (~10x slower: llm/local/threads.py)."""
    global _running_fast_test
    _running_fast_test = item.get_closest_marker("slow") is None
    torch = sys.modules.get("torch") if _running_fast_test else None
    threads = torch.get_num_threads() if torch is not None else 1
    if threads != 1:
        torch.set_num_threads(1)
    omp = os.environ.get("OMP_NUM_THREADS")
    if _running_fast_test:  # a local backend's default count (llm/local/threads.py)
        os.environ["OMP_NUM_THREADS"] = "1"
    try:
        return (yield)
    finally:
        _running_fast_test = False
        if threads != 1:
            torch.set_num_threads(threads)
        if omp is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = omp


#: whether what a test file leaves alive is frozen after it: in a run without slow tests
_freeze_after_each_file = False


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """Collect with the cycle collector off, then freeze what the imports built (torch,
    transformers, Prefect: about 700k objects), as flows/context.py's ``freeze_libraries``
    does for a stage: importing makes next to no garbage, and each full collection after it
    then skips the libraries (milliseconds instead of about half a second a pass)."""
    global _freeze_after_each_file
    enabled = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        gc.collect()
        gc.freeze()
        if enabled:
            gc.enable()
        items = getattr(session, "items", ())
        _freeze_after_each_file = not any(item.get_closest_marker("slow") for item in items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Freeze what a test file leaves alive (a library it imported: the Anthropic SDK's
    pydantic models alone cost about 0.1 s a full collection), so the collections of the
    files after it pass over their own objects. Only in a run without slow tests: a model
    that a slow test leaves in a cache would stay in memory once dropped (a frozen cycle is
    never collected)."""
    try:
        return (yield)
    finally:
        if _freeze_after_each_file and (nextitem is None or nextitem.path != item.path):
            gc.collect()
            gc.freeze()


# Property tests draw the same examples on every run, so CI cannot fail by chance;
# HYPOTHESIS_PROFILE=explore draws new ones (to look for bugs, not to gate a landing).
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
