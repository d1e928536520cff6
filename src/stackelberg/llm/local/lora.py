"""A plain LoRA adapter beside shared weights, run as lean modules for inference.

PEFT's LoRA layer pays for its generality (adapter lookups, dropout, dtype casts, variant
dispatch) at each of the ~200 adapted projections of every decode step: with the
embedded int8 Refiner that made a decode step ~1.6x the plain model's. Here each adapted
projection is its shared base plus ``x A^T (s B)^T`` (the scaling folded into B), and a
fused int8 group (``fused``: query, key and value; gate and up) also computes its LoRA
update in one pair of matmuls, the parts' A stacked and their B placed block-diagonally.
The numbers are PEFT's up to float rounding.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F

from stackelberg.llm.local.fused import SIBLINGS, SharedInput, SharedInputProjection, SplitOutput


class LoRALinear(torch.nn.Module):
    """A shared base projection plus a LoRA update."""

    def __init__(self, base_layer: torch.nn.Module, down: torch.Tensor, up: torch.Tensor) -> None:
        super().__init__()
        self.base_layer = base_layer
        self.register_buffer("down", down)  # A: rank x in
        self.register_buffer("up", up)  # s * B: out x rank
        self.in_features, self.out_features = down.shape[1], up.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.base_layer(x)  # PEFT's order: the base's dtype, the update in its own
        update = F.linear(F.linear(x.to(self.down.dtype), self.down), self.up)
        return (out + update).to(out.dtype)


class AdaptedInput(SplitOutput):
    """A fused int8 group's matmul plus the LoRA update of its adapted parts (``adapters``:
    part index -> (A, s * B)), from one stacked A and one block-diagonal B."""

    def __init__(
        self, base: SharedInput, adapters: Mapping[int, tuple[torch.Tensor, torch.Tensor]]
    ) -> None:
        super().__init__(base.sizes, base.in_features)
        self.base = base
        self.down = torch.cat([adapters[i][0] for i in sorted(adapters)])
        # a part without an adapter: rows of zeros (a block with no columns)
        self.up = torch.block_diag(
            *[
                adapters[i][1] if i in adapters else self.down.new_zeros(size, 0)
                for i, size in enumerate(base.sizes)
            ]
        )

    def compute(self, x: torch.Tensor) -> torch.Tensor:
        return self.base.compute(x) + F.linear(F.linear(x, self.down), self.up)

    def weight(self, index: int) -> torch.Tensor:
        return self.base.weight(index)


def lora_matrices(layer: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(A, s * B) of a PEFT LoRA layer with one plain adapter active (no DoRA or other
    variant, no bias, not merged, not transposed), else None (left to PEFT)."""
    from peft.tuners.lora.layer import Linear as PeftLoRALinear

    if type(layer) is not PeftLoRALinear or layer.merged or layer.disable_adapters:
        return None
    if len(layer.active_adapters) != 1 or layer.fan_in_fan_out:
        return None
    (name,) = layer.active_adapters
    if (
        name not in layer.lora_A
        or layer.use_dora.get(name)
        or name in getattr(layer, "lora_variant", {})
        or layer.lora_B[name].bias is not None
    ):
        return None
    down = layer.lora_A[name].weight.detach()
    up = layer.lora_B[name].weight.detach() * layer.scaling[name]
    return down, up


def lean_lora(model: torch.nn.Module) -> int:
    """Replace ``model``'s plain PEFT LoRA layers (``lora_matrices``) by lean modules, a
    fused group's by one ``AdaptedInput``; returns how many layers were replaced."""
    replaced = 0
    for module in list(model.modules()):
        for names in SIBLINGS:
            members = [getattr(module, n, None) for n in names]
            adapters = {
                i: ab for i, m in enumerate(members) if (ab := lora_matrices(m)) is not None
            }
            bases = [members[i].base_layer if i in adapters else m for i, m in enumerate(members)]
            if (
                not adapters
                or not all(type(b) is SharedInputProjection for b in bases)
                or len({id(b.group) for b in bases}) != 1
                or type(bases[0].group) is not SharedInput
                or [b.index for b in bases] != list(range(len(names)))
            ):
                continue
            group = AdaptedInput(bases[0].group, adapters)
            for i, name in enumerate(names):
                setattr(module, name, SharedInputProjection(group, i))
            replaced += len(adapters)
        for name, child in list(module.named_children()):
            if (matrices := lora_matrices(child)) is not None:
                setattr(module, name, LoRALinear(child.base_layer, *matrices))
                replaced += 1
    return replaced
