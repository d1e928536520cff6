"""Cache, retry policy, config/factory, fit_history and lazy imports (no model needed)."""

from __future__ import annotations

import multiprocessing
import random
import subprocess
import sys

import pytest

from stackelberg.llm import (
    BadRequestError,
    ConfigError,
    ContextLengthError,
    LLMConfig,
    ResponseCache,
    RetriesExhaustedError,
    RetryPolicy,
    TransientError,
    fit_history,
    make_llm,
    open_cache,
)
from stackelberg.llm.cache import cache_key


def _writer(path: str, start: int) -> None:
    cache = ResponseCache(path)
    for i in range(start, start + 200):
        cache.put(f"k{i}", [i, "x" * 50])


def test_cache_roundtrip_and_several_processes(tmp_path):
    path = str(tmp_path / "c.sqlite")
    procs = [multiprocessing.Process(target=_writer, args=(path, s)) for s in (0, 200, 400)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert all(p.exitcode == 0 for p in procs)
    cache = ResponseCache(path)
    assert len(cache) == 600 and cache.get("k450") == [450, "x" * 50]
    assert cache.get("missing") is None
    assert cache.get_many(["k1", "k2", "nope"]) == {"k1": [1, "x" * 50], "k2": [2, "x" * 50]}


def test_cache_keys_and_switches(tmp_path, monkeypatch):
    assert cache_key({"a": 1, "b": [1]}) == cache_key({"b": [1], "a": 1})
    assert cache_key({"seed": 1}) != cache_key({"seed": 2})
    assert open_cache("off") is None
    assert open_cache(str(tmp_path / "x.sqlite")).path == tmp_path / "x.sqlite"
    monkeypatch.setenv("STACKELBERG_LLM_CACHE", "off")
    assert open_cache(str(tmp_path / "x.sqlite")) is None
    monkeypatch.setenv("STACKELBERG_LLM_CACHE", "")
    monkeypatch.setenv("STACKELBERG_CACHE_DIR", str(tmp_path / "root"))
    assert open_cache("default").path == tmp_path / "root" / "llm-cache.sqlite"


def test_backoff_grows_with_jitter_and_honours_retry_after():
    policy = RetryPolicy(base_s=1.0, max_backoff_s=8.0)
    rng = random.Random(0)
    waits = [policy.backoff(k, None, rng) for k in range(1, 6)]
    for k, w in enumerate(waits, start=1):
        cap = min(8.0, 2 ** (k - 1))
        assert cap / 2 <= w <= cap
    assert policy.backoff(1, 3.5, rng) == 3.5 and policy.backoff(1, 100, rng) == 8.0


def test_retry_counts_and_bounds():
    sleeps: list[float] = []
    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) < 3:
            raise TransientError("429", retry_after=0.25)
        return "ok"

    policy = RetryPolicy(max_retries=5)
    assert policy.call(flaky, "t", sleep=sleeps.append) == "ok" and sleeps == [0.25, 0.25]

    def always():
        raise TransientError("boom")

    with pytest.raises(RetriesExhaustedError, match="gave up after 3 attempts"):
        RetryPolicy(max_retries=2, base_s=0).call(always, "t", sleep=lambda s: None)
    with pytest.raises(RetriesExhaustedError):  # the total bound stops it before max_retries
        RetryPolicy(max_retries=100, base_s=10, max_total_s=1).call(
            always, "t", sleep=lambda s: None
        )

    def user_error():
        attempts.append(1)
        raise BadRequestError("bad")

    attempts.clear()
    with pytest.raises(BadRequestError):
        policy.call(user_error, "t", sleep=lambda s: None)
    assert len(attempts) == 1


def test_config_is_strict_and_errors_are_one_line():
    with pytest.raises(ConfigError, match="temprature"):
        make_llm({"backend": "local", "temprature": 1})
    with pytest.raises(ConfigError, match="backend"):
        make_llm(backend="gemini")
    with pytest.raises(ConfigError, match="set `model`"):
        make_llm(backend="openai", cache="off")
    assert LLMConfig().model == "embedded" and LLMConfig(cache="off").cache == "off"


def test_unknown_local_model_is_a_clear_error(tmp_path):
    from stackelberg.llm import ModelNotFoundError

    with pytest.raises(ModelNotFoundError, match="cannot load model"):
        make_llm(backend="local", model=str(tmp_path / "no-such-model"), cache="off")


def test_importing_llm_does_not_import_torch():
    code = (
        "import sys, stackelberg.llm; "
        "bad = [m for m in ('torch', 'transformers', 'anthropic') if m in sys.modules]; "
        "sys.exit(str(bad) if bad else 0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class Words:
    """A token counter that counts words, with a small window."""

    context_window = 20

    def count_tokens(self, text):
        return len(text.split())


def test_fit_history_drops_the_oldest_whole_items():
    history = [f"m{i} a b" for i in range(10)]  # 3 words each

    def build(kept):
        return "system rules here " + " ".join(kept)

    prompt, dropped = fit_history(Words(), build, history, reserve=5)
    assert dropped == 6 and prompt == build(history[6:])  # 3 + 3 * 4 words = 15 = 20 - 5
    assert fit_history(Words(), build, history[:2])[1] == 0
    with pytest.raises(ContextLengthError):
        fit_history(Words(), build, history, reserve=18)
