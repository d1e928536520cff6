"""The llm configuration (from params files) and ``make_llm``, the one way to get a backend.

Backends are imported only when made, so ``import stackelberg.llm`` stays light (no torch,
no transformers, no anthropic SDK).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from stackelberg.llm.base import Backend
from stackelberg.llm.cache import open_cache
from stackelberg.llm.embedded import EMBEDDED_MODELS
from stackelberg.llm.errors import ConfigError, MissingAPIKeyError
from stackelberg.llm.retry import RetryPolicy
from stackelberg.settings import Settings, one_line

DEFAULT_OPENAI_BASE_URL = "http://localhost:8000/v1"  # where `vllm serve` listens
#: hosted OpenAI-compatible APIs that return no log-probabilities of a prompt
NO_PROMPT_LOGPROBS_HOSTS = ("api.openai.com", "generativelanguage.googleapis.com")


#: weights of a local model ('int8': CPU only)
Dtype = Literal["auto", "float32", "bfloat16", "float16", "int8", "bfloat16_if_native"]


class LLMConfig(Settings):
    """Which model to use and how to talk to it; unknown keys are an error."""

    backend: Literal["local", "openai", "anthropic"] = Field(
        "local",
        description="local: transformers in-process; openai: OpenAI-compatible server (vLLM); anthropic: Claude",
    )
    model: str = Field(
        "embedded",
        description="local: 'embedded' (SmolLM2-135M-Instruct), 'embedded-gemma3' (Gemma 3 "
        "270M, another family), a checkpoint folder or a cached model name; "
        "openai/anthropic: the served model's name",
    )
    base_url: str | None = Field(
        None, description="server URL; openai: default $OPENAI_BASE_URL or http://localhost:8000/v1"
    )
    api_key_env: str | None = Field(
        None,
        description="environment variable holding the API key (OPENAI_API_KEY / ANTHROPIC_API_KEY)",
    )
    timeout_s: float = Field(120.0, gt=0, description="timeout of one HTTP request")
    max_retries: int = Field(
        5, ge=0, description="retries of a transient failure (429, 5xx, timeout)"
    )
    retry_base_s: float = Field(
        0.5, ge=0, description="first backoff; doubles per retry, with jitter"
    )
    retry_max_total_s: float = Field(
        300.0, gt=0, description="no retry starts after this many seconds"
    )
    max_concurrency: int = Field(8, ge=1, description="HTTP requests in flight at once per batch")
    cache: str = Field(
        "default",
        description="response cache: 'default' ($STACKELBERG_CACHE_DIR/llm-cache.sqlite), a path, or 'off'",
    )
    device: str = Field(
        "auto", description="local: 'auto' (cuda if available), 'cpu', 'cuda', 'cuda:1'"
    )
    dtype: Dtype = Field(
        "auto",
        description="local: 'auto' is float32 on CPU, bfloat16 on GPU; 'bfloat16_if_native': "
        "bfloat16 on GPU and on a CPU with native bf16 (AVX512-BF16, AMX), else float32; "
        "'int8' (CPU): int8 weights, ~3x faster decoding for players, not for the Measurer",
    )
    batch_size: int = Field(
        32, ge=1, description="local: most sequences per generation forward pass"
    )
    threads: int | None = Field(
        None,
        ge=0,
        description="local on CPU: torch threads (each count computes numbers of its own); "
        "default OMP_NUM_THREADS, else the machine's cores; 1: never slow on a shared machine; "
        "0: the cores free when the backend starts (the numbers then following its load)",
    )
    context_window: int | None = Field(
        None, gt=0, description="override the model's context window"
    )
    adapter: str | None = Field(
        None,
        description="local: a PEFT LoRA adapter folder, run beside the model's shared weights "
        "(merged in where it holds more than LoRA matrices); openai: the name the server "
        "serves a LoRA adapter under (vllm serve --enable-lora --lora-modules NAME=FOLDER), "
        "which requests name as their model",
    )
    scores: bool | None = Field(
        None,
        description="whether the model can score text (log-probabilities of a prompt): "
        "default yes for local and for openai servers such as vLLM, no for anthropic and "
        "for the hosted OpenAI and Gemini APIs",
    )
    chat_template: bool = Field(
        True,
        description="local: render a chat with the model's chat template; false: as plain "
        "'role: content' lines, as a model without a template reads it (a differently "
        "prompted follower of the same weights)",
    )
    prefix_cache_mb: int | None = Field(
        None,
        ge=0,
        description="local: memory for the keys/values of prompt prefixes that later prompts "
        "reuse, one budget for all local models of a process (the largest asked for); "
        "null: 1/96 of the machine's memory, at most 4096",
    )

    @model_validator(mode="after")
    def _embedded_is_local(self) -> LLMConfig:
        if self.backend != "local" and self.model in EMBEDDED_MODELS:
            raise ValueError(
                f"{self.backend} backend: set `model` to the served model's name "
                f"({self.model!r} is a built-in model of the local backend)"
            )
        return self

    @model_validator(mode="after")
    def _plain_chat_is_local(self) -> LLMConfig:
        if self.backend != "local" and not self.chat_template:
            raise ValueError(
                f"chat_template: false is for the local backend; a {self.backend} server "
                "renders chats itself"
            )
        return self

    @model_validator(mode="after")
    def _adapter_fits_backend(self) -> LLMConfig:
        if self.adapter is None or self.backend == "local":
            return self
        if self.backend == "anthropic":
            raise ValueError("adapter: the anthropic backend serves no LoRA adapters")
        if any(c in self.adapter for c in "/\\") or self.adapter.startswith((".", "~")):
            raise ValueError(
                f"adapter: on the openai backend, the name the server serves a LoRA adapter "
                f"under (vllm serve --lora-modules NAME=FOLDER), not a folder: {self.adapter!r}"
            )
        return self

    @model_validator(mode="after")
    def _anthropic_cannot_score(self) -> LLMConfig:
        if self.backend == "anthropic" and self.scores:
            raise ValueError("scores: the anthropic backend returns no log-probabilities")
        return self

    def can_score(self) -> bool:
        """Whether this model can score options and responses by their log-probabilities."""
        if self.scores is not None:
            return self.scores
        if self.backend == "anthropic":
            return False
        if self.backend == "openai":
            url = self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
            return not any(host in url for host in NO_PROMPT_LOGPROBS_HOSTS)
        return True

    def with_adapter(self, folder: str | Path) -> LLMConfig:
        """This model with a trained adapter folder of the project: the local backend runs
        the folder beside its weights; a server serves it as the LoRA module named after it
        (``served_adapter_name``), answers not cached, since the name does not say which
        of the folder's versions the server loaded."""
        if self.backend != "openai":
            return self.model_copy(update={"adapter": str(folder)})
        return self.model_copy(update={"adapter": served_adapter_name(folder), "cache": "off"})

    def describe(self) -> str:
        """The model as a user names it: backend and model (and server, if any)."""
        where = f" at {self.base_url}" if self.base_url else ""
        return f"{self.backend} backend, model {self.model}{where}"

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_retries=self.max_retries,
            base_s=self.retry_base_s,
            max_total_s=self.retry_max_total_s,
        )


def served_adapter_name(folder: str | Path) -> str:
    """The LoRA module name a server serves an adapter folder of the project under: its path
    below models/, '/' as '-' (models/refiner/werewolf: refiner-werewolf), so that one
    ``--lora-modules NAME=FOLDER`` line per folder needs no table of names."""
    parts = Path(os.path.relpath(os.path.abspath(folder))).parts
    if not parts or parts[0] == "..":
        raise ConfigError(
            f"openai backend: a served adapter is named after its folder in the project "
            f"({Path.cwd()}); {str(folder)!r} is outside it"
        )
    return "-".join(parts[1:] if parts[0] == "models" and len(parts) > 1 else parts)


def api_key(config: LLMConfig, default_env: str, required: bool) -> str | None:
    """The API key from the configured (or default) environment variable."""
    env = config.api_key_env or default_env
    key = os.environ.get(env, "").strip() or None
    if key is None and (required or config.api_key_env):
        raise MissingAPIKeyError(
            f"{config.backend} backend: no API key; set the environment variable {env}"
        )
    return key


def make_llm(config: LLMConfig | dict[str, Any] | None = None, **overrides: Any) -> Backend:
    """Build the backend a config describes (a dict is validated first)."""
    try:
        if config is None:
            config = LLMConfig(**overrides)
        elif isinstance(config, dict):
            config = LLMConfig(**{**config, **overrides})
        elif overrides:
            config = config.model_copy(update=overrides)
            config = LLMConfig(**config.model_dump())
    except ValidationError as err:
        raise ConfigError(f"invalid llm config: {one_line(err, root='config')}") from None
    backend = _build(config, open_cache(config.cache))
    backend.can_score = config.can_score()
    return backend


def _build(config: LLMConfig, cache: Any) -> Backend:
    if config.backend == "local":
        from stackelberg.llm.local import LocalBackend

        return LocalBackend(
            config.model,
            device=config.device,
            dtype=config.dtype,
            batch_size=config.batch_size,
            context_window=config.context_window,
            cache=cache,
            threads=config.threads,
            adapter=config.adapter,
            prefix_cache_mb=config.prefix_cache_mb,
            chat_template=config.chat_template,
        )
    if config.backend == "openai":
        from stackelberg.llm.openai_compat import OpenAIBackend

        base_url = config.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
        key = api_key(config, "OPENAI_API_KEY", required="api.openai.com" in base_url)
        return OpenAIBackend(
            config.model,
            adapter=config.adapter,
            base_url=base_url,
            api_key=key,
            timeout_s=config.timeout_s,
            retry=config.retry_policy(),
            max_concurrency=config.max_concurrency,
            context_window=config.context_window,
            cache=cache,
        )
    from stackelberg.llm.anthropic_backend import AnthropicBackend

    key = api_key(config, "ANTHROPIC_API_KEY", required=True)
    return AnthropicBackend(
        config.model,
        api_key=key or "",
        base_url=config.base_url,
        timeout_s=config.timeout_s,
        retry=config.retry_policy(),
        max_concurrency=config.max_concurrency,
        context_window=config.context_window,
        cache=cache,
    )
