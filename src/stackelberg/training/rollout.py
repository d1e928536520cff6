"""GRPO rollouts on the project's own decoder, from the policy as it trains.

TRL's generation runs ``transformers.generate`` on the policy (float32, the LoRA adapter
unmerged): about 150 ms a token on a 2-core CPU. ``LocalRollout`` hands TRL (its
``rollout_func``) completions sampled from the same model, the same weights and the same
adapter, through the local backend's KV-cached decoder, which prefills each distinct prompt
once and forks it into its samples. Nothing is copied or merged, so every rollout comes
from the policy being trained, and TRL computes the log-probabilities it trains on as usual.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import torch

from stackelberg.llm.base import SamplingParams
from stackelberg.llm.local.decode import generate_tokens
from stackelberg.llm.local.model import LocalModel
from stackelberg.llm.local.prefill import Prefiller, PrefixStore


def rollout_seed(seed: int, step: int, prompt: Sequence[int]) -> int:
    """The sampling seed of one prompt at one optimizer step: runs replay exactly."""
    digest = hashlib.sha256(f"{seed}:{step}:{list(prompt)}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


class LocalRollout:
    """TRL's ``rollout_func``: ``(prompts, trainer) -> {prompt_ids, completion_ids, logprobs}``
    for a ``HookedGRPOTrainer`` (it renders the prompts as TRL does).

    ``prompts`` are the step's prompts, each repeated once per completion (TRL's sampler
    repeats them); a run of equal prompts is prefilled once and forked into its samples.
    A completion's ids end with the token that ended it (end of sequence, or the stop
    string's token), as TRL's own generation returns them, so TRL masks what follows and
    counts it as ended, not clipped.
    """

    def __init__(self, sampling: SamplingParams, seed: int, batch_size: int = 64) -> None:
        self.sampling = sampling
        self.seed = seed
        self.batch_size = batch_size

    @torch.inference_mode()
    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list]:
        ids = [list(map(int, p)) for p in trainer.prompt_token_ids(prompts)]
        runs: list[list[int]] = []  # [first index, count] of each run of equal prompts
        for i, p in enumerate(ids):
            if runs and ids[runs[-1][0]] == p:
                runs[-1][1] += 1
            else:
                runs.append([i, 1])
        firsts = [ids[i] for i, _ in runs]
        step = trainer.state.global_step
        policy = trainer.model.get_base_model()  # the adapter's layers stay in it, active
        device = next(policy.parameters()).device
        # no prefix store: its blocks would outlive the weights they were computed with
        prefiller = Prefiller(LocalModel(trainer.processing_class, policy, device), PrefixStore())
        samples = dict(
            generate_tokens(
                prefiller,
                firsts,
                [n for _, n in runs],
                [rollout_seed(self.seed, step, p) for p in firsts],
                [self.sampling] * len(runs),
                self.batch_size,
                logprobs=True,
            )
        )
        completions, logprobs, prompt_ids = [], [], []
        for k, (first, _) in enumerate(runs):
            for s in samples[k]:
                completions.append(s.tokens + ([s.end] if s.end is not None else []))
                logprobs.append(s.logprobs)
                prompt_ids.append(ids[first])
        return {"prompt_ids": prompt_ids, "completion_ids": completions, "logprobs": logprobs}
