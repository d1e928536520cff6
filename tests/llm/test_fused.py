"""int8 projections that read one input run as one matmul, with the same numbers."""

from __future__ import annotations

import copy
import threading

import pytest
import torch
from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

from stackelberg.llm.local.fused import SharedInputProjection, fuse_shared_inputs


class Block(torch.nn.Module):
    """Attention and MLP projections named as Llama-family models name them."""

    def __init__(self, bias: bool = False) -> None:
        super().__init__()
        self.q_proj = torch.nn.Linear(16, 16, bias=bias)
        self.k_proj = torch.nn.Linear(16, 8, bias=bias)
        self.v_proj = torch.nn.Linear(16, 8, bias=bias)
        self.gate_proj = torch.nn.Linear(16, 24, bias=bias)
        self.up_proj = torch.nn.Linear(16, 24, bias=bias)
        self.down_proj = torch.nn.Linear(24, 16, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mixed = self.q_proj(x) + torch.cat([self.k_proj(x), self.v_proj(x)], -1)
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(mixed)) * self.up_proj(mixed))


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's eager API


def int8_pair(bias: bool) -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    plain = Block(bias)
    for p in plain.parameters():  # projections of different ranges: different int8 scales
        p.data.mul_(torch.rand(()) * 3)
    fused = Block(bias)
    fused.load_state_dict(plain.state_dict())
    for m in (plain, fused):
        torch.ao.quantization.quantize_dynamic(
            m, {torch.nn.Linear}, dtype=torch.qint8, inplace=True
        )
    assert fuse_shared_inputs(fused) == 2
    return plain, fused


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("shape", [(1, 1, 16), (4, 1, 16), (2, 37, 16), (3, 16)])
def test_fused_projections_give_the_separate_ones_bit_for_bit(bias, shape):
    plain, fused = int8_pair(bias)
    assert isinstance(fused.k_proj, SharedInputProjection)
    assert type(fused.down_proj) is DynamicLinear  # reads its own input: left alone
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.equal(fused(x), plain(x))
        for name in ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"):
            w, v = getattr(fused, name).weight(), getattr(plain, name).weight()
            assert torch.equal(w.int_repr(), v.int_repr()) and w.q_scale() == v.q_scale()


def test_any_call_order_and_a_repeated_call_read_the_right_part():
    plain, fused = int8_pair(bias=False)
    x, y = torch.randn(2, 16), torch.randn(2, 16)
    with torch.no_grad():
        assert torch.equal(fused.v_proj(x), plain.v_proj(x))
        assert torch.equal(fused.v_proj(y), plain.v_proj(y))  # a new input: computed again
        assert torch.equal(fused.q_proj(x), plain.q_proj(x))
        assert torch.equal(fused.q_proj(x), plain.q_proj(x))  # read twice: computed again
        assert torch.equal(fused.k_proj(y), plain.k_proj(y))


def test_threads_keep_their_own_inputs():
    plain, fused = int8_pair(bias=False)
    inputs = [torch.randn(3, 16, generator=torch.Generator().manual_seed(s)) for s in range(2)]
    start, errors = threading.Barrier(2), []

    def run(x: torch.Tensor) -> None:
        start.wait()
        with torch.no_grad():
            for _ in range(200):
                if not torch.equal(fused(x), plain(x)):
                    errors.append(x)
                    return

    threads = [threading.Thread(target=run, args=(x,)) for x in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_embedded_int8_model_runs_fused_with_the_same_logits(local_llm):
    from stackelberg.llm.local.loading import quantize_int8

    lm = local_llm.lm  # float32
    plain = torch.ao.quantization.quantize_dynamic(
        lm, {torch.nn.Linear}, dtype=torch.qint8, inplace=False
    )
    fused = quantize_int8(copy.deepcopy(lm))
    attn = fused.model.layers[0].self_attn
    assert isinstance(attn.q_proj, SharedInputProjection)
    ids = local_llm.tokenizer(
        ["The village votes for Player 2.", "Player 3 is the seer, I am sure."],
        return_tensors="pt",
        padding=True,
    )
    with torch.no_grad():
        assert torch.equal(fused(**ids).logits, plain(**ids).logits)
