"""The one place that touches TRL's private GRPOTrainer API.

Timing generation apart from the reward needs the trainer's private steps (``_generate``,
``_calculate_rewards``) and its metrics store (``_metrics``); extra stop tokens need its
end-of-sequence ids and generation settings; rollouts of our own (``rollout.LocalRollout``)
need its prompt rendering (``_tokenize_prompts``); computing a group's prompt once
(``prompt_sharing``) replaces its log-probability forward (``_get_per_token_logps_and_entropies``,
whose rows it packs and whose fused LM head it calls). None of these is a stable TRL API, which is why
pyproject.toml bounds trl to the range the suite runs against, and why importing this module
checks them first: a TRL without them fails with one line, not deep inside a training step.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import trl
from trl import GRPOTrainer

from stackelberg.training.prompt_sharing import (
    TREE_MASK_KERNELS,
    attention_kernel,
    pack_by_prompt,
    packed_logps,
)
from stackelberg.training.trl_bridge import UnsupportedTRLError

#: GRPOTrainer's private steps that ``HookedGRPOTrainer`` wraps or calls.
WRAPPED_STEPS = (
    "_generate",
    "_calculate_rewards",
    "_tokenize_prompts",
    "_get_per_token_logps_and_entropies",
)


def check_trl(trainer_class: type = GRPOTrainer) -> None:
    """Raise ``UnsupportedTRLError`` (one line) if ``trainer_class`` lacks a wrapped step."""
    missing = [m for m in WRAPPED_STEPS if not callable(getattr(trainer_class, m, None))]
    if missing:
        raise UnsupportedTRLError(
            f"trl {trl.__version__}: {trainer_class.__name__} has no {', '.join(missing)}, "
            "which stackelberg.training times; install a trl in the range pyproject.toml names"
        )


check_trl()


class HookedGRPOTrainer(GRPOTrainer):
    """GRPOTrainer with public hooks over its private parts: ``on_step_time`` hears the wall
    time of each generation and reward step, ``record_metric`` logs with the step's metrics,
    ``add_eos_token_ids`` ends completions at more tokens; with ``share_prompts`` the rows of
    a forward that share a prompt compute it once (``prompt_sharing``)."""

    def __init__(self, *args: Any, share_prompts: bool = False, **kwargs: Any) -> None:
        self.share_prompts = share_prompts
        with warnings.catch_warnings():  # TRL flags rollout_func as experimental: pinned here
            warnings.filterwarnings("ignore", "You are using 'rollout_func'", UserWarning)
            super().__init__(*args, **kwargs)

    def on_step_time(self, name: str, seconds: float) -> None:
        """Called with ``generation_s`` or ``reward_s`` after each such step (even a failed one)."""

    def record_metric(self, name: str, value: float) -> None:
        """Log ``value`` under ``name`` with the current step's metrics (train or eval)."""
        self._metrics["train" if self.model.training else "eval"][name].append(value)

    def add_eos_token_ids(self, token_ids: Sequence[int]) -> None:
        """End completions at ``token_ids`` as at end-of-sequence (and mask what follows)."""
        self.eos_token_ids = list(dict.fromkeys([*self.eos_token_ids, *token_ids]))
        if getattr(self, "generation_kwargs", None) is not None:  # transformers generate
            self.generation_kwargs["eos_token_id"] = self.eos_token_ids
            self.generation_config.eos_token_id = self.eos_token_ids

    @contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.on_step_time(name, time.perf_counter() - start)

    def prompt_token_ids(self, prompts: list[Any]) -> list[list[int]]:
        """The token ids of ``prompts`` as TRL's own generation renders them."""
        return self._tokenize_prompts(prompts)[0]

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        with self._timed("generation_s"):
            return super()._generate(*args, **kwargs)

    def _calculate_rewards(self, *args: Any, **kwargs: Any) -> Any:
        with self._timed("reward_s"):
            return super()._calculate_rewards(*args, **kwargs)

    def _get_per_token_logps_and_entropies(
        self,
        model: Any,
        input_ids: Any,
        attention_mask: Any,
        logits_to_keep: int,
        batch_size: int | None = None,
        compute_entropy: bool = False,
        compute_aux_loss: bool = False,
        **extra: Any,
    ) -> Any:
        packs, kernel = None, None
        plain_text = not compute_aux_loss and all(v is None for v in extra.values())
        if self.share_prompts and plain_text:
            kernel = attention_kernel(self.accelerator.unwrap_model(model))
        if kernel in TREE_MASK_KERNELS:
            # a whole no-grad batch packs at once; TRL's batch_size chunks bound the
            # memory of one row per completion, which packing shrinks
            packs = pack_by_prompt(input_ids, attention_mask, logits_to_keep)
        if packs is None:
            return super()._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size=batch_size,
                compute_entropy=compute_entropy,
                compute_aux_loss=compute_aux_loss,
                **extra,
            )
        with self.accelerator.autocast():
            logps, entropies = packed_logps(
                model, packs, input_ids.size(0), logits_to_keep, compute_entropy, kernel
            )
        return logps, entropies, None
