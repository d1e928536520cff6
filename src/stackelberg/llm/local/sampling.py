"""Picking tokens from logits, reproducibly per sequence, and cutting text at stop strings.

Each sequence draws its random numbers from a counter-based stream keyed by its request's
seed, its sample index and the decoding step, so a request's output does not depend on what
else is in the batch: runs replay exactly and cached answers stay valid. The whole batch
samples in one vectorized step on the logits' device; only the chosen tokens leave it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch

_LOW32 = 0xFFFFFFFF
#: names, in the response cache's keys, how a sampled token follows from the logits: the
#: uniform stream below and its mapping to a token (inverse CDF, the top-256 fast path,
#: vocabulary order at top_p 1, ties by token index); change it when any of those change
STREAM = "mix32(seed,sample,step)/icdf-top256-v1"


def sample_seed(seed: int, index: int) -> int:
    """The stream key of sample ``index`` of a request seeded ``seed`` (63 bits)."""
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """``x * c`` modulo 2**32 for ``x`` below 2**32, in halves: the whole product would
    overflow int64, whose wrapping torch does not promise."""
    high = (((x >> 16) * c) & 0xFFFF) << 16
    return (high + (x & 0xFFFF) * c) & _LOW32


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (Wellons' "lowbias32" constants): each input bit flips about
    half of the output bits."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def row_uniforms(keys: torch.Tensor, step: int) -> torch.Tensor:
    """One uniform number in [0, 1) per row, a hash of the row's key (``sample_seed``) and
    ``step``: integer ops on the keys' device, exact and equal on every device, and a row's
    number depends on nothing else in the batch."""
    keys = torch.as_tensor(keys, dtype=torch.int64)
    h = _mix32((keys & _LOW32) ^ _mix32(torch.full_like(keys, step & _LOW32)))
    h = _mix32(((keys >> 32) & _LOW32) ^ h)
    return (h >> 8).float() * 2.0**-24  # 24 bits: exact in float32, below 1


def _draw(
    probs: torch.Tensor, order: torch.Tensor | None, top_ps: torch.Tensor | None, u: torch.Tensor
) -> torch.Tensor:
    """Inverse CDF per row over ``probs`` (tokens ``order``; None: the vocabulary's order),
    cut to the nucleus of ``top_ps`` when given (``probs`` then sorted descending: the most
    likely token always stays). Only tokens of positive weight can be picked."""
    # float64 sums: monotone and exact enough on every device (a float32 parallel scan over
    # a 152k vocabulary may lose the smallest tokens' mass, or step back by an ulp)
    if top_ps is not None:
        probs = probs * ((probs.cumsum(-1, dtype=torch.float64) - probs) < top_ps[:, None])
    cum = probs.cumsum(-1, dtype=torch.float64)
    total = cum[:, -1:]
    j = torch.searchsorted(cum, u[:, None].double() * total, right=True)
    # u * total may round up to total: the first token that reaches it has weight
    j = torch.minimum(j, (cum < total).sum(-1, keepdim=True))
    return j.squeeze(-1) if order is None else order.gather(-1, j).squeeze(-1)


def sample_tokens(
    logits: torch.Tensor,
    temperatures: Sequence[float] | torch.Tensor,
    top_ps: Sequence[float] | torch.Tensor,
    uniforms: Sequence[float] | torch.Tensor,
    top_k: int = 256,
) -> torch.Tensor:
    """One token per row, on the logits' device, with that row's settings: greedy at
    temperature 0, else nucleus sampling by inverse CDF at the row's uniform number (from
    ``row_uniforms``) over its tokens sorted by probability.

    Every operation is row by row, so a row's token depends on nothing else in the batch.
    Sorting the whole vocabulary costs as much as a decode step; a row whose top ``top_k``
    tokens already hold ``top_p`` of the mass (nearly always) sorts only those. Each step
    checks once, for the whole batch, whether a row is not covered; of those rows, the ones at ``top_p`` 1 keep every token and draw in vocabulary order, with
    no sort at all.
    """
    device = logits.device
    temps = torch.as_tensor(temperatures, dtype=torch.float32, device=device)
    top_ps = torch.as_tensor(top_ps, dtype=torch.float32, device=device)
    u = torch.as_tensor(uniforms, dtype=torch.float32, device=device)
    sampled = temps > 0
    scaled = logits.float() / torch.where(sampled, temps, 1.0)[:, None]
    logz = torch.logsumexp(scaled, dim=-1, keepdim=True)
    top_v, top_i = scaled.topk(min(top_k, scaled.shape[-1]), dim=-1)
    # equal logits in token order (topk's order among them is unspecified; bfloat16 heads tie)
    top_i, by_index = top_i.sort(dim=-1)
    top_v, by_value = top_v.gather(-1, by_index).sort(dim=-1, descending=True, stable=True)
    top_i = top_i.gather(-1, by_value)
    top_probs = (top_v - logz).exp()
    picks = _draw(top_probs, top_i, top_ps, u)
    short = sampled & (top_probs.sum(-1) < top_ps)
    if short.any():
        rows = short.nonzero().squeeze(-1)
        probs, ps, ur = (scaled[rows] - logz[rows]).exp(), top_ps[rows], u[rows]
        pick = _draw(probs, None, None, ur)
        whole = ps >= 1
        if not whole.all():
            ordered, order = probs.sort(dim=-1, descending=True, stable=True)
            pick = torch.where(whole, pick, _draw(ordered, order, ps, ur))
        picks[rows] = pick
    return torch.where(sampled, picks, logits.argmax(-1))


def token_logprobs(
    logits: torch.Tensor, temperatures: Sequence[float] | torch.Tensor, tokens: torch.Tensor
) -> torch.Tensor:
    """The log-probability of each row's token under its temperature-scaled distribution
    (the plain distribution at temperature 0), before nucleus truncation."""
    temps = torch.as_tensor(temperatures, dtype=torch.float32, device=logits.device)
    scaled = logits.float() / torch.where(temps > 0, temps, 1.0)[:, None]
    picked = scaled.gather(-1, tokens.reshape(-1, 1)).squeeze(-1)
    return picked - torch.logsumexp(scaled, dim=-1)


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """The text before the earliest stop string, and whether one was found."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[: min(cuts)], True) if cuts else (text, False)
