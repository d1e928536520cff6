"""TRL's GRPOTrainer with per-step wall times of generation and reward, and a step callback.

Kept apart from ``grpo.py`` because importing TRL takes seconds: ``grpo.py`` imports this
module only when it trains. What touches TRL's private API is in ``trl_internals``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from stackelberg.training.trl_internals import HookedGRPOTrainer

# Keys of the Trainer's end-of-training summary log; that log is not a step.
_SUMMARY_KEYS = frozenset({"train_runtime", "train_samples_per_second", "train_steps_per_second"})


class TimedGRPOTrainer(HookedGRPOTrainer):
    """GRPOTrainer that logs ``generation_s`` and ``reward_s`` with every step's metrics.

    Generation and the reward (a Measurer LLM in this project) dominate a GRPO step, and
    knowing which one does decides where to spend effort (vLLM, a faster Measurer).

    ``stop_token_ids`` end a completion as end-of-sequence does (the Refiner's stop, e.g. a
    newline): generation stops there, the loss masks what follows, and TRL's
    ``completions/clipped_ratio`` counts such a completion as ended, not clipped.
    """

    def __init__(self, *args: Any, stop_token_ids: Sequence[int] = (), **kwargs: Any) -> None:
        self.generation_s_total = 0.0
        self.reward_s_total = 0.0
        super().__init__(*args, **kwargs)
        if stop_token_ids:
            self.add_eos_token_ids(stop_token_ids)

    def save_adapter(self, folder: str | Path) -> bool:
        """Save the LoRA adapter to ``folder`` in the main process; True there.

        Every process of a launched run calls it: under DeepSpeed ZeRO-3 the weights are
        gathered from all of them (``stage3_gather_16bit_weights_on_model_save``).
        """
        engine = self.deepspeed if self.is_deepspeed_enabled else self.model
        state_dict = self.accelerator.get_state_dict(engine)
        if not self.accelerator.is_main_process:
            return False
        # the trained adapter alone: a warm-started run also holds TRL's frozen copy, "ref"
        self.accelerator.unwrap_model(self.model).save_pretrained(
            folder, state_dict=state_dict, selected_adapters=["default"]
        )
        return True

    def on_step_time(self, name: str, seconds: float) -> None:
        self.record_metric(name, seconds)
        if self.model.training:
            if name == "generation_s":
                self.generation_s_total += seconds
            else:
                self.reward_s_total += seconds


class StepLog(TrainerCallback):
    """Collects every logged step's metrics and forwards them to ``on_step`` (e.g. MLflow)."""

    def __init__(self, on_step: Callable[[int, dict], None] | None = None) -> None:
        self.on_step = on_step
        self.history: list[dict] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any):
        if not logs or _SUMMARY_KEYS & logs.keys():
            return
        metrics = {"step": state.global_step, **{k: _plain(v) for k, v in logs.items()}}
        self.history.append(metrics)
        if self.on_step is not None:
            self.on_step(state.global_step, dict(metrics))


class StepProgress(TrainerCallback):
    """GRPO steps done out of the total, with rate and time left (``stackelberg.progress``)."""

    def __init__(self, desc: str = "grpo") -> None:
        self.desc = desc
        self.bar: Any = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any):
        from stackelberg.progress import progress

        self.bar = progress(state.max_steps, self.desc, "step")

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any):
        if self.bar is not None:
            self.bar.update(state.global_step - self.bar.n)

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _plain(value: Any) -> Any:
    """Tensors and numpy scalars as Python numbers, so metrics go to JSON and MLflow as they are."""
    return value.item() if hasattr(value, "item") else value
