"""The errors of the llm layer: one class per thing a user can do something about.

Every error prints as one line that names the bad value, where it came from and what to do;
callers (CLIs, stages) catch ``LLMError`` and print it instead of a traceback. An API's
HTTP status becomes one of them here (``status_error``), for every API backend.
"""

from __future__ import annotations

import email.utils
import time


class LLMError(Exception):
    """Base of every error raised by ``stackelberg.llm``."""


class ConfigError(LLMError):
    """A bad or incomplete configuration (unknown backend option, missing API key)."""


class MissingAPIKeyError(ConfigError):
    """The backend needs an API key and the environment variable holding it is unset."""


class AuthError(LLMError):
    """The server rejected the API key (401/403)."""


class ModelNotFoundError(LLMError):
    """The model name is not served by the server, or not found on this machine."""


class BadRequestError(LLMError):
    """The server refused the request as malformed (400/422); retrying cannot help."""


class ContextLengthError(BadRequestError):
    """The prompt (plus the tokens to generate) is longer than the model's context window."""


class UnsupportedError(LLMError):
    """The backend cannot do this at all (e.g. log-probabilities from Anthropic)."""


class TransientError(LLMError):
    """A failure that may pass on retry: 429, 5xx, timeout, connection error, malformed body.

    ``retry_after`` is the server's requested wait in seconds, when it sent one.
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RetriesExhaustedError(LLMError):
    """A transient failure that persisted through every allowed retry."""


#: Phrases of a server's error message that mean the prompt did not fit the context window.
CONTEXT_MARKERS = ("maximum context length", "context length", "too long", "max_model_len")


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (a number or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time()) if when else None


def status_error(
    status: int,
    message: str,
    *,
    backend: str,
    where: str,
    model: str,
    key_env: str,
    retry_after: str | None = None,
) -> LLMError:
    """The error of an API answer with HTTP status ``status`` (400 or more), the same for
    every API backend, so a user reads one vocabulary and retries follow one rule.

    ``where`` names who answered (a URL, "Anthropic"), ``message`` is the server's error
    text, ``key_env`` the variable a rejected key came from and ``retry_after`` the answer's
    Retry-After header. 429 and 5xx are transient (retried); the rest are the user's to fix.
    """
    if status == 429 or status >= 500:
        return TransientError(
            f"{where} answered {status}: {message}", retry_after=parse_retry_after(retry_after)
        )
    if status in (401, 403):
        return AuthError(
            f"{backend} backend: {where} rejected the API key ({status}); set {key_env} or "
            "the variable named by api_key_env"
        )
    if status == 404:
        if "model" in message.lower():
            return ModelNotFoundError(
                f"{backend} backend: model {model!r} is not served at {where}: {message}"
            )
        return UnsupportedError(f"{backend} backend: {where} does not exist (404): {message}")
    if status == 413 or any(m in message.lower() for m in CONTEXT_MARKERS):
        return ContextLengthError(
            f"{backend} backend: {where} refused the request as too long ({status}): {message}"
        )
    return BadRequestError(f"{backend} backend: {where} refused the request ({status}): {message}")
