"""Every contact of the local backend with transformers internals, in one small module.

The backend keeps its own KV-cache layer, builds caches from tensors it filled itself, cuts
them back, and calls a decoder whose cache keyword changed between releases. None of that is
a stable transformers API: it moves between minor releases, which is why pyproject.toml bounds
transformers to the range the suite runs against. When an upgrade breaks something, this is
the one file to read; no other module of ``llm.local`` goes below transformers' Auto classes.
"""

from __future__ import annotations

import inspect
import os
from itertools import pairwise
from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


def allow_grouped_kv_attention() -> None:
    """Let SDPA take grouped key/value heads even with an attention mask (CPU prefill).

    With a mask (every prefill here) transformers copies each key/value head once per query
    head unless this variable says the kernel takes grouped heads, which torch's CPU kernel
    does (read by ``transformers.integrations.sdpa_attention.use_gqa_in_sdpa``).
    """
    os.environ.setdefault("TRANSFORMERS_SDPA_FORCE_GQA", "1")


def _is_head_view(view: torch.Tensor, buffer: torch.Tensor | None) -> bool:
    """Whether ``view`` is ``buffer[:, :, :n]`` (so appending can write into the buffer)."""
    return (
        buffer is not None
        and view.dim() == 4
        # storage, not data_ptr: an empty view's data_ptr is 0
        and view.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr()
        and view.storage_offset() == buffer.storage_offset()
        and view.stride() == buffer.stride()
        and view.shape[:2] == buffer.shape[:2]
    )


class GrowingLayer(DynamicLayer):
    """A dynamic cache layer that appends in place into a buffer with spare room.

    The stock layer concatenates the whole cache at every decode step (a copy of every
    layer's keys and values per token). ``keys``/``values`` here are always views
    ``buffer[:, :, :n]``; cutting them back (assigning a shorter view) is allowed and the
    next append overwrites what was cut.
    """

    def __init__(self, spare: int = 64) -> None:
        super().__init__()
        self.spare = spare
        self._k: torch.Tensor | None = None
        self._v: torch.Tensor | None = None

    def adopt(self, keys: torch.Tensor, values: torch.Tensor, length: int) -> None:
        """Use ``keys``/``values`` (``[batch, heads, capacity, dim]``) as the buffer, holding
        ``length`` tokens already."""
        self.device = keys.device
        self.is_initialized = True
        self._k, self._v = keys, values
        self.keys, self.values = keys[:, :, :length], values[:, :, :length]

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        fresh = self.keys is None or self.keys.dim() != 4
        n = 0 if fresh else self.keys.shape[-2]
        m = key_states.shape[-2]
        fits = (
            not fresh
            and _is_head_view(self.keys, self._k)
            and _is_head_view(self.values, self._v)
            and self._k.shape[0] == key_states.shape[0]
            and n + m <= self._k.shape[-2]
        )
        if not fits:
            b, h, _, d = key_states.shape
            cap = n + m + max(self.spare, (n + m) // 4)
            k = key_states.new_empty((b, h, cap, d))
            v = value_states.new_empty((b, h, cap, value_states.shape[-1]))
            if n:
                k[:, :, :n] = self.keys
                v[:, :, :n] = self.values
            self._k, self._v = k, v
        self._k[:, :, n : n + m] = key_states
        self._v[:, :, n : n + m] = value_states
        self.keys, self.values = self._k[:, :, : n + m], self._v[:, :, : n + m]
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep (or repeat) the rows ``indices``. Dropping rows (indices increasing) moves
        the kept rows down within the buffer: a new buffer's fresh pages cost more to touch
        than the copy itself."""
        if self.get_seq_length() > 0:
            n = self.keys.shape[-2]
            if not (_is_head_view(self.keys, self._k) and _is_head_view(self.values, self._v)):
                super().batch_select_indices(indices)
                return
            rows = indices.tolist()
            if any(b <= a for a, b in pairwise(rows)) or rows[-1] >= self._k.shape[0]:
                self.adopt(self._k[indices], self._v[indices], n)
                return
            for to, row in enumerate(rows):  # to <= row: a row is read before it is written
                if to != row:
                    self._k[to, :, :n].copy_(self._k[row, :, :n])
                    self._v[to, :, :n].copy_(self._v[row, :, :n])
            self.adopt(self._k[: len(rows)], self._v[: len(rows)], n)


def cache_over(config: Any, kv: torch.Tensor, length: int, spare: int) -> DynamicCache:
    """A cache whose layers use slices of ``kv`` (``[layers, 2, rows, heads, capacity, dim]``)
    as their buffers, holding ``length`` tokens already and growing in place."""
    cache = DynamicCache(config=config)
    cache.layers = [GrowingLayer(spare) for _ in range(config.num_hidden_layers)]
    for layer, layer_kv in zip(cache.layers, kv, strict=True):
        layer.adopt(layer_kv[0], layer_kv[1], length)
    return cache


def cut_cache(cache: DynamicCache, length: int) -> None:
    """Cut every layer back to its first ``length`` tokens: views, no copy."""
    for layer in cache.layers:
        layer.keys = layer.keys[:, :, :length]
        layer.values = layer.values[:, :, :length]


def select_cache_rows(cache: DynamicCache, rows: torch.Tensor) -> None:
    """Keep (or repeat) the cache's batch rows ``rows``, in place."""
    cache.batch_select_indices(rows)


class DecoderCall:
    """Calls a decoder with a KV cache under the keyword its ``forward`` takes
    (``cache`` in newer releases, ``past_key_values`` before)."""

    def __init__(self, decoder: Any) -> None:
        self.decoder = decoder
        params = inspect.signature(decoder.forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"

    def __call__(
        self,
        ids: torch.Tensor,
        cache: Any,
        attention_mask: torch.Tensor | None,
        position_ids: torch.Tensor | None,
    ) -> tuple[torch.Tensor, Any]:
        """Hidden states (before the LM head) and the grown cache."""
        out = self.decoder(
            input_ids=ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=cache is not None,
            **{self.cache_kw: cache},
        )
        return out.last_hidden_state, getattr(out, self.cache_kw)
