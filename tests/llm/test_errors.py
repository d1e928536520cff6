"""The one mapping of an API's HTTP status to the llm layer's errors, shared by the API
backends (their own tests check that each backend goes through it)."""

from __future__ import annotations

import pytest

from stackelberg.llm.errors import (
    AuthError,
    BadRequestError,
    ContextLengthError,
    ModelNotFoundError,
    TransientError,
    UnsupportedError,
    status_error,
)


def mapped(status: int, message: str = "nope", retry_after: str | None = None):
    return status_error(
        status,
        message,
        backend="openai",
        where="http://h/v1/completions",
        model="m-1",
        key_env="OPENAI_API_KEY",
        retry_after=retry_after,
    )


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (429, "slow down", TransientError),
        (500, "boom", TransientError),
        (529, "overloaded", TransientError),
        (401, "bad key", AuthError),
        (403, "forbidden", AuthError),
        (404, "The model `m-1` does not exist.", ModelNotFoundError),
        (404, "no route", UnsupportedError),
        (413, "payload", ContextLengthError),
        (400, "This model's maximum context length is 8192 tokens", ContextLengthError),
        (400, "prompt is too long: 300000 tokens > 200000 maximum", ContextLengthError),
        (400, "temperature must be positive", BadRequestError),
        (422, "unprocessable", BadRequestError),
    ],
)
def test_each_status_is_the_error_a_user_can_act_on(status, message, kind):
    err = mapped(status, message)
    assert type(err) is kind
    assert "\n" not in str(err)
    assert message in str(err) or kind is AuthError  # a key's refusal: what to set instead


def test_the_message_names_what_to_do():
    assert "set OPENAI_API_KEY" in str(mapped(401))
    assert "model 'm-1' is not served at http://h/v1/completions" in str(
        mapped(404, "unknown model m-1")
    )
    assert str(mapped(400, "bad")) == (
        "openai backend: http://h/v1/completions refused the request (400): bad"
    )


def test_only_a_transient_error_carries_the_servers_wait():
    assert mapped(429, retry_after="7").retry_after == 7.0
    assert mapped(503, retry_after="Wed, 21 Oct 2015 07:28:00 GMT").retry_after == 0.0  # past
    assert mapped(503).retry_after is None
