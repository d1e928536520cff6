"""Token ids of scored text, cut into pieces exactly where the whole text's tokens fall.

The Measurer scores ``context + candidate + joiner + response``. Tokenizing the pieces one
by one gives other tokens than the whole text at a boundary (``': '`` + ``'I am'`` gives
``':', 'Ġ', 'I'`` where the whole text has ``':', 'ĠI'``), so the follower would be scored
on a text no player reads. Here every text is tokenized whole, and a piece's tokens are the
whole text's tokens from the first one that the text before the piece does not determine
(the longest common token prefix of the text before and the whole). A token that straddles a
boundary therefore belongs to the later piece: a response's scored tokens are every token
that carries some of it.

The shapes keep what the shared-prefix scorers reuse: one context for all candidates, one
candidate segment for all its responses, and per (candidate, response) a branch whose first
``lead`` tokens are text before the response that the response re-tokenized (unscored).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Named in the response cache's score keys: scores cut piece by piece are not served again.
TOKENIZATION = "whole-text"


@dataclass(frozen=True)
class NestedTokens:
    """``context + candidates[c] + branches[c][r]`` is the whole text of pair (c, r); the
    response's scored tokens are ``branches[c][r][leads[c][r]:]``."""

    context: list[int]
    candidates: list[list[int]]
    branches: list[list[list[int]]]
    leads: list[list[int]]

    def scored(self, c: int, r: int) -> list[int]:
        return self.branches[c][r][self.leads[c][r] :]

    def longest(self) -> int:
        """Tokens of the longest whole text."""
        return len(self.context) + max(
            (len(cand) + max(map(len, row), default=0))
            for cand, row in zip(self.candidates, self.branches, strict=True)
        )


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def nested_tokens(
    tokenize: Callable[[list[str]], list[list[int]]],
    context: str,
    candidates: Sequence[str],
    responses: Sequence[str],
    joiner: str = "",
) -> NestedTokens:
    """Cut the whole texts of every (candidate, response) pair into shared pieces.

    ``tokenize`` turns whole texts (all starting with ``context``) into token ids, special
    tokens included as for a first piece. An empty response has no branch.
    """
    heads = [context + cand + joiner for cand in candidates]
    wholes = [head + resp for head in heads for resp in responses if resp]
    ids = tokenize([context, *heads, *wholes])
    ctx_ids, head_ids, it = ids[0], ids[1 : 1 + len(heads)], iter(ids[1 + len(heads) :])
    whole_ids = [[next(it) if resp else None for resp in responses] for _ in heads]
    # where each response's own tokens start in its whole text
    starts = [
        [common_prefix(head, whole) if whole is not None else len(head) for whole in row]
        for head, row in zip(head_ids, whole_ids, strict=True)
    ]
    shared = [min(row, default=len(head)) for head, row in zip(head_ids, starts, strict=True)]
    cut = min(
        min((common_prefix(ctx_ids, head) for head in head_ids), default=len(ctx_ids)),
        min(shared, default=len(ctx_ids)),
    )
    if cut == 0:
        raise ValueError(
            "score: the context has no token of its own before the scored text (it is empty, "
            "or its tokens merge with what follows) and the tokenizer adds no BOS token; "
            "give a non-empty prefix"
        )
    branches, leads = [], []
    for row, s_row, m in zip(whole_ids, starts, shared, strict=True):
        branches.append([whole[m:] if whole is not None else [] for whole in row])
        leads.append(
            [s - m if whole is not None else 0 for whole, s in zip(row, s_row, strict=True)]
        )
    return NestedTokens(
        context=ctx_ids[:cut],
        candidates=[head[cut:m] for head, m in zip(head_ids, shared, strict=True)],
        branches=branches,
        leads=leads,
    )
