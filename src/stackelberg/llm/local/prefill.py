"""Prompt prefill that reuses the keys and values of earlier prompts' shared starts.

Prompts of one game share long starts (the rules; a player's earlier prompt is the start of
its next one, since history only grows at the end). ``PrefixStore`` keeps the keys and values
of prompt blocks of ``block`` tokens, keyed by a hash of the whole prefix up to the block's
end, so a new prompt computes only what no earlier prompt had. Reused blocks change float
rounding (a block computed alone vs. in one pass with the rest), not the numbers a caller
sees beyond ~1e-6. Many prompts are prefilled side by side, in groups of similar length so
that little is padded.
"""

from __future__ import annotations

import hashlib
import os
from array import array
from collections import Counter, OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import torch

from stackelberg.llm.local.hf_internals import cache_over
from stackelberg.llm.local.model import LocalModel

#: tokens per stored prefix block
BLOCK_TOKENS = 16

#: A prefill group may compute this many times its real tokens (the rest is padding).
PAD_SLACK = 1.25


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


class PrefixBudget:
    """Memory that prefix stores share: past ``max_bytes``, the least recently used block of
    any of them goes first, so models loaded side by side (labeler, Measurer, players, a
    trained Refiner) never hold more than one budget between them."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._lru: OrderedDict[tuple[int, bytes], PrefixStore] = OrderedDict()

    def touch(self, store: PrefixStore, key: bytes) -> None:
        self._lru.move_to_end((id(store), key))

    def admit(self, store: PrefixStore, key: bytes, size: int) -> bool:
        """Make room for ``size`` bytes of ``store`` (evicting), False if it can never fit."""
        if size > self.max_bytes:
            return False
        while self._lru and self.bytes + size > self.max_bytes:
            (_, old), owner = self._lru.popitem(last=False)
            self.bytes -= owner.drop(old)
        self._lru[(id(store), key)] = store
        self.bytes += size
        return True

    def forget(self, store: PrefixStore) -> None:
        for entry in [e for e, owner in self._lru.items() if owner is store]:
            del self._lru[entry]


def machine_memory_bytes() -> int:
    """Physical memory of this machine (0 where the platform does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


#: the budget when none is configured: 1/96 of the machine's memory, at most 4 GiB (a
#: 24 GB machine: 256 MiB, room for the prompts of the default's tournament tables; twice
#: that reused 2% more of the Avalon tournament's tokens, for 0.3 GiB more memory)
def auto_prefix_cache_mb() -> int:
    total = machine_memory_bytes()
    return min(4096, total // 96 // 2**20) if total else 256


#: the budget that every local backend of this process shares
PROCESS_BUDGET = PrefixBudget(0)


class PrefixStore:
    """Keys and values of prompt blocks of one model, least recently used evicted first.

    A block is one tensor ``[layers, 2, heads, block, dim]``. A lookup touches a chain from
    its end back to its start, so a block is never older than the blocks after it, and
    eviction takes the ends of chains first (a block whose parent is gone is unreachable).
    The memory limit is a ``PrefixBudget``: the store's own (``max_bytes``) or one shared.
    """

    def __init__(
        self, max_bytes: int = 0, block: int = BLOCK_TOKENS, budget: PrefixBudget | None = None
    ) -> None:
        self.budget = budget if budget is not None else PrefixBudget(max_bytes)
        self.block = block
        self._blocks: dict[bytes, torch.Tensor] = {}
        self.bytes = 0
        self.hits = 0  # tokens served from the store
        self.misses = 0  # tokens computed

    @property
    def max_bytes(self) -> int:
        return self.budget.max_bytes

    def __len__(self) -> int:
        return len(self._blocks)

    def cached(self, hashes: Sequence[bytes]) -> int:
        """How many leading blocks of a chain are stored (they are marked as just used)."""
        n = 0
        while n < len(hashes) and hashes[n] in self._blocks:
            n += 1
        for h in reversed(hashes[:n]):
            self.budget.touch(self, h)
        return n

    def get(self, key: bytes) -> torch.Tensor:
        return self._blocks[key]

    def put(self, key: bytes, kv: torch.Tensor) -> None:
        """Store one block (``kv`` is kept as given: pass a tensor that owns its memory)."""
        if key in self._blocks or self.max_bytes <= 0:
            return
        size = kv.numel() * kv.element_size()
        if self.budget.admit(self, key, size):
            self._blocks[key] = kv
            self.bytes += size

    def drop(self, key: bytes) -> int:
        """Remove one block (the budget evicts it); its size in bytes."""
        kv = self._blocks.pop(key)
        size = kv.numel() * kv.element_size()
        self.bytes -= size
        return size

    def clear(self) -> None:
        self.budget.forget(self)
        self.budget.bytes -= self.bytes
        self._blocks.clear()
        self.bytes = 0

    @contextmanager
    def own_budget(self) -> Iterator[None]:
        """This store alone in a budget of the shared one's size, emptied before and after:
        for work in another thread beside the stores of the shared budget. Neither side
        evicts the other's blocks, so what each computes (reused blocks round differently)
        does not depend on how the two threads interleave, and the shared budget's
        bookkeeping is never touched from two threads."""
        shared = self.budget
        self.clear()
        self.budget = PrefixBudget(shared.max_bytes)
        try:
            yield
        finally:
            self.clear()
            self.budget = shared


class Prefill(NamedTuple):
    """Prompts computed side by side: row ``r`` of each tensor is prompt ``order[r]``."""

    last: torch.Tensor  # hidden state of each prompt's last token, [rows, hidden]
    cache: Any  # the KV cache, with spare room for what follows
    mask: torch.Tensor  # [rows, width]: 1 where a cached position is a real token
    order: list[int]


def pad_groups(lengths: Sequence[int], slack: float = PAD_SLACK) -> list[tuple[int, int]]:
    """Consecutive slices of ascending ``lengths`` that each pad to at most ``slack`` times
    their real tokens: one forward per slice wastes little on padding."""
    groups: list[tuple[int, int]] = []
    start, total = 0, 0
    for i, n in enumerate(lengths):
        if i > start and (i - start + 1) * n > slack * (total + n):
            groups.append((start, i))
            start, total = i, 0
        total += n
    if lengths:
        groups.append((start, len(lengths)))
    return groups


class Prefiller:
    """Prefills prompts on ``model``, reusing and filling ``store``."""

    def __init__(self, model: LocalModel, store: PrefixStore) -> None:
        self.model = model
        self.store = store

    def prefill(
        self, rows: list[list[int]], spare: int = 0, chains: list[list[bytes]] | None = None
    ) -> Prefill:
        """The last hidden states, the KV cache and the attention mask of prompts side by side.

        Each row's stored prefix blocks are copied in and only its rest is computed. Rows are
        sorted by the length of their rest and computed in groups of similar length (one
        forward per group), so that short rests are not padded to the longest one. Row
        layout: ``[pad][stored P_i] | [rest R_i][pad]``, then ``spare`` free slots for
        decoding: pads are masked and positions count real tokens only; every pad query
        follows a real token, so no attention row is empty (no NaN). The full blocks computed
        here are stored for later prompts. ``chains``: the rows' block hashes, when the caller
        has them. The result's rows are in ``order`` (indices into ``rows``).
        """
        model, store = self.model, self.store
        size = store.block
        chains = chains or [block_hashes(ids, size) for ids in rows]
        if store.max_bytes > 0 and len(rows) > 1:
            self._prefill_shared(rows, chains)
        stored = [
            min(store.cached(c), (len(ids) - 1) // size)
            for ids, c in zip(rows, chains, strict=True)
        ]
        # The stored blocks each row reuses, held before this prefill's own blocks are put
        # (a put may evict them from the store when the budget is full).
        reused = [[store.get(h) for h in c[:n]] for c, n in zip(chains, stored, strict=True)]
        order = sorted(range(len(rows)), key=lambda r: len(rows[r]) - stored[r] * size)
        reused = [reused[r] for r in order]
        rows = [rows[r] for r in order]
        chains = [chains[r] for r in order]
        pre = [stored[r] * size for r in order]
        rest = [len(ids) - p for ids, p in zip(rows, pre, strict=True)]
        groups = pad_groups(rest)
        width = max(max(pre[a:b]) + rest[b - 1] for a, b in groups)
        cfg = model.lm.config
        heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        buf = torch.empty(
            (cfg.num_hidden_layers, 2, len(rows), heads, width + spare, dim),
            dtype=model.lm.dtype,
            device=model.device,
        )
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        last = []
        for a, b in groups:
            pmax, rmax = max(pre[a:b]), rest[b - 1]
            new_ids = torch.full((b - a, rmax), model.pad_id, dtype=torch.long)
            for r in range(a, b):
                p, n = pre[r], rest[r]
                buf[:, :, r, :, : pmax - p].zero_()  # masked, but must not be NaN
                buf[:, :, r, :, pmax + rmax : width].zero_()
                if p:
                    buf[:, :, r, :, pmax - p : pmax] = torch.cat(reused[r], dim=3)
                mask[r, pmax - p : pmax + n] = 1
                new_ids[r - a, :n] = torch.tensor(rows[r][p:])
            positions = torch.tensor(pre[a:b])[:, None] + torch.arange(rmax)[None]
            hidden, _ = model.forward(
                new_ids,
                cache_over(cfg, buf[:, :, a:b], pmax, spare),
                mask[a:b, : pmax + rmax].to(model.device),
                positions.to(model.device),
            )
            last.append(hidden[torch.arange(b - a), torch.tensor(rest[a:b]) - 1])
            for r in range(a, b):
                for j in range(pre[r] // size, len(rows[r]) // size):
                    at = pmax + j * size - pre[r]
                    store.put(chains[r][j], buf[:, :, r, :, at : at + size].clone())
        store.hits += sum(pre)
        store.misses += sum(rest)
        cache = cache_over(cfg, buf, width, spare)
        return Prefill(torch.cat(last), cache, mask.to(model.device), order)

    def _prefill_shared(self, rows: list[list[int]], chains: list[list[bytes]]) -> None:
        """Compute once, and store, the prefix blocks that several rows share and lack."""
        counts = Counter(h for chain in chains for h in set(chain))
        shared: dict[bytes, tuple[list[int], list[bytes]]] = {}
        for ids, chain in zip(rows, chains, strict=True):
            k = 0
            while k < len(chain) and counts[chain[k]] > 1:
                k += 1
            if k and chain[k - 1] not in shared and self.store.cached(chain[:k]) < k:
                shared[chain[k - 1]] = (ids[: k * self.store.block], chain[:k])
        if shared:
            prefixes, prefix_chains = zip(*shared.values(), strict=True)
            self.prefill(list(prefixes), chains=list(prefix_chains))
