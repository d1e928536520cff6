"""GRPO rollouts on the project's decoder: they come from the policy with its adapter, end
as TRL's own do, and the same seed replays the same completions."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from stackelberg.llm.base import SamplingParams
from stackelberg.training import GRPOSettings
from stackelberg.training.rollout import LocalRollout

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def policy():
    """The embedded model with a LoRA adapter whose B matrices are not zero (a trained one)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from stackelberg.llm.embedded import ensure_checkpoint

    base = ensure_checkpoint()
    lm = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    model = get_peft_model(lm, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
    return model.eval(), AutoTokenizer.from_pretrained(base)


def test_rollouts_come_from_the_policy_with_its_adapter(policy):
    """At temperature 1 a rollout's log-probabilities are the policy's own (adapter on)."""
    model, tokenizer = policy
    chat = [{"role": "user", "content": "Say one sentence about the vote."}]
    sampling = SamplingParams(temperature=1.0, top_p=1.0, max_new_tokens=10)
    out = LocalRollout(sampling, seed=1)([chat], _Trainer(model, tokenizer))
    prompt, completion = out["prompt_ids"][0], out["completion_ids"][0]
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[0]
    logp = torch.log_softmax(logits[len(prompt) - 1 : -1], dim=-1)
    want = logp.gather(-1, torch.tensor(completion)[:, None]).squeeze(-1)
    assert torch.allclose(torch.tensor(out["logprobs"][0]), want, atol=1e-3)
    with model.disable_adapter(), torch.no_grad():  # the adapter changes them: it was on
        plain = torch.log_softmax(model(torch.tensor([prompt + completion])).logits[0], -1)
    plain = plain[len(prompt) - 1 : -1].gather(-1, torch.tensor(completion)[:, None])
    assert not torch.allclose(plain.squeeze(-1), want, atol=1e-3)


class _Trainer:
    """What LocalRollout reads of a HookedGRPOTrainer."""

    class state:
        global_step = 0

    def __init__(self, model, tokenizer):
        self.model, self.processing_class = model, tokenizer

    def prompt_token_ids(self, prompts):
        return [
            self.processing_class.apply_chat_template(
                p, add_generation_prompt=True, tokenize=True, return_dict=True
            )["input_ids"]
            for p in prompts
        ]


def test_rollouts_end_as_trls_do_and_replay_with_the_seed(policy):
    model, tokenizer = policy
    trainer = _Trainer(model, tokenizer)
    chat = [{"role": "user", "content": "Say one sentence about the vote."}]
    other = [{"role": "user", "content": "Accuse one player."}]
    prompts = [chat, chat, chat, other, other]  # TRL repeats each prompt per completion
    sampling = SamplingParams(temperature=0.7, top_p=0.9, max_new_tokens=12, stop=(".",))
    out = LocalRollout(sampling, seed=3)(prompts, trainer)
    again = LocalRollout(sampling, seed=3)(prompts, trainer)
    assert out == again
    assert len(out["completion_ids"]) == len(prompts) == len(out["prompt_ids"])
    assert out["prompt_ids"][0] == out["prompt_ids"][2] != out["prompt_ids"][3]
    for ids, logps in zip(out["completion_ids"], out["logprobs"], strict=True):
        assert len(ids) == len(logps) and all(lp <= 0 for lp in logps)
        text = tokenizer.decode(ids, skip_special_tokens=True)
        # ended at the stop's token, at end of sequence, or clipped at the limit
        assert (
            "." in tokenizer.decode(ids[-1:])
            or ids[-1] == tokenizer.eos_token_id
            or (len(ids) == 12 and "." not in text)
        )
    assert LocalRollout(sampling, seed=4)(prompts, trainer) != out


def test_local_generation_and_vllm_are_one_choice():
    with pytest.raises(ValidationError, match="use_vllm generates through vLLM"):
        GRPOSettings(use_vllm=True, generation="local")
    with pytest.raises(ValidationError, match="ZeRO-3 shards the weights"):
        GRPOSettings(generation="local", launch="deepspeed", num_processes=2, zero_stage=3)
