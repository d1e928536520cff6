"""The ``openai`` backend: any OpenAI-compatible HTTP server, vLLM first.

Generation uses /v1/chat/completions for chat messages and /v1/completions for raw text.
Scoring uses vLLM's ``prompt_logprobs`` on /v1/completions: each whole text (context,
candidate, joiner, response) is tokenized by vLLM's /tokenize endpoint and sent as token ids,
so token boundaries are exactly the whole text's (``llm.pieces``) and no text round trip can
shift them. Each (candidate, response) pair is one request; vLLM's
prefix caching computes the shared context once on the server. The requests of one batch
are sent concurrently, at most ``max_concurrency`` at a time.

With an ``adapter`` (a LoRA module the server serves, vLLM's ``--lora-modules NAME=FOLDER``)
every request names the adapter as its model, so one server runs the base model and its
trained adapters; the backend refuses, before any request, an adapter the server does not
list.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any

import httpx

from stackelberg.llm.base import (
    Backend,
    Message,
    Prompt,
    SamplingParams,
    estimate_tokens,
    plain_chat,
)
from stackelberg.llm.cache import ResponseCache
from stackelberg.llm.errors import (
    ConfigError,
    ContextLengthError,
    LLMError,
    TransientError,
    UnsupportedError,
    status_error,
)
from stackelberg.llm.pieces import NestedTokens, nested_tokens
from stackelberg.llm.pool import CallPool
from stackelberg.llm.retry import RetryPolicy

log = logging.getLogger(__name__)

#: Used when neither the config nor the server (vLLM's /v1/models) says.
FALLBACK_CONTEXT_WINDOW = 8192


def error_message(response: httpx.Response) -> str:
    """The server's error text: OpenAI's {"error": {"message"}} or vLLM's {"message"}/{"detail"}."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or err)[:300]
        return str(err)[:300]
    return str(body)[:300]


class OpenAIBackend(Backend):
    """Talks HTTP (httpx) to an OpenAI-compatible server."""

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        adapter: str | None = None,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 8,
        context_window: int | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        super().__init__(adapter or model, cache)  # the name every request sends
        self.base_url = base_url.rstrip("/")
        # vLLM serves /tokenize and /detokenize at the root, not under /v1.
        self.root_url = self.base_url.removesuffix("/v1")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(timeout=timeout_s, headers=headers)
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.pool = CallPool(max_concurrency)
        self._context_override = context_window
        self._token_cache: dict[str, list[int]] = {}
        self._no_tokenize = False
        if adapter:
            self._check_served()

    # ---- HTTP -------------------------------------------------------------------------------

    def _post_once(self, url: str, payload: dict[str, Any]) -> Any:
        """One attempt; every failure becomes an ``LLMError`` (transient ones are retried)."""
        try:
            response = self.http.post(url, json=payload)
        except httpx.TimeoutException:
            raise TransientError(f"no answer from {url} within {self.timeout_s:g}s") from None
        except httpx.TransportError as err:
            raise TransientError(f"cannot reach {url}: {err}") from None
        if response.status_code >= 400:
            raise status_error(
                response.status_code,
                error_message(response),
                backend=self.name,
                where=url,
                model=self.model,
                key_env="OPENAI_API_KEY",
                retry_after=response.headers.get("retry-after"),
            )
        try:
            return response.json()
        except ValueError:
            raise TransientError(f"{url} sent malformed JSON: {response.text[:80]!r}") from None

    def _post(self, path: str, payload: dict[str, Any], root: bool = False) -> Any:
        url = (self.root_url if root else self.base_url) + path
        return self.retry.call(lambda: self._post_once(url, payload), what=f"openai {path}")

    def _get_models(self) -> list[dict[str, Any]]:
        """The served models (vLLM adds max_model_len); empty when the server does not say."""
        try:
            response = self.http.get(self.base_url + "/models")
            response.raise_for_status()
            data = response.json().get("data", [])
        except (httpx.HTTPError, ValueError, AttributeError):
            return []
        return data if isinstance(data, list) else []

    def _check_served(self) -> None:
        """Refuse in one line an adapter the server does not list in /v1/models."""
        listed = [str(m.get("id")) for m in self._get_models() if isinstance(m, dict)]
        if self.model not in listed:
            raise ConfigError(
                f"openai backend: the server at {self.base_url} serves no adapter "
                f"{self.model!r} (its /v1/models lists {', '.join(listed) or 'nothing'}); "
                f"start it with --enable-lora --lora-modules {self.model}=FOLDER"
            )

    # ---- text and tokens --------------------------------------------------------------------

    @cached_property
    def _served_window(self) -> int | None:
        """The served model's max_model_len; a LoRA adapter's is its parent's (vLLM lists
        adapters without one)."""
        models = {m.get("id"): m for m in self._get_models() if isinstance(m, dict)}
        entry = models.get(self.model) or {}
        if not entry.get("max_model_len"):
            entry = models.get(entry.get("parent")) or {}
        return int(entry["max_model_len"]) if entry.get("max_model_len") else None

    @property
    def context_window(self) -> int:
        return self._context_override or self._served_window or FALLBACK_CONTEXT_WINDOW

    def _tokenize(self, prompt: Prompt, special: bool, remember: bool = True) -> list[int]:
        """Token ids from the server's /tokenize (chat messages rendered by its template);
        ``remember``: keep them for the next call (prompts, not one-off scored texts)."""
        key = repr((prompt, special))
        if key in self._token_cache:
            return self._token_cache[key]
        if isinstance(prompt, str):
            payload = {"model": self.model, "prompt": prompt, "add_special_tokens": special}
        else:
            payload = {"model": self.model, "messages": prompt, "add_generation_prompt": True}
        data = self._post("/tokenize", payload, root=True)
        try:
            ids = [int(t) for t in data["tokens"]]
        except (KeyError, TypeError, ValueError):
            raise LLMError(
                f"openai backend: /tokenize answered without tokens: {data!r:.100}"
            ) from None
        if remember:
            self._token_cache[key] = ids
        return ids

    def _whole_text(self, context: Prompt) -> tuple[str, bool]:
        """The scoring context as text, and whether its whole texts get special tokens: as
        a string prompt does, or, for chat messages, as reproduces the server's own ids of
        the rendered chat (a template that writes BOS itself must not get a second one)."""
        if isinstance(context, str):
            return context, True
        text, ids = self.render_chat(context), self._tokenize(context, special=True)
        for special in (False, True):
            if self._tokenize(text, special) == ids:
                return text, special
        log.warning("openai backend: the rendered chat does not re-tokenize to its own ids")
        return text, False

    def _nested_tokens(
        self, context: Prompt, candidates: list[str], responses: list[str], joiner: str
    ) -> NestedTokens:
        """The whole texts of every pair, tokenized by the server (concurrently) and cut into
        pieces where their tokens fall (``llm.pieces``)."""
        text, special = self._whole_text(context)

        def tokenize(texts: list[str]) -> list[list[int]]:
            calls = [lambda t=t: self._tokenize(t, special, remember=t == text) for t in texts]
            out: list[list[int]] = [[] for _ in texts]
            for i, ids in self.pool.run(calls):
                out[i] = ids
            return out

        return nested_tokens(tokenize, text, candidates, responses, joiner)

    def _scored_calls(self, toks: NestedTokens) -> list[tuple[int, int, Any]]:
        """One prompt_logprobs call per (candidate, response) pair; none for an empty one."""
        calls = []
        for c, cand in enumerate(toks.candidates):
            prefix = toks.context + cand
            for r, branch in enumerate(toks.branches[c]):
                ids, start = prefix + branch, len(prefix) + toks.leads[c][r]
                if start < len(ids):
                    calls.append((c, r, lambda x=ids, s=start: self._prompt_logprobs(x, s)))
                else:
                    calls.append((c, r, list))
        return calls

    def count_tokens(self, text: Prompt) -> int:
        """Exact with vLLM's /tokenize; an upper estimate on servers without it (OpenAI)."""
        if not self._no_tokenize:
            try:
                return len(self._tokenize(text, special=True))
            except UnsupportedError as err:
                log.warning("openai backend: %s; estimating token counts instead", err)
                self._no_tokenize = True
        return estimate_tokens(text if isinstance(text, str) else plain_chat(text))

    def render_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The server's rendering: /tokenize the messages, then /detokenize the ids."""
        payload = {
            "model": self.model,
            "messages": list(messages),
            "add_generation_prompt": add_generation_prompt,
        }
        try:
            tokens = self._post("/tokenize", payload, root=True)["tokens"]
            return self._post("/detokenize", {"model": self.model, "tokens": tokens}, root=True)[
                "prompt"
            ]
        except (LLMError, KeyError, TypeError):
            return plain_chat(messages, add_generation_prompt)

    # ---- generation -------------------------------------------------------------------------

    def _generate_one(self, prompt: Prompt, n: int, seed: int, params: SamplingParams) -> list[str]:
        payload: dict[str, Any] = {
            "model": self.model,
            "n": n,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_new_tokens,
            "seed": seed,
        }
        if params.stop:
            payload["stop"] = list(params.stop)
        chat = not isinstance(prompt, str)
        payload["messages" if chat else "prompt"] = prompt
        path = "/chat/completions" if chat else "/completions"

        def once() -> list[str]:
            data = self._post_once(self.base_url + path, payload)
            try:
                choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
                texts = [(c["message"]["content"] if chat else c["text"]) or "" for c in choices]
            except (KeyError, TypeError, AttributeError):
                raise TransientError(f"{path} answered without choices: {data!r:.100}") from None
            if len(texts) != n:
                raise TransientError(f"{path} answered {len(texts)} choices for n={n}")
            return texts

        return self.retry.call(once, what=f"openai {path}")

    def _generate(
        self,
        prompts: list[Prompt],
        ns: list[int],
        seeds: list[int],
        params: list[SamplingParams],
    ) -> Iterator[tuple[int, list[str]]]:
        calls = [
            (lambda p=p, n=n, s=s, x=x: self._generate_one(p, n, s, x))
            for p, n, s, x in zip(prompts, ns, seeds, params, strict=True)
        ]
        return self.pool.run(calls)

    # ---- scoring ------------------------------------------------------------------------------

    def _prompt_logprobs(self, ids: list[int], start: int) -> list[float]:
        """Log-probabilities of ``ids[start:]`` given what precedes them, from prompt_logprobs."""
        if len(ids) > self.context_window:
            raise ContextLengthError(
                f"openai backend: scoring needs {len(ids)} tokens but {self.model} has a "
                f"context window of {self.context_window}; shorten the context"
            )
        payload = {
            "model": self.model,
            "prompt": ids,
            "max_tokens": 1,
            "temperature": 0.0,
            "prompt_logprobs": 1,  # the prompt token itself is always included
        }

        def once() -> list[float]:
            data = self._post_once(self.base_url + "/completions", payload)
            try:
                per_token = data["choices"][0]["prompt_logprobs"]
                out = []
                for pos in range(start, len(ids)):
                    entry = per_token[pos][str(ids[pos])]
                    out.append(float(entry["logprob"] if isinstance(entry, dict) else entry))
            except (KeyError, IndexError, TypeError, ValueError):
                raise TransientError(
                    "/completions answered without usable prompt_logprobs (is this a vLLM server?)"
                ) from None
            return out

        return self.retry.call(once, what="openai /completions prompt_logprobs")

    def _score_nested(
        self, context: Prompt, candidates: list[str], responses: list[str], joiner: str
    ) -> Iterator[tuple[int, int, list[float]]]:
        calls = self._scored_calls(self._nested_tokens(context, candidates, responses, joiner))
        for i, logprobs in self.pool.run([call for _, _, call in calls]):
            c, r, _ = calls[i]
            yield c, r, logprobs

    def _score_many(
        self, prefixes: list[Prompt], continuations: list[list[str]]
    ) -> list[list[list[float]]]:
        """Every (prefix, continuation) of the batch as one request, all sent concurrently
        (within ``max_concurrency``): the server batches what arrives together."""
        calls = [
            (i, r, call)
            for i, (prefix, conts) in enumerate(zip(prefixes, continuations, strict=True))
            for _, r, call in self._scored_calls(self._nested_tokens(prefix, [""], conts, ""))
        ]
        out: list[list[list[float]]] = [[[] for _ in conts] for conts in continuations]
        for j, logprobs in self.pool.run([call for _, _, call in calls]):
            i, r, _ = calls[j]
            out[i][r] = logprobs
        return out

    def close(self) -> None:
        self.pool.close()
        self.http.close()
        super().close()
