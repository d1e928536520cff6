"""The errors of the llm layer: one class per thing a user can do something about.

Every error prints as one line that names the bad value, where it came from and what to do;
callers (CLIs, stages) catch ``LLMError`` and print it instead of a traceback.
"""

from __future__ import annotations


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
