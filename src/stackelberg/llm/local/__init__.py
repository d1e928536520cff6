"""The ``local`` backend: a transformers causal LM in this process, on CPU or GPU.

Generation is our own sampling loop over the KV cache, many sequences per forward pass, each
sequence with its own random stream (keyed by seed, sample and step) so that a request's
output does not depend on its batch, the whole batch sampled at once on the model's device
(``sampling``, ``decode``). Prompts reuse the keys and values of earlier prompts' shared
starts (``prefill``). Scoring computes shared starts once and packs continuations as a tree
(``scoring``). Loading, CPU threads and the few transformers internals the backend leans on
have a module each (``loading``, ``threads``, ``hf_internals``).
"""

from __future__ import annotations

from stackelberg.llm.local.backend import LocalBackend
from stackelberg.llm.local.loading import adapter_digest, merge_adapter, quantize_int8
from stackelberg.llm.local.prefill import (
    BLOCK_TOKENS,
    PAD_SLACK,
    Prefill,
    PrefixBudget,
    PrefixStore,
    block_hashes,
    pad_groups,
)
from stackelberg.llm.local.sampling import cut_at_stop, row_uniforms, sample_seed, sample_tokens
from stackelberg.llm.local.scoring import PACK_TOKENS
from stackelberg.llm.local.threads import busy_cores_elsewhere, set_threads

__all__ = [
    "BLOCK_TOKENS",
    "PACK_TOKENS",
    "PAD_SLACK",
    "LocalBackend",
    "Prefill",
    "PrefixBudget",
    "PrefixStore",
    "adapter_digest",
    "block_hashes",
    "busy_cores_elsewhere",
    "cut_at_stop",
    "merge_adapter",
    "pad_groups",
    "quantize_int8",
    "row_uniforms",
    "sample_seed",
    "sample_tokens",
    "set_threads",
]
