"""The decode loop: many sequences per forward pass, each with its own sampling settings.

Prompts are prefilled once (reusing stored prefix blocks), each prompt's cache is forked
into its ``n`` samples, and all rows decode together; a row that has finished rides along
until dropping the finished rows pays for the copy.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from stackelberg.llm.base import SamplingParams
from stackelberg.llm.local.hf_internals import select_cache_rows
from stackelberg.llm.local.prefill import Prefiller
from stackelberg.llm.local.sampling import cut_at_stop, sample_seed, sample_tokens


def generate(
    prefiller: Prefiller,
    ids: list[list[int]],
    ns: list[int],
    seeds: list[int],
    params: list[SamplingParams],
    batch_size: int,
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(index, samples)`` per prompt: similar lengths together (less padding), in
    chunks of at most ``batch_size`` sequences."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    chunk: list[int] = []
    rows = 0
    for i in order:
        if chunk and rows + ns[i] > batch_size:
            yield from _generate_chunk(prefiller, chunk, ids, ns, seeds, params)
            chunk, rows = [], 0
        chunk.append(i)
        rows += ns[i]
    if chunk:
        yield from _generate_chunk(prefiller, chunk, ids, ns, seeds, params)


def _generate_chunk(
    prefiller: Prefiller,
    chunk: list[int],
    ids: list[list[int]],
    ns: list[int],
    seeds: list[int],
    params: list[SamplingParams],
) -> Iterator[tuple[int, list[str]]]:
    """Prefill each prompt once, fork its cache into its n samples, then decode together,
    each row with its own prompt's settings."""
    model = prefiller.model
    longest = max(params[i].max_new_tokens for i in chunk)
    last, cache, mask, order = prefiller.prefill([ids[i] for i in chunk], longest)
    chunk = [chunk[k] for k in order]  # the prompt of each cache row
    if any(ns[i] > 1 for i in chunk):
        expand = torch.tensor([r for r, i in enumerate(chunk) for _ in range(ns[i])])
        expand = expand.to(model.device)
        select_cache_rows(cache, expand)
        mask, last = mask[expand], last[expand]
    owners = [(i, j) for i in chunk for j in range(ns[i])]  # (prompt, sample) per row
    setting = [params[i] for i, _ in owners]
    gens = [torch.Generator().manual_seed(sample_seed(seeds[i], j)) for i, j in owners]
    tokens: list[list[int]] = [[] for _ in owners]
    live = list(range(len(owners)))  # the owner of each row still in the batch
    finished: set[int] = set()  # owners done but still riding along in the batch
    for step in range(longest):
        nxt = sample_tokens(
            model.head(last).float().cpu(),
            [setting[g].temperature for g in live],
            [setting[g].top_p for g in live],
            [gens[g] for g in live],
        ).tolist()
        for g, tok in zip(live, nxt, strict=True):
            if g in finished:
                continue
            if tok in model.eos_ids:
                finished.add(g)
                continue
            tokens[g].append(tok)
            stop = setting[g].stop
            if len(tokens[g]) >= setting[g].max_new_tokens or (
                stop and cut_at_stop(model.decode(tokens[g]), stop)[1]
            ):
                finished.add(g)
        n_done = sum(g in finished for g in live)
        if n_done == len(live):
            break
        # Drop finished rows once it pays: copying the cache costs about two steps' reads
        # of it, and each dropped row saves one read per remaining step.
        if n_done and n_done * (longest - step - 1) >= 2 * len(live):
            keep = [r for r, g in enumerate(live) if g not in finished]
            sel = torch.tensor(keep, device=model.device)
            select_cache_rows(cache, sel)
            mask, nxt = mask[sel], [nxt[r] for r in keep]
            live = [live[r] for r in keep]
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
        pos = mask.sum(-1, keepdim=True) - 1
        hidden, cache = model.forward(torch.tensor(nxt).unsqueeze(-1), cache, mask, pos)
        last = hidden[:, -1]
    texts = [cut_at_stop(model.decode(t), x.stop)[0] for t, x in zip(tokens, setting, strict=True)]
    pos = 0
    for i in chunk:
        yield i, texts[pos : pos + ns[i]]
        pos += ns[i]
