"""The Refiner service, called by the official openai client on a loopback port, over a
pretend model: the Refiner's own prompt, OpenAI's answer shape, one-line 4xx errors,
batching of concurrent clients, a bounded queue, a client that leaves, the Measurer."""

from __future__ import annotations

import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from serving.conftest import FAILS, WAIT_S, PretendModel, refine_message, serving
from stackelberg.games import make_game
from stackelberg.params import Params


def client(url: str, **options) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="unused", max_retries=0, **options)


def refine(url: str, **fields):
    return client(url).chat.completions.create(model="refiner", messages=[refine_message(**fields)])


def wait_until(condition, what: str) -> None:
    """Wait for a state the server reaches on its own (bounded, so a bug fails, not hangs)."""
    done = threading.Event()
    for _ in range(WAIT_S * 100):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError(f"the server never reached: {what}")


def test_a_refine_request_gets_the_refiners_rewrite_of_its_trained_prompt(pretend):
    with serving(pretend) as (url, _, _):
        answer = refine(url, speaker_role="seer", seed=3)
    [choice] = answer.choices
    assert choice.message.content == "Believe me: I saw Player 4 at night."
    assert choice.finish_reason == "stop" and answer.model == "refiner"
    assert choice.refiner == {
        "raw": "Believe me: I saw Player 4 at night.",
        "parsed": True,
        "ended": True,
    }
    assert answer.usage.completion_tokens == 8 and answer.usage.prompt_tokens > 0
    # the very prompt play and training give that speech: the first deal from seed 3 on that
    # makes Player 2 the seer, the game's trained style and budget, its profile's sampling
    [request] = pretend.requests
    game = make_game("werewolf")
    seed = next(s for s in range(3, 300) if game.reset(s).players[1].role == "seer")
    params = Params()
    profile = params.refiner_profile("werewolf")
    expected = profile.messages(
        pretend,
        game.reset(seed),
        1,
        2,
        "I saw Player 4 at night.",
        ["Day 1: Player 1 says: hello."],
    )
    assert request.prompt == expected and "Your secret role: seer" in expected[0]["content"]
    assert (request.temperature, request.top_p) == (profile.temperature, profile.top_p)
    assert (request.max_new_tokens, request.stop) == (profile.token_limit, ("\n",))


def test_sampling_fields_reach_the_model_and_n_gives_n_choices(pretend):
    with serving(pretend) as (url, _, _):
        answer = client(url).chat.completions.create(
            model="refiner",
            messages=[{"role": "system", "content": "ignored"}, refine_message()],
            n=3,
            temperature=0.2,
            top_p=0.5,
            max_tokens=12,
            seed=7,
        )
        models = [m.id for m in client(url).models.list()]
    assert [c.index for c in answer.choices] == [0, 1, 2]
    [request] = pretend.requests
    assert (request.n, request.temperature, request.top_p) == (3, 0.2, 0.5)
    assert (request.max_new_tokens, request.seed) == (12, 7)
    assert models == ["refiner"]


def error_of(call) -> openai.APIStatusError:
    with pytest.raises(openai.APIStatusError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"draft": None}, "draft"),
        ({"game": "chess"}, "unknown game 'chess'"),
        ({"speaker": 9}, "seat 9: werewolf here has seats 1 to 7"),
        ({"next_speaker": 2}, "next_speaker"),
        ({"speaker_role": "dragon"}, "role 'dragon'"),
        ({"options": {"scenarios": "/etc/passwd"}}, "options.scenarios"),
        ({"options": {"max_days": 0}}, "max_days"),
        ({"scenario": "x"}, "dealt by seed"),
        ({"mood": "calm"}, "unknown field 'mood'"),
        ({"history": ["line"] * 1001}, "history: 1001 lines"),
    ],
)
def test_a_bad_refine_request_is_a_400_of_one_line(pretend, fields, words):
    with serving(pretend) as (url, _, _):
        err = error_of(lambda: refine(url, **fields))
    assert err.status_code == 400 and words in err.message and "\n" not in err.message
    assert not pretend.requests


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"{not json", 400, "body: not valid JSON"),
        (b"[" * 100_000, 400, "body"),
        (b'"\\ud800"', 400, "body: not valid JSON"),
        (b"[]", 400, "body: expected a JSON object"),
        (json.dumps({"model": "refiner"}).encode(), 400, "body.messages: Field required"),
        (json.dumps({"model": "gpt", "messages": [refine_message()]}).encode(), 404, "'gpt'"),
        (
            json.dumps({"model": "refiner", "messages": [refine_message()], "stop": "x"}),
            400,
            "'stop'",
        ),
        (
            json.dumps({"model": "refiner", "messages": [refine_message()], "stream": True}),
            400,
            "stream",
        ),
        (json.dumps({"model": "refiner", "messages": [refine_message()], "n": 9}), 400, "n: 9"),
        (
            json.dumps({"model": "refiner", "messages": [{"role": "user", "content": "hi"}]}),
            400,
            "content: not valid JSON",
        ),
        (
            json.dumps({"model": "refiner", "messages": [{"role": "assistant", "content": "{}"}]}),
            400,
            "last message",
        ),
        (
            json.dumps(
                {"model": "refiner", "messages": [refine_message()], "temperature": float("nan")}
            ),
            400,
            "temperature",
        ),
        (b"x" * 300_000, 413, "over 262144 bytes"),
    ],
)
def test_a_malformed_body_is_a_4xx_of_one_line(pretend, body, status, words):
    with serving(pretend) as (url, _, _):
        answer = httpx.post(f"{url}/chat/completions", content=body, timeout=WAIT_S)
    error = answer.json()["error"]
    assert answer.status_code == status and words in error["message"], error
    assert "\n" not in error["message"] and not pretend.requests


def test_an_unknown_path_or_method_is_openais_error_object(pretend):
    with serving(pretend) as (url, _, _):
        missing = httpx.post(f"{url}/completions", json={}, timeout=WAIT_S)
        wrong = httpx.get(f"{url}/chat/completions", timeout=WAIT_S)
    assert missing.status_code == 404 and "/v1/completions" in missing.json()["error"]["message"]
    assert wrong.status_code == 405 and wrong.json()["error"]["type"] == "invalid_request_error"


def test_concurrent_clients_share_batched_calls():
    """32 clients: one request holds the model while the other 31 queue; they are served
    together in the next call, each with its own answer."""
    gate = threading.Event()
    pretend = PretendModel(gate)
    with serving(pretend, max_batch=32) as (url, _, collector):
        with ThreadPoolExecutor(32) as pool:
            first = pool.submit(refine, url, draft="speech 0")
            wait_until(pretend.entered.is_set, "the first call began")
            rest = [pool.submit(refine, url, draft=f"speech {i}") for i in range(1, 32)]
            wait_until(lambda: collector.queued() == 31, "31 requests queued")
            gate.set()
            answers = [f.result() for f in [first, *rest]]
    assert pretend.batches == [1, 31] and collector.batch_sizes == [1, 31]
    said = [a.choices[0].message.content for a in answers]
    assert said == [f"Believe me: speech {i}" for i in range(32)]


def test_a_request_the_model_cannot_take_fails_alone_with_a_500_of_one_line():
    gate = threading.Event()
    pretend = PretendModel(gate)
    with serving(pretend) as (url, _, collector):
        with ThreadPoolExecutor(3) as pool:
            first = pool.submit(refine, url)
            wait_until(pretend.entered.is_set, "the first call began")
            failing = pool.submit(refine, url, draft=f"say {FAILS}")
            fine = pool.submit(refine, url, draft="fine")
            wait_until(lambda: collector.queued() == 2, "2 requests queued")
            gate.set()
            first.result()
            err = error_of(failing.result)
            said = fine.result().choices[0].message.content
    assert collector.batch_sizes == [1, 2] and pretend.batches == [1, 1]
    assert said == "Believe me: fine"
    assert err.status_code == 500 and err.response.json()["error"]["message"] == (
        "the server failed: the pretend model cannot take '<fail>'"
    )


def test_a_full_queue_is_a_503_with_retry_after():
    gate = threading.Event()
    pretend = PretendModel(gate)
    with serving(pretend, max_queue=2) as (url, _, collector):
        with ThreadPoolExecutor(3) as pool:
            first = pool.submit(refine, url)
            wait_until(pretend.entered.is_set, "the first call began")
            queued = [pool.submit(refine, url) for _ in range(2)]
            wait_until(lambda: collector.queued() == 2, "2 requests queued")
            err = error_of(lambda: refine(url))
            gate.set()
            served = [f.result() for f in [first, *queued]]
    assert err.status_code == 503 and err.response.headers["retry-after"] == "1"
    assert "busy" in err.message and len(served) == 3


def test_a_client_that_leaves_is_dropped_and_the_server_goes_on():
    gate = threading.Event()
    pretend = PretendModel(gate)
    with serving(pretend) as (url, _, collector):
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(refine, url)
            wait_until(pretend.entered.is_set, "the first call began")
            host, port = httpx.URL(url).host, httpx.URL(url).port
            body = json.dumps({"model": "refiner", "messages": [refine_message(draft="gone")]})
            with socket.create_connection((host, port)) as leaving:
                leaving.sendall(
                    f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                    f"application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode()
                )
                wait_until(lambda: collector.waiting() == 1, "the request queued")
            wait_until(lambda: collector.waiting() == 0, "the request dropped")
            gate.set()
            first.result()
        after = refine(url, draft="after")
    assert after.choices[0].message.content == "Believe me: after"
    assert pretend.batches == [1, 1]
    assert "gone" not in json.dumps([r.prompt for r in pretend.requests])


def measure_body(**fields) -> dict:
    return {
        "game": "werewolf",
        "speaker": 2,
        "follower": 3,
        "follower_role": "guardian",
        "history": ["Night 1: you saved nobody."],
        "candidates": ["Vote Player 4.", "Player 4 is a wolf, vote them out now."],
        "desired": ["I will vote for Player 4."],
        "undesired": ["I trust Player 4.", "I will vote for Player 2."],
    } | fields


def test_the_measurer_scores_candidates_as_the_follower():
    measurer = PretendModel()
    with serving(PretendModel(), measurer) as (url, _, _):
        answer = httpx.post(f"{url}/measure", json=measure_body(), timeout=WAIT_S).json()
        models = [m.id for m in client(url).models.list()]
    assert models == ["refiner", "measurer"]
    # the pretend's log-probabilities: -0.1 per candidate word, -0.5 per response's place
    assert answer["rewards"] == pytest.approx([-0.3 + 0.8 + 1.3, -0.9 + 1.4 + 1.9])
    assert answer["history_lines_cut"] == 0 and len(answer["parts"]) == 2
    [(context, candidates, responses, _)] = measurer.scored
    assert "Your secret role: guardian" in context and "Night 1: you saved nobody." in context
    assert candidates == measure_body()["candidates"] and len(responses) == 3


def test_measuring_without_a_measurer_or_with_a_bad_body_is_a_4xx(pretend):
    with serving(pretend) as (url, _, _):
        absent = httpx.post(f"{url}/measure", json=measure_body(), timeout=WAIT_S)
    with serving(pretend, PretendModel()) as (url, _, _):
        empty = httpx.post(f"{url}/measure", json=measure_body(desired=[]), timeout=WAIT_S)
        itself = httpx.post(f"{url}/measure", json=measure_body(follower=2), timeout=WAIT_S)
    assert absent.status_code == 404 and "--measurer" in absent.json()["error"]["message"]
    assert empty.status_code == 400 and "desired" in empty.json()["error"]["message"]
    assert itself.status_code == 400 and "follow itself" in itself.json()["error"]["message"]
