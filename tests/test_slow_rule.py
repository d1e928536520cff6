"""The rule of the `slow` marker (tests/conftest.py): a test not marked slow that loads or
converts a real model fails with one line saying so, whichever entry point it went through;
a tiny checkpoint the test builds for itself may load."""

from __future__ import annotations

import pytest


def test_converting_an_embedded_model_fails_a_fast_test():
    from stackelberg.llm.embedded import ensure_checkpoint

    with pytest.raises(pytest.fail.Exception, match=r"loads a model \(ensure_checkpoint\): mark"):
        ensure_checkpoint()


@pytest.mark.parametrize("loader", ["AutoModelForCausalLM", "PreTrainedModel"])
def test_loading_a_real_model_with_transformers_fails_a_fast_test(tmp_path, loader):
    import transformers

    big = tmp_path / "big"
    big.mkdir()
    with open(big / "model.safetensors", "wb") as weights:
        weights.truncate(10**9)  # a real model's size, sparse: nothing written to disk
    for source in ("HuggingFaceTB/SmolLM2-135M-Instruct", big):
        with pytest.raises(pytest.fail.Exception, match="this test loads a model"):
            getattr(transformers, loader).from_pretrained(source)


def test_a_tiny_checkpoint_the_test_builds_may_load(tmp_path):
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=16, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1,
    )  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(tmp_path)
    assert AutoModelForCausalLM.from_pretrained(tmp_path).config.hidden_size == 8
