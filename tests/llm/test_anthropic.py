"""The anthropic backend (official SDK) against a local fake /v1/messages server."""

from __future__ import annotations

import pytest

from stackelberg.llm import (
    AuthError,
    BadRequestError,
    ContextLengthError,
    MissingAPIKeyError,
    ModelNotFoundError,
    RetriesExhaustedError,
    UnsupportedError,
    make_llm,
)

from .fake_server import MODEL, FakeServer, check_retry_after_within_bound


@pytest.fixture
def server():
    with FakeServer() as s:
        yield s


def backend(server, tmp_path, monkeypatch, **kw):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    cfg = {
        "backend": "anthropic",
        "model": MODEL,
        "base_url": server.url,
        "timeout_s": 0.5,
        "max_retries": 3,
        "retry_base_s": 0.01,
        "cache": str(tmp_path / "cache.sqlite"),
        **kw,
    }
    return make_llm(cfg)


def test_generate_splits_system_and_samples_n_times(server, tmp_path, monkeypatch):
    llm = backend(server, tmp_path, monkeypatch)
    chat = [{"role": "system", "content": "terse"}, {"role": "user", "content": "who is it?"}]
    out = llm.generate([chat, "plain"], n=2, stop=["\n"])
    assert out[0] == ["claude:who is it?|sys=terse|stop=['\\n']"] * 2
    assert out[1] == ["claude:plain|sys=None|stop=['\\n']"] * 2
    assert server.count("/v1/messages") == 4
    bodies = [b for p, b in server.requests if p == "/v1/messages"]
    assert all("top_p" not in b and b["max_tokens"] == 64 for b in bodies)
    llm.generate([chat, "plain"], n=2, stop=["\n"])
    assert server.count("/v1/messages") == 4  # served from the cache


@pytest.mark.parametrize("fault", ["429", "529", "hang", "badjson"])
def test_transient_fault_is_retried(server, tmp_path, monkeypatch, fault):
    server.hang_s = 1.5
    server.faults["/v1/messages"] = [fault]
    llm = backend(server, tmp_path, monkeypatch)
    assert llm.generate(["again"]) == [["claude:again|sys=None|stop=None"]]
    assert server.count("/v1/messages") == 2


def test_persistent_fault_gives_up(server, tmp_path, monkeypatch):
    server.faults["/v1/messages"] = ["500"] * 10
    with pytest.raises(RetriesExhaustedError, match="gave up after 2 attempts"):
        backend(server, tmp_path, monkeypatch, max_retries=1).generate(["x"])
    assert server.count("/v1/messages") == 2


@pytest.mark.parametrize(
    "fault, error",
    [("401", AuthError), ("400ctx", ContextLengthError), ("409", BadRequestError)],
)
def test_user_errors_are_not_retried(server, tmp_path, monkeypatch, fault, error):
    server.faults["/v1/messages"] = [fault]
    llm = backend(server, tmp_path, monkeypatch)
    assert llm.client.max_retries == 0  # the SDK's own retries stay off: one policy decides
    with pytest.raises(error) as err:
        llm.generate(["x"])
    assert "\n" not in str(err.value)
    assert server.count("/v1/messages") == 1


def test_retry_after_is_honoured_within_the_total_bound(server, tmp_path, monkeypatch, caplog):
    llm = backend(server, tmp_path, monkeypatch, retry_max_total_s=5)
    check_retry_after_within_bound(llm, server, "/v1/messages", lambda: caplog.text)


def test_unknown_model(server, tmp_path, monkeypatch):
    with pytest.raises(ModelNotFoundError, match="claude-nope"):
        backend(server, tmp_path, monkeypatch, model="claude-nope").generate(["x"])
    assert server.count("/v1/messages") == 1


def test_missing_key(server, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        make_llm(backend="anthropic", model=MODEL, cache="off")


def test_score_is_unsupported_and_names_the_alternatives(server, tmp_path, monkeypatch):
    llm = backend(server, tmp_path, monkeypatch)
    with pytest.raises(UnsupportedError, match="'local' or 'openai'"):
        llm.score("ctx", ["a"])
    assert llm.count_tokens("x" * 30) >= 10 and llm.context_window == 200_000
