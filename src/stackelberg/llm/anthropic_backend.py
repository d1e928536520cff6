"""The ``anthropic`` backend: Claude through the official SDK; generation only.

The Messages API has no completion of raw text, no ``n`` and no seed: a text prompt is sent
as one user message, each of the ``n`` samples is its own request (sent concurrently), and
reproducibility comes from the response cache alone. No sampling parameter is sent: API
version 2026-10-21 (the default of SDK 2.x) refuses temperature, top_p and top_k, and the SDK
no longer accepts them, so a request's temperature and top_p only take part in its cache key.
The SDK's own retries are off; ``RetryPolicy`` retries instead, like every other backend.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import anthropic

from stackelberg.llm.base import (
    Backend,
    Message,
    Prompt,
    SamplingParams,
    estimate_tokens,
    plain_chat,
)
from stackelberg.llm.cache import ResponseCache
from stackelberg.llm.errors import LLMError, TransientError, UnsupportedError, status_error
from stackelberg.llm.pool import CallPool
from stackelberg.llm.retry import RetryPolicy

DEFAULT_CONTEXT_WINDOW = 200_000
NO_LOGPROBS = (
    "anthropic backend: Claude's API returns no log-probabilities, so it cannot score; "
    "use backend 'local' or 'openai' (a vLLM server) for scoring"
)


def split_system(prompt: Prompt) -> tuple[str | None, list[Message]]:
    """Anthropic takes system messages apart from the conversation."""
    if isinstance(prompt, str):
        return None, [{"role": "user", "content": prompt}]
    system = "\n\n".join(m["content"] for m in prompt if m["role"] == "system") or None
    return system, [
        {"role": m["role"], "content": m["content"]} for m in prompt if m["role"] != "system"
    ]


class AnthropicBackend(Backend):
    """Claude models through ``anthropic.Anthropic``."""

    name = "anthropic"
    can_score = False

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 8,
        context_window: int | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        super().__init__(model, cache)
        self.client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0
        )
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.pool = CallPool(max_concurrency)
        self._context_window = context_window or DEFAULT_CONTEXT_WINDOW

    @property
    def context_window(self) -> int:
        return self._context_window

    def render_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return plain_chat(messages, add_generation_prompt)

    def count_tokens(self, text: Prompt) -> int:
        """An upper estimate: counting exactly would cost an API call per count."""
        return estimate_tokens(text if isinstance(text, str) else self.render_chat(text))

    def _translate(self, err: Exception) -> LLMError:
        """The SDK's exception as one of ours (transient ones are retried)."""
        if isinstance(err, anthropic.APIStatusError):
            headers = getattr(err.response, "headers", {}) or {}
            return status_error(
                err.status_code,
                str(getattr(err, "message", err))[:300],
                backend=self.name,
                where="Anthropic",
                model=self.model,
                key_env="ANTHROPIC_API_KEY",
                retry_after=headers.get("retry-after"),
            )
        if isinstance(err, anthropic.APITimeoutError):
            return TransientError(f"no answer from Anthropic within {self.timeout_s:g}s")
        if isinstance(err, anthropic.APIConnectionError):
            return TransientError(f"cannot reach Anthropic: {err}")
        if isinstance(err, (anthropic.APIResponseValidationError, ValueError)):
            return TransientError(f"Anthropic sent a malformed response: {str(err)[:120]}")
        return LLMError(f"anthropic backend: {type(err).__name__}: {err}")

    def _sample(self, prompt: Prompt, params: SamplingParams) -> str:
        system, messages = split_system(prompt)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_new_tokens,
            "messages": messages,
        }
        if system:
            kwargs["system"] = system
        if params.stop:
            kwargs["stop_sequences"] = list(params.stop)

        def once() -> str:
            try:
                response = self.client.messages.create(**kwargs)
                return "".join(
                    getattr(block, "text", "")
                    for block in response.content
                    if getattr(block, "type", "") == "text"
                )
            except anthropic.AnthropicError as err:
                raise self._translate(err) from None
            except ValueError as err:  # a body that is not JSON
                raise self._translate(err) from None

        return self.retry.call(once, what="anthropic messages")

    def _generate(
        self,
        prompts: list[Prompt],
        ns: list[int],
        seeds: list[int],
        params: list[SamplingParams],
    ) -> Iterator[tuple[int, list[str]]]:
        owners = [i for i, n in enumerate(ns) for _ in range(n)]
        calls = [(lambda p=prompts[i], x=params[i]: self._sample(p, x)) for i in owners]
        samples: dict[int, dict[int, str]] = {}
        for k, text in self.pool.run(calls):
            samples.setdefault(owners[k], {})[k] = text
            i = owners[k]
            if len(samples[i]) == ns[i]:
                yield i, [samples[i][j] for j in sorted(samples[i])]

    def score_nested(
        self,
        context: Prompt,
        candidates: Sequence[str],
        responses: Sequence[str],
        joiner: str = "",
    ) -> list[list[list[float]]]:
        raise UnsupportedError(NO_LOGPROBS)

    def _score_nested(
        self, context: Prompt, candidates: list[str], responses: list[str], joiner: str
    ) -> Iterator[tuple[int, int, list[float]]]:
        raise UnsupportedError(NO_LOGPROBS)

    def close(self) -> None:
        self.pool.close()
        self.client.close()
        super().close()
