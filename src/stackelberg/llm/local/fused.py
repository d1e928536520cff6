"""int8 projections that read the same input (a layer's query, key and value; the MLP's gate
and up), computed in one matmul.

A CPU decode step at small batch pays per quantized matmul (the input's quantization, the
call) more than for the arithmetic: one call for a layer's three attention projections
takes about 2/5 of the time of three calls. Each projection keeps its place in the model
(the model's own code still calls ``q_proj``, ``k_proj``, ``v_proj``): the first call
computes all of them for its input, the others read their part. The fused weight keeps
every row's int8 values and its projection's scale, so the outputs are bit for bit those
of the separate projections.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import torch
from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

#: projections of one module that read the same input, by the names model families use
SIBLINGS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


class SplitOutput:
    """One output per input that a group of projections reads in parts (each its own
    columns), computed at the first part's call and kept, per thread, until every part of
    it has been read."""

    def __init__(self, sizes: Sequence[int], in_features: int) -> None:
        self.sizes = list(sizes)
        self.in_features = in_features
        self._last = threading.local()

    def compute(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def part(self, x: torch.Tensor, index: int) -> torch.Tensor:
        last = self._last
        if getattr(last, "input", None) is not x or index in last.read:
            last.input, last.read = x, set()
            last.parts = self.compute(x).split(self.sizes, dim=-1)
        last.read.add(index)
        out = last.parts[index]
        if len(last.read) == len(self.sizes):  # every part read: hold nothing
            last.input = last.parts = None
        return out

    def weight(self, index: int) -> torch.Tensor:
        raise NotImplementedError


class SharedInput(SplitOutput):
    """The fused matmul of a group of projections."""

    def __init__(self, projections: Sequence[DynamicLinear]) -> None:
        weights = [p.weight() for p in projections]
        biases = [p.bias() for p in projections]
        sizes = [w.shape[0] for w in weights]
        rows = torch.cat([w.int_repr() for w in weights])
        super().__init__(sizes, rows.shape[1])
        per_row = torch.tensor(sizes)  # each row keeps its projection's scale and zero
        scales = torch.tensor([w.q_scale() for w in weights], dtype=torch.double)
        zeros = torch.tensor([w.q_zero_point() for w in weights], dtype=torch.long)
        self.matmul = DynamicLinear(rows.shape[1], rows.shape[0], dtype=torch.qint8)
        self.matmul.set_weight_bias(
            torch._make_per_channel_quantized_tensor(
                rows, scales.repeat_interleave(per_row), zeros.repeat_interleave(per_row), 0
            ),
            None if biases[0] is None else torch.cat(biases),
        )

    def compute(self, x: torch.Tensor) -> torch.Tensor:
        return self.matmul(x)

    def weight(self, index: int) -> torch.Tensor:
        """Projection ``index``'s int8 weight, per tensor as it was quantized."""
        packed = self.matmul.weight()
        start = sum(self.sizes[:index])
        return torch._make_per_tensor_quantized_tensor(
            packed.int_repr()[start : start + self.sizes[index]],
            float(packed.q_per_channel_scales()[start]),
            int(packed.q_per_channel_zero_points()[start]),
        )


class SharedInputProjection(torch.nn.Module):
    """One projection of a group (``SharedInput``, or one with a LoRA update beside it:
    ``lora.AdaptedInput``), where the model calls it (a leaf module:
    the group is not a child, so module walks and adapters see one projection)."""

    def __init__(self, group: SplitOutput, index: int) -> None:
        super().__init__()
        self.group = group
        self.index = index
        self.in_features = group.in_features
        self.out_features = group.sizes[index]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.group.part(x, self.index)

    def weight(self) -> torch.Tensor:
        return self.group.weight(self.index)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 fused"


def fuse_shared_inputs(lm: torch.nn.Module) -> int:
    """Fuse every group of ``SIBLINGS`` that are int8 dynamic linears of one input size and
    all with or all without a bias; returns how many groups were fused."""
    fused = 0
    for module in list(lm.modules()):
        for names in SIBLINGS:
            projections = [getattr(module, n, None) for n in names]
            if (
                not all(type(p) is DynamicLinear for p in projections)
                or len({(p.in_features, p.bias() is None) for p in projections}) > 1
            ):
                continue
            group = SharedInput(projections)
            for index, name in enumerate(names):
                setattr(module, name, SharedInputProjection(group, index))
            fused += 1
    return fused
