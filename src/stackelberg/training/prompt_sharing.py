"""GRPO's log-probability forwards with each prompt computed once per group.

A GRPO step scores ``num_generations`` completions of each prompt, and TRL runs one row per
completion, so the prompt (most of a row: ~190 of ~220 tokens in the embedded default) is
computed once per completion, in the reference forward and in the loss's forward and
backward. Here the rows that share a prompt are packed into one row as a tree
(``llm.local.tree``): the prompt once, then each completion as a branch that sees the prompt
and itself, never its siblings. The log-probabilities, entropies and gradients equal TRL's
one-row-per-completion forward; only the repeated prompt tokens are not computed again.

The prompt's last token predicts every completion's first token, but a position predicts
one label only, so each branch starts with a copy of that token (one token per completion).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from stackelberg.llm.local.tree import additive_mask, tree_layout

#: attention kernels that take an arbitrary 4-D mask (flash attention does not)
TREE_MASK_KERNELS = ("sdpa", "eager")


@dataclass
class PromptPack:
    """One prompt and its completions as one packed row."""

    ids: torch.Tensor  # [T] token ids
    allowed: torch.Tensor  # [T, T] which token sees which
    positions: torch.Tensor  # [T] position ids
    labels: torch.Tensor  # [T] the token each position predicts (-100: none)
    rows: list[tuple[int, int, int]]  # (batch row, its completion's start, length)


def pack_by_prompt(
    input_ids: torch.Tensor, attention_mask: torch.Tensor, completion_width: int
) -> list[PromptPack] | None:
    """The batch's rows grouped by prompt and packed; None when no two rows share a prompt
    (nothing to save) or a completion's mask is not a run of ones then zeros.

    ``input_ids`` are TRL's rows: the left-padded prompt, then ``completion_width`` tokens
    of completion, right-padded; ``attention_mask`` marks the real tokens.
    """
    ids, mask = input_ids.cpu(), attention_mask.cpu().bool()
    prompt_width = ids.size(1) - completion_width
    groups: dict[tuple[int, ...], list[int]] = {}
    completions: list[list[int]] = []
    for b in range(ids.size(0)):
        prompt = tuple(ids[b, :prompt_width][mask[b, :prompt_width]].tolist())
        done = mask[b, prompt_width:]
        n = int(done.sum())
        if not prompt or not bool(done[:n].all()):
            return None
        completions.append(ids[b, prompt_width : prompt_width + n].tolist())
        groups.setdefault(prompt, []).append(b)
    if all(len(rows) == 1 for rows in groups.values()):
        return None
    packs = []
    for prompt, rows in groups.items():
        segments = [list(prompt[:-1])] + [[prompt[-1], *completions[b]] for b in rows]
        lengths = [len(s) for s in segments]
        allowed, positions = tree_layout(0, lengths, [None] + [0] * len(rows))
        labels = torch.full((sum(lengths),), -100, dtype=torch.long)
        spans = []
        start = lengths[0]
        for b, segment in zip(rows, segments[1:], strict=True):
            n = len(segment) - 1  # position start + k predicts completion token k
            labels[start : start + n] = torch.tensor(segment[1:], dtype=torch.long)
            spans.append((b, start, n))
            start += len(segment)
        flat = torch.tensor([t for s in segments for t in s], dtype=torch.long)
        packs.append(PromptPack(flat, allowed, positions, labels, spans))
    return packs


def attention_kernel(model: Any) -> str:
    """The attention implementation ``model`` (a PEFT or plain transformers model, not
    wrapped for distributed training) runs."""
    config = getattr(model, "config", None)
    return str(getattr(config, "_attn_implementation", None) or "eager")


def packed_logps(
    model: Any,
    packs: list[PromptPack],
    batch: int,
    completion_width: int,
    compute_entropy: bool,
    kernel: str = "sdpa",
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probabilities (and entropies) of each row's completion, ``[batch,
    completion_width]`` with zeros past a completion's end, as TRL's forward returns them.

    ``model`` is GRPOTrainer's model with TRL's fused LM head (``fused_lm_head=True`` and
    ``shift_labels``: TRL's temperature and head casting apply alike). ``kernel`` is its
    attention implementation: SDPA takes a boolean mask whatever the compute dtype under
    autocast; eager attention adds a bias.
    """
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    sdpa = kernel == "sdpa"
    logps: list[torch.Tensor | None] = [None] * batch
    entropies: list[torch.Tensor | None] = [None] * batch
    for pack in packs:
        mask = pack.allowed if sdpa else additive_mask(pack.allowed, dtype)
        out = model(
            input_ids=pack.ids[None].to(device),
            attention_mask=mask[None, None].to(device),
            position_ids=pack.positions[None].to(device),
            shift_labels=pack.labels[None].to(device),
            fused_lm_head=True,
        )
        for b, start, n in pack.rows:
            logps[b] = F.pad(out.log_probs[0, start : start + n], (0, completion_width - n))
            if compute_entropy:
                entropies[b] = F.pad(out.entropy[0, start : start + n], (0, completion_width - n))
    return torch.stack(logps), (torch.stack(entropies) if compute_entropy else None)
