"""A LoRA adapter folder merges into the local backend and gets its own cache identity."""

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


def test_adapter_is_local_only_and_must_exist(tmp_path):
    with pytest.raises(ConfigError, match="adapter"):
        make_llm(backend="openai", model="m", adapter=str(tmp_path))
    with pytest.raises(ModelNotFoundError, match=r"is not a PEFT adapter folder$"):
        make_llm(backend="local", cache="off", adapter=str(tmp_path))
