"""Key/value caches of the local backend.

Two costs dominate a CPU run of many game prompts, and each has its own remedy here:

- ``GrowingLayer``: the stock dynamic cache concatenates the whole cache at every decode
  step (a copy of every layer's keys and values per token); this layer keeps spare room in
  a buffer and appends in place.
- ``PrefixStore``: prompts of one game share long starts (the rules; a player's earlier
  prompt is the start of its next one, since history only grows at the end). The store
  keeps the keys and values of prompt blocks of ``block`` tokens, keyed by a hash of the
  whole prefix up to the block's end, so a new prompt computes only what no earlier prompt
  had. Reused blocks change float rounding (a block computed alone vs. in one pass with the
  rest), not the numbers a caller sees beyond ~1e-6.
"""

from __future__ import annotations

import hashlib
from array import array
from collections import OrderedDict
from collections.abc import Sequence

import torch
from transformers.cache_utils import DynamicLayer

#: tokens per stored prefix block
BLOCK_TOKENS = 16


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

    ``keys``/``values`` are always views ``buffer[:, :, :n]``; cutting them back (assigning a
    shorter view) is allowed and the next append overwrites what was cut.
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
        if self.get_seq_length() > 0:
            n = self.keys.shape[-2]
            if _is_head_view(self.keys, self._k) and _is_head_view(self.values, self._v):
                self.adopt(self._k[indices], self._v[indices], n)
            else:
                super().batch_select_indices(indices)


def block_hashes(ids: Sequence[int], block: int = BLOCK_TOKENS) -> list[bytes]:
    """The key of each full block of ``ids``: a hash of every token up to the block's end."""
    out: list[bytes] = []
    prev = b""
    for start in range(0, len(ids) - block + 1, block):
        h = hashlib.blake2b(prev, digest_size=16)
        h.update(array("q", ids[start : start + block]).tobytes())
        prev = h.digest()
        out.append(prev)
    return out


class PrefixStore:
    """Keys and values of prompt blocks, least recently used evicted past ``max_bytes``.

    A block is one tensor ``[layers, 2, heads, block, dim]``. A lookup touches a chain from
    its end back to its start, so a block is never older than the blocks after it, and
    eviction takes the ends of chains first (a block whose parent is gone is unreachable).
    """

    def __init__(self, max_bytes: int, block: int = BLOCK_TOKENS) -> None:
        self.max_bytes = max_bytes
        self.block = block
        self._blocks: OrderedDict[bytes, torch.Tensor] = OrderedDict()
        self.bytes = 0
        self.hits = 0  # tokens served from the store
        self.misses = 0  # tokens computed

    def __len__(self) -> int:
        return len(self._blocks)

    def cached(self, hashes: Sequence[bytes]) -> int:
        """How many leading blocks of a chain are stored (they are marked as just used)."""
        n = 0
        while n < len(hashes) and hashes[n] in self._blocks:
            n += 1
        for h in reversed(hashes[:n]):
            self._blocks.move_to_end(h)
        return n

    def get(self, key: bytes) -> torch.Tensor:
        return self._blocks[key]

    def put(self, key: bytes, kv: torch.Tensor) -> None:
        """Store one block (``kv`` is kept as given: pass a tensor that owns its memory)."""
        if key in self._blocks or self.max_bytes <= 0:
            return
        size = kv.numel() * kv.element_size()
        if size > self.max_bytes:
            return
        while self._blocks and self.bytes + size > self.max_bytes:
            _, old = self._blocks.popitem(last=False)
            self.bytes -= old.numel() * old.element_size()
        self._blocks[key] = kv
        self.bytes += size

    def clear(self) -> None:
        self._blocks.clear()
        self.bytes = 0


__all__ = ["BLOCK_TOKENS", "GrowingLayer", "PrefixStore", "block_hashes"]
