"""Picking tokens from logits, reproducibly per sequence, and cutting text at stop strings.

Each sequence has its own generator seeded from its request's seed and its sample index, so
a request's output does not depend on what else is in the batch: runs replay exactly and
cached answers stay valid.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch


def sample_seed(seed: int, index: int) -> int:
    """The generator seed of sample ``index`` of a request seeded ``seed``."""
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def sample_tokens(
    logits: torch.Tensor,
    temperatures: Sequence[float],
    top_ps: Sequence[float],
    generators: Sequence[torch.Generator],
    top_k: int = 256,
) -> torch.Tensor:
    """One token per row with that row's settings: greedy at temperature 0, else nucleus
    sampling with the row's generator.

    Each sampled row draws exactly one uniform number from its own generator and picks by
    inverse CDF over its tokens sorted by probability, so a row's token depends on nothing
    else in the batch. Sorting the whole vocabulary costs as much as a decode step; a row
    whose top ``top_k`` tokens already hold ``top_p`` of the mass (nearly always) sorts only
    those.
    """
    picks = logits.argmax(-1)
    rows = [r for r, t in enumerate(temperatures) if t > 0]
    if not rows:
        return picks
    temp = torch.tensor([temperatures[r] for r in rows], dtype=torch.float32)[:, None]
    scaled = logits[rows].float() / temp
    logz = torch.logsumexp(scaled, dim=-1, keepdim=True)
    top_v, top_i = scaled.topk(min(top_k, scaled.shape[-1]), dim=-1)
    top_probs = (top_v - logz).exp()
    for k, row in enumerate(rows):
        u = torch.rand((), generator=generators[row])
        top_p = top_ps[row]
        if top_probs[k].sum() >= top_p:
            probs, order = top_probs[k], top_i[k]
        else:
            probs, order = (scaled[k] - logz[k]).exp().sort(descending=True)
        keep = (probs.cumsum(-1) - probs) < top_p  # the most likely token always stays
        cum = (probs * keep).cumsum(-1)
        j = int(torch.searchsorted(cum, (u * cum[-1]).reshape(1)).clamp(max=len(cum) - 1))
        picks[row] = order[j]
    return picks


def token_logprobs(
    logits: torch.Tensor, temperatures: Sequence[float], tokens: torch.Tensor
) -> torch.Tensor:
    """The log-probability of each row's token under its temperature-scaled distribution
    (the plain distribution at temperature 0), before nucleus truncation."""
    temp = torch.tensor([t if t > 0 else 1.0 for t in temperatures], dtype=torch.float32)
    logp = torch.log_softmax(logits.float() / temp[:, None], dim=-1)
    return logp.gather(-1, tokens.reshape(-1, 1)).squeeze(-1)


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """The text before the earliest stop string, and whether one was found."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[: min(cuts)], True) if cuts else (text, False)
