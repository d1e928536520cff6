"""Layer 2: LLM backends behind one small interface (generate, score), with a response cache.

    from stackelberg.llm import LLMConfig, make_llm, GenerateRequest, ScoreRequest
    llm = make_llm(LLMConfig())            # the embedded SmolLM2-135M-Instruct on CPU
    llm.generate(["Hello"], n=2, seed=1)   # [[sample, sample]]
    llm.score("The sky is", [" blue"])     # [[logprob of " blue"]]

Importing this package does not import torch or transformers; ``make_llm`` does, for the
``local`` backend only.
"""

from __future__ import annotations

from stackelberg.llm.base import (
    Backend,
    GenerateRequest,
    Message,
    Prompt,
    SamplingParams,
    ScoreRequest,
    plain_chat,
)
from stackelberg.llm.cache import ResponseCache, open_cache
from stackelberg.llm.config import LLMConfig, make_llm
from stackelberg.llm.errors import (
    AuthError,
    BadRequestError,
    ConfigError,
    ContextLengthError,
    LLMError,
    MissingAPIKeyError,
    ModelNotFoundError,
    RetriesExhaustedError,
    TransientError,
    UnsupportedError,
)
from stackelberg.llm.fit import fit_history
from stackelberg.llm.retry import RetryPolicy

__all__ = [
    "AuthError",
    "Backend",
    "BadRequestError",
    "ConfigError",
    "ContextLengthError",
    "GenerateRequest",
    "LLMConfig",
    "LLMError",
    "Message",
    "MissingAPIKeyError",
    "ModelNotFoundError",
    "Prompt",
    "ResponseCache",
    "RetriesExhaustedError",
    "RetryPolicy",
    "SamplingParams",
    "ScoreRequest",
    "TransientError",
    "UnsupportedError",
    "fit_history",
    "make_llm",
    "open_cache",
    "plain_chat",
]
