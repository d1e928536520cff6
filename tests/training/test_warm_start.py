"""The warm start on the real embedded SmolLM2-135M checkpoint: an SFT fit of the LoRA on two
chats, and GRPO going on from that adapter with it as the KL reference."""

from __future__ import annotations

import json

import pytest

from stackelberg.training import GRPOSettings, train_refiner
from stackelberg.training.trl_bridge import lora_config
from stackelberg.training.warm_start import WarmStartSettings, fit_warm_start, warm_start_adapter

CHATS = [
    {
        "prompt": [
            {"role": "system", "content": "You play Werewolf. You are Player 3."},
            {"role": "user", "content": 'Your planned speech: "I trust Player 2."\nAdd one.'},
        ],
        "completion": [{"role": "assistant", "content": "I suspect Player 5."}],
    },
    {
        "prompt": [
            {"role": "system", "content": "You play Werewolf. You are Player 4."},
            {"role": "user", "content": 'Your planned speech: "I suspect Player 1."\nAdd one.'},
        ],
        "completion": [{"role": "assistant", "content": "Player 6 is a villager."}],
    },
]
ONE_STEP = WarmStartSettings(source="grammar", epochs=1.0, batch_size=2, learning_rate=1e-3)
TINY = GRPOSettings(num_generations=2, precision="float32", beta=0.04)


@pytest.fixture(scope="module")
def embedded_base():
    from stackelberg.llm.embedded import ensure_checkpoint

    return ensure_checkpoint()


@pytest.fixture(scope="module")
def warm(embedded_base, tmp_path_factory):
    """One fit shared by the tests that read its adapter."""
    out = tmp_path_factory.mktemp("warm")
    fit = fit_warm_start(embedded_base, CHATS, ONE_STEP, out, lora=lora_config(TINY), bf16=False)
    return fit, out / "adapter"


def grpo_from(base, adapter, settings: GRPOSettings, out):
    """GRPO on the two chats' prompts from ``adapter`` (longer completions rewarded)."""
    return train_refiner(
        base,
        [c["prompt"] for c in CHATS],
        {"instance_id": ["a", "b"]},
        lambda completions, **_: [float(len(c)) for c in completions],
        settings,
        out,
        completion_limit=8,
        init_adapter=adapter,
    )


def _lora_b(model, adapter: str = "default") -> dict:
    return {
        name: param.detach().clone()
        for name, param in model.named_parameters()
        if f"lora_B.{adapter}." in name
    }


@pytest.mark.slow
def test_the_fit_trains_a_lora_of_grpos_rank_on_the_completions(warm):
    fit, adapter = warm
    assert fit["steps"] == 1 and fit["loss_first"] > 0
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"]) == (TINY.lora_r, TINY.lora_alpha)
    assert warm_start_adapter(adapter) == adapter
    assert warm_start_adapter(adapter.parent / "missing") is None


def test_no_chats_is_refused_before_loading(tmp_path):
    with pytest.raises(ValueError, match="no chats"):
        fit_warm_start(tmp_path, [], ONE_STEP, tmp_path, lora=None, bf16=False)


@pytest.mark.slow
def test_an_adapter_of_another_rank_is_refused_in_one_line(warm, embedded_base, tmp_path):
    _, adapter = warm
    other = GRPOSettings(num_generations=2, precision="float32", lora_r=8)
    with pytest.raises(ValueError, match="has rank 16 and alpha 32, grpo has lora_r 8") as err:
        grpo_from(embedded_base, adapter, other, tmp_path / "out")
    assert "\n" not in str(err.value)


@pytest.mark.slow
def test_grpo_goes_on_from_the_warm_start_which_is_its_kl_reference(warm, embedded_base, tmp_path):
    """The trained adapter starts at the warm start's weights (PEFT starts a new adapter's B
    at zero; these are not) and moves from them; TRL's reference adapter keeps them."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    _, adapter = warm
    start = _lora_b(
        PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(embedded_base), adapter)
    )
    assert any(b.abs().sum() > 0 for b in start.values())
    result = grpo_from(embedded_base, adapter, TINY, tmp_path / "out")
    trained, reference = _lora_b(result.model), _lora_b(result.model, "ref")
    assert trained.keys() == start.keys()
    for name, weights in start.items():
        assert (reference[name.replace(".default.", ".ref.")] == weights).all(), name
    assert any(not (trained[name] == weights).all() for name, weights in start.items())
    saved = json.loads((tmp_path / "out" / "adapter_config.json").read_text())
    assert saved["r"] == TINY.lora_r
    # the trained adapter alone is saved, not TRL's reference copy beside it
    assert all(f.is_file() for f in (tmp_path / "out").iterdir())


@pytest.mark.slow
def test_the_loss_is_on_the_completion_alone_as_the_refiner_is_prompted(embedded_base):
    from transformers import AutoTokenizer

    from stackelberg.training.warm_start import sft_dataset, token_ids

    tokenizer = AutoTokenizer.from_pretrained(embedded_base)
    data = sft_dataset(tokenizer, CHATS)
    for chat, row in zip(CHATS, data, strict=True):
        prompt = token_ids(
            tokenizer.apply_chat_template(chat["prompt"], add_generation_prompt=True, tokenize=True)
        )
        assert row["input_ids"][: len(prompt)] == prompt  # the prompt the Refiner is sampled at
        assert row["labels"][: len(prompt)] == [-100] * len(prompt)
        learned = [t for t in row["labels"][len(prompt) :] if t != -100]
        # the completion and its end of sequence, not what the template adds after it
        assert tokenizer.decode(learned) == chat["completion"][0]["content"] + tokenizer.eos_token
        assert len(learned) < len(row["input_ids"]) - len(prompt)
    assert sft_dataset(tokenizer, CHATS)._fingerprint == data._fingerprint  # no dill hashing
