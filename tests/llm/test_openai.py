"""The openai backend against a local fake vLLM server, including injected faults."""

from __future__ import annotations

import pytest

from stackelberg.llm import (
    AuthError,
    BadRequestError,
    ContextLengthError,
    GenerateRequest,
    LLMError,
    MissingAPIKeyError,
    ModelNotFoundError,
    RetriesExhaustedError,
    ScoreRequest,
    make_llm,
)

from .fake_server import (
    BOS,
    MODEL,
    FakeServer,
    check_retry_after_within_bound,
    fake_logprob,
    render,
    tokenize,
    word_spans,
    word_tokenize,
)


@pytest.fixture
def server():
    with FakeServer() as s:
        yield s


def backend(server: FakeServer, tmp_path, **kw):
    cfg = {
        "backend": "openai",
        "model": MODEL,
        "base_url": server.url + "/v1",
        "timeout_s": 0.5,
        "max_retries": 3,
        "retry_base_s": 0.01,
        "cache": str(tmp_path / "cache.sqlite"),
        **kw,
    }
    return make_llm(cfg)


def expected(ids: list[int], start: int) -> list[float]:
    return [fake_logprob(ids[i - 1], ids[i]) for i in range(start, len(ids))]


def test_generate_chat_and_text(server, tmp_path):
    llm = backend(server, tmp_path)
    chat = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
    out = llm.generate([chat, "raw text"], n=2, temperature=0.5, seed=9)
    assert out[0] == [f"echo:hello|seed=9|i={i}|t=0.5" for i in range(2)]
    assert out[1] == [f"echo:raw text|seed=9|i={i}|t=0.5" for i in range(2)]
    assert server.count("/v1/chat/completions") == 1 and server.count("/v1/completions") == 1
    body = dict(server.requests)["/v1/chat/completions"]
    assert body["max_tokens"] == 64 and body["top_p"] == 0.9 and body["n"] == 2


def test_concurrency_is_bounded(server, tmp_path):
    server.delay_s = 0.1
    llm = backend(server, tmp_path, max_concurrency=3, cache="off")
    out = llm.generate([f"prompt {i}" for i in range(9)], seed=1)
    assert [o[0].split("|")[0] for o in out] == [f"echo:prompt {i}" for i in range(9)]
    assert 1 < server.max_inflight <= 3


def test_score_uses_token_ids_and_prompt_logprobs(server, tmp_path):
    llm = backend(server, tmp_path)
    scores = llm.score_nested("ctx", ["ab", "c"], ["xy", "z"], joiner="|")
    ctx = tokenize("ctx", True)
    for c, cand in enumerate(["ab", "c"]):
        for r, resp in enumerate(["xy", "z"]):
            prefix = ctx + tokenize(cand + "|", False)
            assert scores[c][r] == pytest.approx(
                expected(prefix + tokenize(resp, False), len(prefix))
            )
    sent = [b["prompt"] for p, b in server.requests if p == "/v1/completions"]
    assert all(isinstance(p, list) and p[0] == BOS for p in sent) and len(sent) == 4


def test_score_tokenizes_each_whole_text_as_the_server_does(tmp_path):
    """Boundaries after a space, inside a word and before whitespace-led responses: every
    response is scored on the whole text's tokens that hold it."""
    context, joiner = "Player 3 says: ", "\nCarol:"
    cands, resps = ["I am the Seer.", "Play", ""], [" I agree.", "ers", " ", "I"]
    with FakeServer(tokens="words") as words:
        llm = backend(words, tmp_path, cache="off")
        scores = llm.score_nested(context, cands, resps, joiner)
        chat = [{"role": "user", "content": "vote?"}]
        [chat_scores] = llm.run_batch([ScoreRequest(chat, [" yes", "es"])])
    for c, cand in enumerate(cands):
        for r, resp in enumerate(resps):
            whole = context + cand + joiner + resp
            ids = word_tokenize(whole, True)
            begin = len(whole) - len(resp)
            first = 1 + next(i for i, (_, end) in enumerate(word_spans(whole)) if end > begin)
            assert scores[c][r] == pytest.approx(expected(ids, first), abs=1e-4)
    for resp, got in zip([" yes", "es"], chat_scores, strict=True):
        whole = render(chat) + resp
        ids = word_tokenize(whole, True)
        begin = len(whole) - len(resp)
        first = 1 + next(i for i, (_, end) in enumerate(word_spans(whole)) if end > begin)
        assert got == pytest.approx(expected(ids, first), abs=1e-4)


def test_score_chat_prefix_and_run_batch(server, tmp_path):
    llm = backend(server, tmp_path)
    chat = [{"role": "user", "content": "vote?"}]
    out = llm.run_batch([ScoreRequest(chat, ["yes", "no"]), GenerateRequest("hi", seed=2)])
    ids = tokenize(render(chat), True)
    assert out[0][1] == pytest.approx(expected(ids + tokenize("no", False), len(ids)))
    assert out[1] == ["echo:hi|seed=2|i=0|t=0.7"]


def test_score_requests_of_many_prefixes_are_sent_concurrently(server, tmp_path):
    server.delay_s = 0.1
    llm = backend(server, tmp_path, max_concurrency=4, cache="off")
    reqs = [ScoreRequest(f"table {i}", ["yes"]) for i in range(5)]  # one request per prefix
    out = llm.run_batch(reqs)
    for i, scores in enumerate(out):
        ids = tokenize(f"table {i}", True)
        assert scores[0] == pytest.approx(expected(ids + tokenize("yes", False), len(ids)))
    assert server.count("/v1/completions") == 5 and 1 < server.max_inflight <= 4


def test_context_window_count_and_render(server, tmp_path):
    llm = backend(server, tmp_path)
    assert llm.context_window == 4096
    assert llm.count_tokens("abcd") == 5  # BOS + 4 characters
    assert llm.render_chat([{"role": "user", "content": "q"}]) == "<user>q<assistant>"
    assert backend(server, tmp_path, context_window=100).context_window == 100


def test_without_tokenize_counts_are_estimated(server, tmp_path):
    llm = backend(server, tmp_path, base_url=server.url + "/api/v1")  # no /api/tokenize there
    assert llm.count_tokens("x" * 30) == 11 and llm.count_tokens("abc") == 2
    assert server.count("/api/tokenize") == 1  # asked once, then estimated


@pytest.mark.parametrize("fault", ["429", "500", "hang", "badjson"])
def test_transient_fault_is_retried(server, tmp_path, fault):
    server.hang_s = 1.5  # past the 0.5 s timeout
    server.faults["/v1/chat/completions"] = [fault]
    llm = backend(server, tmp_path)
    out = llm.generate([[{"role": "user", "content": "again"}]], seed=3)
    assert out == [["echo:again|seed=3|i=0|t=0.7"]]
    assert server.count("/v1/chat/completions") == 2


def test_persistent_fault_gives_up_after_max_retries(server, tmp_path):
    server.faults["/v1/completions"] = ["500"] * 10
    llm = backend(server, tmp_path, max_retries=2)
    with pytest.raises(RetriesExhaustedError, match="gave up after 3 attempts") as err:
        llm.generate(["x"])
    assert "\n" not in str(err.value)
    assert server.count("/v1/completions") == 3


def test_failed_batch_keeps_the_rest_in_cache(server, tmp_path):
    server.poison["POISON"] = "500"
    llm = backend(server, tmp_path, max_retries=1)
    prompts = ["one", "two POISON", "three"]
    with pytest.raises(RetriesExhaustedError):
        llm.generate(prompts, seed=4)
    assert len(llm.cache) == 2
    server.poison.clear()
    before = server.count("/v1/completions")
    out = llm.generate(prompts, seed=4)
    assert server.count("/v1/completions") == before + 1  # only the failed prompt is re-sent
    assert out[1] == ["echo:two POISON|seed=4|i=0|t=0.7"]
    llm.generate(prompts, seed=4)
    assert server.count("/v1/completions") == before + 1


@pytest.mark.parametrize(
    "fault, error",
    [("401", AuthError), ("400ctx", ContextLengthError), ("409", BadRequestError)],
)
def test_user_errors_are_not_retried(server, tmp_path, fault, error):
    server.faults["/v1/completions"] = [fault]
    with pytest.raises(error):
        backend(server, tmp_path).generate(["x"])
    assert server.count("/v1/completions") == 1


def test_retry_after_is_honoured_within_the_total_bound(server, tmp_path, caplog):
    llm = backend(server, tmp_path, retry_max_total_s=5)
    check_retry_after_within_bound(llm, server, "/v1/completions", lambda: caplog.text)


def test_unknown_model_is_a_clear_error(server, tmp_path):
    with pytest.raises(ModelNotFoundError, match="'nope' is not served"):
        backend(server, tmp_path, model="nope").generate(["x"])
    assert server.count("/v1/completions") == 1


def test_scoring_longer_than_the_context_fails_before_sending(server, tmp_path):
    llm = backend(server, tmp_path, context_window=10)
    with pytest.raises(ContextLengthError, match="needs 12 tokens"):
        llm.score("abcdef", ["ghijk"])
    assert server.count("/v1/completions") == 0


def test_missing_api_key(server, tmp_path, monkeypatch):
    monkeypatch.delenv("MY_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="MY_KEY"):
        backend(server, tmp_path, api_key_env="MY_KEY")
    monkeypatch.setenv("MY_KEY", "sk-test")
    llm = backend(server, tmp_path, api_key_env="MY_KEY")
    assert llm.http.headers["authorization"] == "Bearer sk-test"


def test_errors_are_llm_errors_with_one_line(server, tmp_path):
    server.faults["/v1/completions"] = ["401"]
    with pytest.raises(LLMError) as err:
        backend(server, tmp_path).generate(["x"])
    assert "\n" not in str(err.value) and "OPENAI_API_KEY" in str(err.value)
