"""The loaded network seen as the other modules need it: a decoder forward over a KV cache,
the LM head's log-probabilities, attention biases in the model's dtype, and detokenizing.

Prefill, decoding and scoring share these few operations; keeping them on one object means
each of those modules deals in token ids and tensors only.

Sliding-window layers (Gemma 3: 5 of every 6 layers see the last 512 positions) need their
own bias: transformers takes a 4-D mask as given for every layer, and counts a window in
cache slots, while a cache row here holds padding and packed branches between a query and
its keys. So for such a model every masked forward gets a bias per layer type, the window
counted in positions.
"""

from __future__ import annotations

from typing import Any

import torch

from stackelberg.llm.local.hf_internals import DecoderCall
from stackelberg.llm.local.tree import additive_mask

#: an attention bias: one tensor, or one per layer type for a model with sliding windows
Bias = torch.Tensor | dict[str, torch.Tensor]


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
        types = getattr(lm.config, "layer_types", None) or ()
        #: how many positions back a sliding-window layer sees; None: every layer sees all
        self.window: int | None = lm.config.sliding_window if "sliding_attention" in types else None

    def forward(
        self,
        ids: torch.Tensor,
        cache: Any,
        attention_mask: torch.Tensor | Bias | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Hidden states (before the LM head) and the grown cache. ``attention_mask``: a
        ``[rows, cached + new]`` mask of real tokens, or a bias from ``attention_bias``."""
        padding = isinstance(attention_mask, torch.Tensor) and attention_mask.dim() == 2
        if self.window is not None and padding:
            attention_mask = self._padding_bias(attention_mask, position_ids, ids.shape[-1])
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

    def attention_bias(
        self, allowed: torch.Tensor, q_pos: torch.Tensor, kv_pos: torch.Tensor
    ) -> Bias:
        """The bias (``[rows, 1, q, kv]``, on the device) of ``allowed`` (``[rows, q, kv]``
        booleans): 0 where allowed, the dtype's minimum not. With sliding windows, a second
        one for those layers: keys fewer than ``window`` positions before the query
        (``q_pos`` ``[rows, q]``, ``kv_pos`` ``[rows, kv]``: the position of each query and
        key on its own path)."""
        allowed = allowed.to(self.device)
        full = additive_mask(allowed, self.lm.dtype)[:, None]
        if self.window is None:
            return full
        near = q_pos.to(self.device)[:, :, None] - kv_pos.to(self.device)[:, None, :]
        sliding = additive_mask(allowed & (near < self.window), self.lm.dtype)[:, None]
        return {"full_attention": full, "sliding_attention": sliding}

    def _padding_bias(self, mask: torch.Tensor, q_pos: torch.Tensor, n_new: int) -> Bias:
        """``attention_bias`` of a mask of real tokens (prefill, decoding): each of the
        ``n_new`` last slots sees the real tokens up to itself; a key's position counts the
        real tokens before it."""
        slots = torch.arange(mask.shape[-1], device=mask.device)
        causal = slots[None, :] <= slots[-n_new:, None]
        allowed = mask.bool()[:, None, :] & causal[None]
        return self.attention_bias(allowed, q_pos, mask.cumsum(-1) - 1)

    def decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)
