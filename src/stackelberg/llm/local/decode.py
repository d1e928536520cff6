"""The decode loop: many sequences per forward pass, each with its own sampling settings.

Prompts are prefilled once (reusing stored prefix blocks), each prompt's cache is forked
into its ``n`` samples, and all rows decode together; a row that has finished rides along
until dropping the finished rows pays for the copy. ``generate`` gives texts (the backend);
``generate_tokens`` gives token ids with their log-probabilities (GRPO's rollouts).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from stackelberg.llm.base import SamplingParams
from stackelberg.llm.local.hf_internals import select_cache_rows
from stackelberg.llm.local.prefill import Prefiller
from stackelberg.llm.local.sampling import (
    cut_at_stop,
    row_uniforms,
    sample_seed,
    sample_tokens,
    token_logprobs,
)


@dataclass
class Sampled:
    """One sampled continuation: its tokens (a stop string's token included), the
    end-of-sequence token that ended it (not in ``tokens``), and with ``logprobs`` asked for,
    each token's log-probability under the temperature-scaled distribution it was drawn from
    (``tokens`` then ``end``)."""

    tokens: list[int] = field(default_factory=list)
    end: int | None = None
    logprobs: list[float] = field(default_factory=list)


def generate(
    prefiller: Prefiller,
    ids: list[list[int]],
    ns: list[int],
    seeds: list[int],
    params: list[SamplingParams],
    batch_size: int,
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(index, samples)`` per prompt: similar lengths together (less padding), in
    chunks of at most ``batch_size`` sequences; each sample's text ends before its stop."""
    model = prefiller.model
    for i, samples in generate_tokens(prefiller, ids, ns, seeds, params, batch_size):
        yield i, [cut_at_stop(model.decode(s.tokens), params[i].stop)[0] for s in samples]


def generate_tokens(
    prefiller: Prefiller,
    ids: list[list[int]],
    ns: list[int],
    seeds: list[int],
    params: list[SamplingParams],
    batch_size: int,
    logprobs: bool = False,
) -> Iterator[tuple[int, list[Sampled]]]:
    """``generate`` in token ids: ``(index, samples)`` per prompt, in the same order."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    chunk: list[int] = []
    rows = 0
    for i in order:
        if chunk and rows + ns[i] > batch_size:
            yield from _generate_chunk(prefiller, chunk, ids, ns, seeds, params, logprobs)
            chunk, rows = [], 0
        chunk.append(i)
        rows += ns[i]
    if chunk:
        yield from _generate_chunk(prefiller, chunk, ids, ns, seeds, params, logprobs)


def _generate_chunk(
    prefiller: Prefiller,
    chunk: list[int],
    ids: list[list[int]],
    ns: list[int],
    seeds: list[int],
    params: list[SamplingParams],
    logprobs: bool,
) -> Iterator[tuple[int, list[Sampled]]]:
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
    # Each row's settings and stream key live on the device beside the logits, so a step
    # samples the whole batch there; only the chosen tokens (and log-probabilities) come back.
    device = model.device
    keys = torch.tensor([sample_seed(seeds[i], j) for i, j in owners], device=device)
    temps = torch.tensor([s.temperature for s in setting], dtype=torch.float32, device=device)
    top_ps = torch.tensor([s.top_p for s in setting], dtype=torch.float32, device=device)
    out = [Sampled() for _ in owners]
    live = list(range(len(owners)))  # the owner of each row still in the batch
    finished: set[int] = set()  # owners done but still riding along in the batch
    sampling = any(s.temperature > 0 for s in setting)  # else argmax alone
    for step in range(longest):
        logits = model.head(last).float()
        if sampling:
            picked = sample_tokens(logits, temps, top_ps, row_uniforms(keys, step))
        else:
            picked = logits.argmax(-1)
        lps = token_logprobs(logits, temps, picked).tolist() if logprobs else None
        nxt = picked.tolist()
        for r, (g, tok) in enumerate(zip(live, nxt, strict=True)):
            if g in finished:
                continue
            if lps is not None:
                out[g].logprobs.append(lps[r])
            if tok in model.eos_ids:
                out[g].end = tok
                finished.add(g)
                continue
            tokens = out[g].tokens
            tokens.append(tok)
            stop = setting[g].stop
            if len(tokens) >= setting[g].max_new_tokens or (
                stop and cut_at_stop(model.decode(tokens), stop)[1]
            ):
                finished.add(g)
        n_done = sum(g in finished for g in live)
        if n_done == len(live):
            break
        # Drop finished rows once it pays: copying the cache costs about two steps' reads
        # of it, and each dropped row saves one read per remaining step.
        if n_done and n_done * (longest - step - 1) >= 2 * len(live):
            keep = [r for r, g in enumerate(live) if g not in finished]
            sel = torch.tensor(keep, device=device)
            select_cache_rows(cache, sel)
            mask, picked = mask[sel], picked[sel]
            keys, temps, top_ps = keys[sel], temps[sel], top_ps[sel]
            live = [live[r] for r in keep]
            sampling = any(setting[g].temperature > 0 for g in live)
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
        pos = mask.sum(-1, keepdim=True) - 1
        hidden, cache = model.forward(picked.unsqueeze(-1), cache, mask, pos)
        last = hidden[:, -1]
    pos = 0
    for i in chunk:
        yield i, out[pos : pos + ns[i]]
        pos += ns[i]
