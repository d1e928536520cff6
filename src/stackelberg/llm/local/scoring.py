"""Log-probabilities of continuations, computing every shared start once.

Nested scoring (one context, candidates, the same responses after each) computes the context
once, then one forward per candidate that packs the candidate and all its responses into one
row, as a tree: a custom attention mask lets each response see the context, the candidate and
itself, not its siblings. So the context is computed once, each candidate once, each response
once per candidate; nothing is padded and the context cache is never copied per row. Many
prefixes with their own continuations are prefilled side by side and their continuations
packed after them as branches. Logits are computed only at positions that predict a scored
token. Inputs are token ids: the backend tokenizes and checks lengths.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from stackelberg.llm.local.hf_internals import cut_cache
from stackelberg.llm.local.model import LocalModel
from stackelberg.llm.local.prefill import Prefiller
from stackelberg.llm.local.tree import tree_layout
from stackelberg.llm.pieces import NestedTokens

#: Most tokens packed into one scoring forward (its mask is tokens x (prefix + tokens)).
PACK_TOKENS = 2048


def tree_forward(
    model: LocalModel,
    cache: object,
    prefix_len: int,
    segments: list[list[int]],
    parents: list[int | None],
) -> torch.Tensor:
    """Run a tree of continuations of one cached prefix as ONE packed row; return its states.

    Segment ``i`` attends to the whole prefix, to its ancestors (``parents[i]``, which come
    earlier in the list) and causally to itself, never to its siblings; its positions
    continue from its parent's end. The result equals one plain forward per root-to-leaf
    path, without copying the prefix cache per path. The cache is cut back to the prefix
    afterwards, so it can serve the next tree.
    """
    allowed, positions = tree_layout(prefix_len, [len(s) for s in segments], parents)
    keys = torch.cat([torch.arange(prefix_len), positions])  # the prefix: one unpadded row
    bias = model.attention_bias(allowed[None], positions[None], keys[None])
    ids = torch.tensor([[t for s in segments for t in s]], dtype=torch.long)
    hidden, cache = model.forward(ids, cache, bias, positions[None].to(model.device))
    cut_cache(cache, prefix_len)
    return hidden[0]


def score_nested(
    prefiller: Prefiller, toks: NestedTokens
) -> Iterator[tuple[int, int, list[float]]]:
    """Yield ``(candidate, response, logprobs)`` of every response's scored tokens after the
    context and the candidate (``toks``: the whole texts cut into shared pieces)."""
    model = prefiller.model
    last, cache, _, _ = prefiller.prefill([toks.context], spare=PACK_TOKENS)
    ctx_last = last[0]
    for c, cand in enumerate(toks.candidates):
        branches, leads = toks.branches[c], toks.leads[c]
        todo = [r for r in range(len(branches)) if len(branches[r]) > leads[r]]
        for r in sorted(set(range(len(branches))) - set(todo)):
            yield c, r, []
        # One packed forward per candidate: the candidate, then its responses as branches.
        for part in _chunks(todo, [len(b) for b in branches], PACK_TOKENS - len(cand)):
            segments = ([cand] if cand else []) + [branches[r] for r in part]
            parents = [None] + [0] * len(part) if cand else [None] * len(part)
            states = tree_forward(model, cache, len(toks.context), segments, parents)
            before = states[len(cand) - 1] if cand else ctx_last
            start, preds, targets = len(cand), [], []
            for r in part:
                n = len(branches[r])
                preds.append(_predictors(before, states[start : start + n], leads[r]))
                targets += branches[r][leads[r] :]
                start += n
            flat = model.logprobs(torch.cat(preds), targets)
            start = 0
            for r in part:
                n = len(branches[r]) - leads[r]
                yield c, r, flat[start : start + n]
                start += n


def _predictors(before: torch.Tensor, states: torch.Tensor, lead: int) -> torch.Tensor:
    """The states that predict a branch's scored tokens (those after its ``lead``): token k
    is predicted by the state before it, ``before`` for the branch's first token."""
    if lead:
        return states[lead - 1 : -1]
    return torch.cat([before[None], states[:-1]])


def score_many(
    prefiller: Prefiller,
    ctx: list[list[int]],
    conts: list[list[list[int]]],
    leads: list[list[int]],
    batch_size: int,
) -> list[list[list[float]]]:
    """Many prompts, each with its own continuations, prefilled side by side.

    The prompts reuse stored prefix blocks like generation does (the rules, the same
    player's previous prompt), then one forward per chunk packs each row's continuations
    after its prompt as branches that see the prompt and themselves, not each other. A
    continuation's scored tokens are those after its first ``leads[i][k]``.
    """
    model = prefiller.model
    out: list[list[list[float]]] = [[[] for _ in cs] for cs in conts]
    order = sorted(range(len(ctx)), key=lambda i: len(ctx[i]))
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        width = max(sum(map(len, conts[i])) for i in chunk)
        if width == 0:
            continue
        last, cache, mask, rows = prefiller.prefill([ctx[i] for i in chunk], spare=width)
        chunk = [chunk[k] for k in rows]
        hidden = branch_forward(model, cache, mask, [conts[i] for i in chunk], width)
        states, targets, spans = [], [], []
        for r, i in enumerate(chunk):
            at = 0
            for k, toks in enumerate(conts[i]):
                lead = leads[i][k]
                if len(toks) > lead:
                    states.append(_predictors(last[r], hidden[r, at : at + len(toks)], lead))
                    targets += toks[lead:]
                    spans.append((i, k, len(toks) - lead))
                at += len(toks)
        flat = model.logprobs(torch.cat(states), targets)
        at = 0
        for i, k, n in spans:
            out[i][k] = flat[at : at + n]
            at += n
    return out


def branch_forward(
    model: LocalModel,
    cache: object,
    mask: torch.Tensor,
    branches: list[list[list[int]]],
    width: int,
) -> torch.Tensor:
    """Hidden states of each row's branches packed after its cached prompt, ``[rows,
    width]``: a branch sees the row's real prompt tokens and, causally, itself."""
    n_rows, prompt = mask.shape
    ids = torch.full((n_rows, width), model.pad_id, dtype=torch.long)
    positions = mask.sum(-1, keepdim=True).cpu().repeat(1, width)
    allowed = torch.zeros((n_rows, width, prompt + width), dtype=torch.bool)
    allowed[:, :, :prompt] = mask.bool().cpu()[:, None, :]
    for r, row in enumerate(branches):
        at = 0
        for toks in row:
            n = len(toks)
            ids[r, at : at + n] = torch.tensor(toks, dtype=torch.long)
            positions[r, at : at + n] += torch.arange(n)
            causal = torch.ones((n, n), dtype=torch.bool).tril()
            allowed[r, at : at + n, prompt + at : prompt + at + n] = causal
            at += n
    keys = torch.cat([mask.cpu().cumsum(-1) - 1, positions], dim=-1)
    bias = model.attention_bias(allowed, positions, keys)
    hidden, _ = model.forward(ids, cache, bias, positions.to(model.device))
    return hidden


def _chunks(items: list[int], lengths: list[int], budget: int) -> Iterator[list[int]]:
    """Consecutive groups of items whose lengths sum to at most ``budget`` (at least one)."""
    group: list[int] = []
    total = 0
    for i in items:
        if group and total + lengths[i] > budget:
            yield group
            group, total = [], 0
        group.append(i)
        total += lengths[i]
    if group:
        yield group


def plain_logprobs(model: LocalModel, ids: list[int], first: int) -> list[float]:
    """The reference: log-probabilities of ``ids[first:]`` from one plain full forward."""
    hidden, _ = model.forward(torch.tensor([ids]), None)
    return model.logprobs(hidden[0, first - 1 : len(ids) - 1], ids[first:])
