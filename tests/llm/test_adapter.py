"""A LoRA adapter folder runs in the local backend beside the base's shared weights and gets
its own cache identity."""

from __future__ import annotations

import pytest
import torch

from stackelberg.llm import ConfigError, make_llm
from stackelberg.llm.embedded import ensure_checkpoint
from stackelberg.llm.errors import ModelNotFoundError


@pytest.fixture(scope="module")
def adapter_dir(tmp_path_factory):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(ensure_checkpoint(), dtype=torch.float32)
    model = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(0)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.05)  # a non-zero update, as after training
    out = tmp_path_factory.mktemp("adapter")
    model.save_pretrained(out)
    return out


def test_adapter_changes_scores_and_cache_identity(local_llm, adapter_dir):
    tuned = make_llm(backend="local", cache="off", adapter=str(adapter_dir))
    assert tuned.model.startswith(local_llm.model + "+lora:")
    prefix, conts = "The village votes for", [" Player 2.", " nobody."]
    base_scores = local_llm.score(prefix, conts)
    tuned_scores = tuned.score(prefix, conts)
    diff = max(
        abs(a - b)
        for x, y in zip(base_scores, tuned_scores, strict=True)
        for a, b in zip(x, y, strict=True)
    )
    assert diff > 1e-3


def test_adapter_is_a_folder_only_locally_and_must_exist(tmp_path):
    # a server serves an adapter by name (tests/llm/test_openai_adapter.py)
    with pytest.raises(ConfigError, match="adapter: on the openai backend, the name"):
        make_llm(backend="openai", model="m", adapter=str(tmp_path))
    with pytest.raises(ModelNotFoundError, match=r"is not a PEFT adapter folder$"):
        # a base that is no checkpoint: refused before the base would load
        make_llm(backend="local", model=str(tmp_path / "base"), cache="off", adapter=str(tmp_path))


def test_adapter_runs_beside_the_shared_weights_as_if_merged(local_llm, adapter_dir):
    """float32: the same log-probabilities as the adapter merged in, and no second copy of
    the base: the adapter's layers wrap the modules the plain backend runs."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    tuned = make_llm(backend="local", cache="off", adapter=str(adapter_dir))
    layer = tuned.lm.model.layers[0].self_attn
    assert layer.q_proj.base_layer is local_llm.lm.model.layers[0].self_attn.q_proj
    assert tuned.lm.model.embed_tokens is local_llm.lm.model.embed_tokens
    assert tuned.lm.lm_head is local_llm.lm.lm_head
    base = AutoModelForCausalLM.from_pretrained(ensure_checkpoint(), dtype=torch.float32)
    merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload().eval()
    ids = local_llm.tokenizer("The village votes for Player 2.", return_tensors="pt").input_ids
    with torch.no_grad():
        expected = torch.log_softmax(merged(ids).logits, -1)
        got = torch.log_softmax(tuned.lm(ids).logits, -1)
    assert torch.allclose(got, expected, atol=2e-4)


@pytest.mark.slow
def test_int8_adapter_keeps_the_update_that_int8_would_round_away(tmp_path):
    """int8: each adapted layer is the int8 base's (the players' fused group) plus the
    float32 LoRA update, however small; merged and quantized, an update far below the int8
    step leaves almost every int8 weight as it was."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(ensure_checkpoint(), dtype=torch.float32)
    model = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj"]))
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.fill_(1e-4)  # an update of ~1e-4 a weight, as two GRPO steps make
    lora = model.base_model.model.model.layers[0].self_attn.q_proj
    a, b = lora.lora_A["default"].weight.detach(), lora.lora_B["default"].weight.detach()
    scaling = lora.scaling["default"]
    model.save_pretrained(tmp_path)
    players = make_llm(backend="local", cache="off", dtype="int8")
    tuned = make_llm(backend="local", cache="off", dtype="int8", adapter=str(tmp_path))
    q = tuned.lm.model.layers[0].self_attn.q_proj
    plain_q = players.lm.model.layers[0].self_attn.q_proj
    assert q.group.base is plain_q.group  # the players' int8 weights, not a copy
    x = torch.randn(3, q.in_features, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        update = (x @ a.T) @ b.T * scaling
        # kept whole, up to float32 rounding of outputs ~20 (~2e-6)
        assert ((q(x) - plain_q(x)) - update).abs().max() < 0.05 * update.abs().max()
    step = plain_q.weight().q_scale()
    assert (b @ a * scaling).abs().max() < 0.1 * step  # merged, int8 would round it away


def test_only_plain_lora_adapters_run_beside(tmp_path):
    from peft import LoraConfig

    from stackelberg.llm.local.loading import plain_lora

    for name, extra, plain in [
        ("plain", {}, True),
        ("dora", {"use_dora": True}, False),
        ("saved", {"modules_to_save": ["lm_head"]}, False),
    ]:
        LoraConfig(r=4, target_modules=["q_proj"], **extra).save_pretrained(tmp_path / name)
        assert plain_lora(str(tmp_path / name)) is plain, name


def test_an_adapter_of_another_model_is_one_clear_error(local_llm, tmp_path):
    from peft import LoraConfig

    LoraConfig(r=4, target_modules=["c_attn"]).save_pretrained(tmp_path)  # GPT-2's layer
    with pytest.raises(ModelNotFoundError, match=r"does not fit this model \(Target modules"):
        make_llm(backend="local", cache="off", adapter=str(tmp_path))
