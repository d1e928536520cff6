"""A tree of token segments packed into one row: which token may attend to which, and the
position each token would have on its own root-to-leaf path.

Scoring packs a candidate and its responses after a cached context this way; GRPO packs a
prompt and its group's completions. Either way each segment sees its ancestors and itself
(causally), never its siblings, so one forward equals one plain forward per path while the
shared start is computed once.
"""

from __future__ import annotations

import torch


def tree_layout(
    prefix_len: int, lengths: list[int], parents: list[int | None]
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(allowed, positions)`` of segments of ``lengths`` packed after ``prefix_len`` tokens
    that every segment sees (a cached prefix; 0 without one).

    ``parents[i]`` is the segment ``i`` continues (an earlier one) or None; ``allowed`` is
    ``[q, prefix_len + q]`` booleans for the ``q`` packed tokens, ``positions`` their ``q``
    position ids (a segment's continue from its parent's end, or from the prefix's).
    """
    offsets = [sum(lengths[:i]) for i in range(len(lengths))]
    q = sum(lengths)
    allowed = torch.zeros((q, prefix_len + q), dtype=torch.bool)
    allowed[:, :prefix_len] = True
    starts: list[int] = []  # position of each segment's first token
    pieces = []
    for i, n in enumerate(lengths):
        a, parent = prefix_len + offsets[i], parents[i]
        rows = slice(offsets[i], offsets[i] + n)
        allowed[rows, a : a + n] = torch.ones((n, n), dtype=torch.bool).tril()
        while parent is not None:
            pa = prefix_len + offsets[parent]
            allowed[rows, pa : pa + lengths[parent]] = True
            parent = parents[parent]
        parent = parents[i]
        starts.append(prefix_len if parent is None else starts[parent] + lengths[parent])
        pieces.append(starts[i] + torch.arange(n))
    positions = torch.cat(pieces) if pieces else torch.zeros(0, dtype=torch.long)
    return allowed, positions


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """An attention bias from a boolean mask: 0 where allowed, the dtype's minimum not."""
    bias = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return bias.masked_fill(~allowed, torch.finfo(dtype).min)
