"""No body crashes the service: any bytes, any JSON, any near-valid request get an answer or
a 4xx of one line, and the server answers a good request after them."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serving.conftest import WAIT_S, PretendModel, refine_message, serving
from stackelberg.games import GAME_NAMES

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
TEXTS = st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=3)
SEAT = st.integers(1, 5)
ROLES = st.sampled_from(["seer", "merlin", "werewolf", "villager", "first", "servant"])
TABLE = {
    "options": st.just({})
    | st.dictionaries(st.sampled_from(["max_days", "n_players", "roles", "split"]), JSON),
    "seed": st.integers(0, 2**63 - 1),
    "history": TEXTS,
}
REFINE = st.fixed_dictionaries(
    {
        "game": st.sampled_from(GAME_NAMES),
        "speaker": SEAT,
        "draft": st.text(min_size=1, max_size=40),
    },
    optional={**TABLE, "speaker_role": ROLES, "next_speaker": SEAT},
)
MEASURE = st.fixed_dictionaries(
    {
        "game": st.sampled_from(GAME_NAMES),
        "speaker": SEAT,
        "follower": SEAT,
        "candidates": TEXTS,
        "desired": TEXTS,
        "undesired": TEXTS,
    },
    optional={**TABLE, "follower_role": ROLES},
)


@st.composite
def mutated(draw, valid: st.SearchStrategy) -> dict:
    """A body drawn valid in shape, then up to two fields (or a new one) replaced by any
    JSON or dropped: the checks past the first get exercised too."""
    body = dict(draw(valid))
    for key in draw(
        st.lists(st.sampled_from([*body, "extra", "scenario"]), max_size=2, unique=True)
    ):
        if draw(st.booleans()):
            body[key] = draw(JSON)
        else:
            body.pop(key, None)
    return body


@st.composite
def chats(draw) -> dict:
    """A chat request around a (mutated) refine request, itself mutated."""
    content = json.dumps(draw(mutated(REFINE)))
    valid = st.fixed_dictionaries(
        {"model": st.just("refiner"), "messages": st.just([{"role": "user", "content": content}])},
        optional={
            "n": st.integers(1, 9),
            "temperature": st.floats(0, 2),
            "top_p": st.floats(0.01, 1),
            "max_tokens": st.integers(1, 300),
            "seed": st.integers(0, 2**64),
            "stream": st.just(False),
        },
    )
    return draw(mutated(valid))


def body_bytes(value) -> bytes:
    return value if isinstance(value, bytes) else json.dumps(value).encode()


@pytest.fixture(scope="module")
def server():
    with serving(PretendModel(), PretendModel()) as (url, _, _):
        with httpx.Client(base_url=url, timeout=WAIT_S) as http:
            yield http


def check_answer(answer: httpx.Response) -> None:
    assert answer.status_code in (200, 400, 404, 413), answer.text
    if answer.status_code != 200:
        message = answer.json()["error"]["message"]
        assert message and "\n" not in message and "Traceback" not in message


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=chats() | st.binary(max_size=64) | JSON)
def test_any_chat_body_gets_an_answer_or_a_4xx_of_one_line(server, body):
    check_answer(server.post("/chat/completions", content=body_bytes(body)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=mutated(MEASURE) | st.binary(max_size=64) | JSON)
def test_any_measure_body_gets_an_answer_or_a_4xx_of_one_line(server, body):
    check_answer(server.post("/measure", content=body_bytes(body)))


def test_the_server_answers_after_any_body(server):
    answer = server.post(
        "/chat/completions", json={"model": "refiner", "messages": [refine_message()]}
    )
    assert (
        answer.json()["choices"][0]["message"]["content"] == "Believe me: I saw Player 4 at night."
    )
