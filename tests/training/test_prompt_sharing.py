"""A group's prompt computed once gives TRL's log-probabilities, entropies and gradients."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM
from trl import GRPOTrainer
from trl.trainer.utils import add_fused_lm_head

from stackelberg.training.prompt_sharing import pack_by_prompt, packed_logps
from stackelberg.training.trl_internals import HookedGRPOTrainer

PAD = 0


def _policy(attn: str, temperature: float = 0.7):
    """A two-layer random Llama with TRL's fused head and a LoRA adapter that is not zero."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        attn_implementation=attn,
    )  # fmt: skip
    lm = LlamaForCausalLM(config).to(torch.float32)
    add_fused_lm_head(lm, temperature=temperature, outputs=("log_probs", "entropy"))
    model = get_peft_model(lm, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.2)
    return model


def _batch():
    """TRL's rows: left-padded prompts, then right-padded completions (a group of three on
    one prompt, a group of two on another, one prompt alone; one empty completion)."""
    prompts = [[5, 6, 7, 8, 9], [11, 12, 13], [3, 4]]
    completions = [
        (0, [21, 22, 23, 2]), (1, [30, 31]), (0, [24]), (1, [32, 33, 34, 35, 36]),
        (0, [25, 26]), (2, [37]), (1, []),
    ]  # fmt: skip
    width_p = max(map(len, prompts))
    width_c = max(len(c) for _, c in completions)
    ids, mask = [], []
    for p, c in completions:
        prompt = prompts[p]
        ids.append([PAD] * (width_p - len(prompt)) + prompt + c + [PAD] * (width_c - len(c)))
        mask.append(
            [0] * (width_p - len(prompt)) + [1] * (len(prompt) + len(c)) + [0] * (width_c - len(c))
        )
    return torch.tensor(ids), torch.tensor(mask), width_c


def _trl(model, ids, mask, width, entropy=True):
    """GRPOTrainer's own forward: one row per completion."""
    trainer = SimpleNamespace(
        accelerator=SimpleNamespace(autocast=nullcontext, is_main_process=True)
    )
    logps, ent, _ = GRPOTrainer._get_per_token_logps_and_entropies(
        trainer, model, ids, mask, width, batch_size=2, compute_entropy=entropy
    )
    return logps, ent


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_packed_rows_give_trls_logprobs_entropies_and_gradients(attn):
    model = _policy(attn)
    ids, mask, width = _batch()
    packs = pack_by_prompt(ids, mask, width)
    assert packs is not None and len(packs) == 3
    assert sum(p.ids.numel() for p in packs) < mask.sum()  # fewer tokens computed

    lora = [p for n, p in model.named_parameters() if "lora_" in n]
    completion_mask = mask[:, -width:].float()

    def run(forward):
        model.zero_grad()
        logps, ent = forward()
        ((logps * completion_mask).sum() + (ent * completion_mask).sum()).backward()
        return logps.detach(), ent.detach(), [p.grad.clone() for p in lora]

    ref = run(lambda: _trl(model, ids, mask, width))
    got = run(lambda: packed_logps(model, packs, ids.size(0), width, True, attn))
    torch.testing.assert_close(got[0], ref[0], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(got[1], ref[1], atol=1e-5, rtol=1e-4)
    assert (got[0][completion_mask == 0] == 0).all()
    for g, r in zip(got[2], ref[2], strict=True):
        torch.testing.assert_close(g, r, atol=1e-5, rtol=1e-4)
    assert any(g.abs().sum() > 0 for g in got[2])


def test_nothing_is_packed_when_no_prompt_is_shared_or_a_mask_has_a_hole():
    ids, mask, width = _batch()
    assert pack_by_prompt(ids[[0, 1, 5]], mask[[0, 1, 5]], width) is None
    holed = mask.clone()
    holed[0, -width + 1] = 0  # a completion token masked before its end
    assert pack_by_prompt(ids, holed, width) is None


def _hooked(share: bool) -> HookedGRPOTrainer:
    """The trainer's forward alone: no model loaded, no dataset."""
    trainer = HookedGRPOTrainer.__new__(HookedGRPOTrainer)
    trainer.share_prompts = share
    trainer.accelerator = SimpleNamespace(
        autocast=nullcontext, is_main_process=True, unwrap_model=lambda m: m
    )
    return trainer


@pytest.mark.parametrize("share", [True, False])
def test_the_trainer_packs_only_when_asked(monkeypatch, share):
    model = _policy("sdpa")
    ids, mask, width = _batch()
    calls = []
    import stackelberg.training.trl_internals as internals

    real = internals.packed_logps
    monkeypatch.setattr(internals, "packed_logps", lambda *a, **k: calls.append(1) or real(*a, **k))
    trainer = _hooked(share)
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            model, ids, mask, width, batch_size=1
        )
        ref, _ = _trl(model, ids, mask, width, entropy=False)
    assert bool(calls) is share
    torch.testing.assert_close(logps, ref, atol=1e-5, rtol=1e-4)
