"""The loaded network seen as the other modules need it: a decoder forward over a KV cache,
the LM head's log-probabilities, attention biases in the model's dtype, and detokenizing.

Prefill, decoding and scoring share these few operations; keeping them on one object means
each of those modules deals in token ids and tensors only.
"""

from __future__ import annotations

from typing import Any

import torch

from stackelberg.llm.local.hf_internals import DecoderCall
from stackelberg.llm.local.tree import additive_mask


class LocalModel:
    """A causal LM and its tokenizer on one device."""

    def __init__(self, tokenizer: Any, lm: Any, device: torch.device) -> None:
        self.tokenizer = tokenizer
        self.lm = lm
        self.device = device
        self.decoder = DecoderCall(lm.base_model)
        self.head = lm.get_output_embeddings()
        self._head_f32: torch.Tensor | None = None  # the head's float32 copy (bf16 models)
        gen_eos = getattr(lm.generation_config, "eos_token_id", None)
        eos = gen_eos if isinstance(gen_eos, list) else [gen_eos]
        self.eos_ids = {i for i in [*eos, tokenizer.eos_token_id] if i is not None}
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else min(self.eos_ids, default=0)

    def forward(
        self,
        ids: torch.Tensor,
        cache: Any,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Hidden states (before the LM head) and the grown cache."""
        return self.decoder(ids.to(self.device), cache, attention_mask, position_ids)

    def logprobs(self, hidden: torch.Tensor, targets: list[int]) -> list[float]:
        """Log-probabilities of ``targets``, each predicted by the matching row of ``hidden``."""
        if not targets:
            return []
        logits = self._logits(hidden)
        logp = torch.log_softmax(logits, dim=-1)
        idx = torch.tensor(targets, device=logp.device).unsqueeze(-1)
        return logp.gather(-1, idx).squeeze(-1).tolist()

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The LM head in float32 whatever the model's dtype: a bfloat16 head rounds logits
        of size ~20 by ~0.1, more than the differences between a Measurer's candidates."""
        if hidden.dtype == torch.float32 or not hidden.is_floating_point():
            return self.head(hidden).float()
        if self._head_f32 is None:
            self._head_f32 = self.head.weight.detach().float()
        return torch.nn.functional.linear(hidden.float(), self._head_f32)

    def additive_mask(self, allowed: torch.Tensor) -> torch.Tensor:
        """An attention bias from a boolean mask: 0 where allowed, the dtype's minimum not."""
        return additive_mask(allowed, self.lm.dtype)

    def decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)
