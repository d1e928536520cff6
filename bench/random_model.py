"""Random-weight checkpoints of the paper's architectures, with logits peaked like a
trained model's: what bench/gpu_check.py times, without the weights (no model hub).

The shapes are bench/gpu_cost.py's ``ARCHS`` (``Arch.config``); a model may keep only its
first layers (a slice of the 72B) or be ``shrunk`` to the same family at tiny sizes (the
CPU dry run). Random weights alone give a nearly flat next-token distribution (about 10
nats over the tokenizer's vocabulary), which no trained model has and which sends the
local backend's sampler down its whole-vocabulary path (src/stackelberg/llm/local/
sampling.py), so ``peak_logits`` scales the LM head until the mean next-token entropy on a
probe chat is ``TARGET_ENTROPY``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from generate import prompt as chat_prompt
from gpu_cost import Arch

#: nats of the next-token distribution a peaked model averages on the probe: a 7B chat
#: model sampling its own answer is sharper than the embedded SmolLM2-135M (3.0 to 4.1
#: nats on its own samples at temperature 1, measured on three chats); what the cost
#: depends on is that the sampler's top-256 fast path holds, as it does for both
TARGET_ENTROPY = 1.0


def shrunk(arch: Arch, vocab: int) -> Arch:
    """The same family at tiny widths, for a dry run on CPU: as many layers, hidden 64 in 4
    query heads sharing one key/value head (grouped attention, as both of the paper's
    models), the MLP as many times wider as the original's, and ``vocab`` entries (the
    tokenizer's)."""
    hidden = 64
    return dataclasses.replace(
        arch,
        hidden=hidden,
        intermediate=round(hidden * arch.intermediate / arch.hidden),
        heads=4,
        kv_heads=1,
        vocab=vocab,
    )


def build(arch: Arch, tokenizer: Any, device: str, layers: int | None = None) -> Any:
    """A random-weight causal LM of ``arch`` (its first ``layers`` layers if given) on
    ``device``, in bfloat16 on a GPU and float32 on a CPU, seeded."""
    from transformers import AutoModelForCausalLM

    shape = arch if layers is None else dataclasses.replace(arch, layers=layers)
    config = shape.config(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    torch.manual_seed(0)
    with torch.device(device):
        return AutoModelForCausalLM.from_config(config, dtype=dtype).eval()


def mean_entropy(logits: torch.Tensor) -> float:
    """Mean entropy in nats of the rows' softmax distributions.

    >>> round(mean_entropy(torch.zeros(2, 8)), 4)  # ln 8
    2.0794
    """
    logp = logits.float().log_softmax(-1)
    return -(logp.exp() * logp).sum(-1).mean().item()


@dataclass(frozen=True)
class Peaked:
    scale: float  # the LM head's multiplier
    entropy_before: float  # mean nats on the probe, random weights as built
    entropy: float  # after scaling


@torch.no_grad()
def peak_logits(model: Any, tokenizer: Any, target: float = TARGET_ENTROPY) -> Peaked:
    """Scale ``model``'s LM head so the mean next-token entropy on a probe chat is ``target``.

    First the head rows of tokens that are never to be written are zeroed: ids past the
    tokenizer's vocabulary (the architecture's is padded, as Qwen2.5's is) and the special
    tokens, so completions run to their token limit as a trained model's ~100-word speeches
    do (a zero row's logit, 0, is dozens of nats below the peak). Then a bisection on the
    multiplier, over the probe's logits (one forward), and a forward to measure it.
    """
    head = model.get_output_embeddings().weight
    never = torch.tensor(
        [*tokenizer.all_special_ids, *range(len(tokenizer), head.shape[0])], dtype=torch.long
    )
    head[never.to(head.device)] = 0
    ids = tokenizer.apply_chat_template(
        chat_prompt(0), add_generation_prompt=True, return_tensors="pt", return_dict=True
    )["input_ids"].to(head.device)
    logits = model(ids).logits[0].float()
    before = mean_entropy(logits)
    low, high = 0.0, 1.0
    while mean_entropy(logits * high) > target:  # entropy falls as the multiplier grows
        low, high = high, high * 2
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if mean_entropy(logits * mid) > target else (low, mid)
    head.mul_(high)
    return Peaked(high, before, mean_entropy(model(ids).logits[0]))


def write_checkpoint(
    arch: Arch, folder: Path, tokenizer: Any, device: str, layers: int | None = None
) -> tuple[int, Peaked]:
    """Build, peak and save a random-weight model of ``arch`` with ``tokenizer`` in
    ``folder`` (what the local backend, TRL and vLLM load); return its parameter count."""
    model = build(arch, tokenizer, device, layers)
    peaked = peak_logits(model, tokenizer)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    params = sum(p.numel() for p in model.parameters())
    del model
    if device != "cpu":
        torch.cuda.empty_cache()
    return params, peaked
