"""A plain LoRA adapter beside shared weights runs as lean modules with PEFT's numbers."""

from __future__ import annotations

import pytest
import torch

from stackelberg.llm.embedded import ensure_checkpoint
from stackelberg.llm.local import loading
from stackelberg.llm.local.lora import AdaptedInput, LoRALinear, lean_lora, lora_matrices

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's eager int8 API

CPU = torch.device("cpu")
ADAPTED = ["q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]  # k_proj not


@pytest.fixture(scope="module")
def adapter_dir(tmp_path_factory):
    """An adapter on every projection but the key's, with a non-zero update."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(ensure_checkpoint(), dtype=torch.float32)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=ADAPTED))
    torch.manual_seed(0)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.05)
    out = tmp_path_factory.mktemp("adapter")
    model.save_pretrained(out)
    return str(out)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_lean_layers_give_peft_layers_numbers(adapter_dir, dtype, monkeypatch):
    _, lm = loading.load_model(ensure_checkpoint(), "embedded", dtype, CPU, None)
    lean = loading.lora_beside(lm, adapter_dir)
    monkeypatch.setattr(loading, "lean_lora", lambda model: 0)
    peft = loading.lora_beside(lm, adapter_dir)
    for i in (0, 29):
        lean_layer, peft_layer = lean.model.layers[i], peft.model.layers[i]
        assert type(peft_layer.self_attn.q_proj).__name__ == "Linear"  # PEFT's own layer
        if dtype == "int8":  # a fused group: one AdaptedInput over the players' matmul
            group = lean_layer.self_attn.q_proj.group
            assert isinstance(group, AdaptedInput)
            assert group.base is lm.model.layers[i].self_attn.k_proj.group
            assert lean_layer.self_attn.k_proj.group is group
        else:
            assert isinstance(lean_layer.self_attn.q_proj, LoRALinear)
            assert lean_layer.self_attn.k_proj is lm.model.layers[i].self_attn.k_proj
        assert isinstance(lean_layer.self_attn.o_proj, LoRALinear)
        assert isinstance(lean_layer.mlp.down_proj, LoRALinear)
        gen = torch.Generator().manual_seed(i)
        for block, names in (
            ("self_attn", ("q_proj", "k_proj", "v_proj", "o_proj")),
            ("mlp", ("gate_proj", "up_proj", "down_proj")),
        ):
            for shape in ((1, 1), (2, 7)):
                ins = {}
                for name in names:
                    width = getattr(lm.model.layers[i], block).get_submodule(name).in_features
                    ins.setdefault(width, torch.randn(*shape, width, generator=gen))
                with torch.no_grad():
                    for name in names:
                        ours = getattr(getattr(lean_layer, block), name)
                        theirs = getattr(getattr(peft_layer, block), name)
                        x = ins[ours.in_features]
                        assert torch.allclose(ours(x), theirs(x), rtol=1e-5, atol=1e-5), name


@pytest.mark.slow
def test_the_model_runs_the_adapter_as_peft_does(adapter_dir, monkeypatch):
    _, lm = loading.load_model(ensure_checkpoint(), "embedded", "int8", CPU, None)
    lean = loading.lora_beside(lm, adapter_dir)
    monkeypatch.setattr(loading, "lean_lora", lambda model: 0)
    peft = loading.lora_beside(lm, adapter_dir)
    with torch.no_grad():
        ids = torch.tensor([[504, 3267, 4999, 327, 3468, 216, 34, 30]])
        ours, theirs, base = lean(ids).logits, peft(ids).logits, lm(ids).logits
    # int8 quantizes each layer's input per batch: a rounding difference upstream can move
    # a quantized activation by one step, so the models agree closely, not bit for bit
    assert (ours - theirs).abs().max() < 0.05 * (theirs - base).abs().max()


def test_only_plain_adapters_become_lean():
    from peft import LoraConfig, inject_adapter_in_model

    for extra, plain in (({}, True), ({"use_dora": True}, False), ({"lora_bias": True}, False)):
        net = torch.nn.Sequential(torch.nn.Linear(8, 8))
        net = inject_adapter_in_model(LoraConfig(r=2, target_modules=["0"], **extra), net)
        assert (lora_matrices(net[0]) is not None) is plain, extra
        assert lean_lora(net) == int(plain)
        assert isinstance(net[0], LoRALinear) is plain
    assert lora_matrices(torch.nn.Linear(8, 8)) is None
