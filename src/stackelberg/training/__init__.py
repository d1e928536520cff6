"""Layer 5: training the Refiner with GRPO (TRL + a PEFT LoRA adapter).

    from stackelberg.training import GRPOSettings, train_refiner
    result = train_refiner(base, prompts, {"instance_id": ids}, reward_fn, params.grpo, "out/refiner")
    result.adapter_dir  # a PEFT adapter: PeftModel.from_pretrained(base_model, result.adapter_dir)

Importing this package does not import torch, transformers or TRL; ``train_refiner`` does.
"""

from __future__ import annotations

from stackelberg.training.grpo import TrainResult, train_refiner
from stackelberg.training.grpo_settings import GRPOSettings, expected_steps
from stackelberg.training.launch import LaunchError
from stackelberg.training.trl_bridge import (
    RESERVED_COLUMNS,
    UnsupportedTRLError,
    completion_texts,
    trl_reward,
)

__all__ = [
    "RESERVED_COLUMNS",
    "GRPOSettings",
    "LaunchError",
    "TrainResult",
    "UnsupportedTRLError",
    "completion_texts",
    "expected_steps",
    "train_refiner",
    "trl_reward",
]
