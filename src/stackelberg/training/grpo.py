"""Step 3 of the paper: GRPO on the Refiner, through TRL's GRPOTrainer and a LoRA adapter.

Each optimizer step takes ``prompts_per_step`` Refiner prompts, samples ``num_generations``
rewrites of each, scores them with the caller's reward (the Measurer's persuasion reward) and
updates the adapter with group-relative advantages. Everything where TRL's defaults differ
from the paper is set explicitly from :class:`GRPOSettings` (``trl_bridge``); the adapter
is kept as ``grpo_outputs`` describes.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stackelberg.io import replace_dir
from stackelberg.training.grpo_outputs import SETTINGS_FILE, check_replaceable
from stackelberg.training.grpo_settings import GRPOSettings, machine_problem
from stackelberg.training.trl_bridge import (
    RESERVED_COLUMNS,
    grpo_config,
    lora_config,
    prompt_dataset,
    stop_token_ids,
    trl_reward,
)

log = logging.getLogger(__name__)


@dataclass
class TrainResult:
    """What a run produced; ``model`` is the trained PeftModel, still in memory."""

    adapter_dir: Path
    steps: int
    history: list[dict]
    generation_s: float
    reward_s: float
    model: Any = field(default=None, repr=False, compare=False)
    #: False in the other processes of a launched run: only the main one writes the adapter
    main_process: bool = True


def check_inputs(
    base_model: str | Path,
    prompts: Sequence[list[dict]],
    columns: Mapping[str, Sequence[Any]],
    settings: GRPOSettings,
    cuda: bool,
) -> Path:
    """Fail in one line, before loading anything, on inputs that cannot train; return the base."""
    base = Path(base_model).expanduser()
    if not (base / "config.json").is_file():
        raise FileNotFoundError(
            f"base model {str(base_model)!r} is not a checkpoint folder (no config.json there); "
            "pass a local Hugging Face checkpoint, e.g. stackelberg.llm.embedded.ensure_checkpoint()"
        )
    if not prompts:
        raise ValueError("prompts is empty: GRPO needs at least one Refiner prompt")
    for i, prompt in enumerate(prompts):
        if not (
            isinstance(prompt, list)
            and prompt
            and all(isinstance(m, dict) and "role" in m and "content" in m for m in prompt)
        ):
            raise ValueError(
                f"prompts[{i}] is not a chat (a non-empty list of {{'role', 'content'}} dicts)"
            )
    if len(prompts) < settings.prompts_per_step:
        raise ValueError(
            f"{len(prompts)} prompts cannot fill one step of prompts_per_step="
            f"{settings.prompts_per_step}; lower prompts_per_step or add prompts"
        )
    for name, values in columns.items():
        if name in RESERVED_COLUMNS:
            raise ValueError(
                f"column {name!r} clashes with a name TRL passes to rewards; "
                f"rename it (reserved: {sorted(RESERVED_COLUMNS)})"
            )
        if len(values) != len(prompts):
            raise ValueError(
                f"column {name!r} has {len(values)} values for {len(prompts)} prompts; "
                "give one value per prompt"
            )
    problem = machine_problem(settings, gpus=1 if cuda else 0)
    if problem:
        raise ValueError(problem)
    if len(prompts) % settings.prompts_per_step:
        log.warning(
            "%d prompts with prompts_per_step=%d: %d random prompts sit out each epoch",
            len(prompts),
            settings.prompts_per_step,
            len(prompts) % settings.prompts_per_step,
        )
    return base


def warm_started(base: Path, adapter: str | Path, settings: GRPOSettings, args: Any) -> Any:
    """The base model (in the trainer's dtype) with ``adapter`` loaded to train on."""
    from peft import PeftConfig, PeftModel
    from transformers import AutoModelForCausalLM

    config = PeftConfig.from_pretrained(str(adapter))
    if (config.r, config.lora_alpha) != (settings.lora_r, settings.lora_alpha):
        raise ValueError(
            f"the warm-start adapter {str(adapter)!r} has rank {config.r} and alpha "
            f"{config.lora_alpha}, grpo has lora_r {settings.lora_r} and lora_alpha "
            f"{settings.lora_alpha}; fit the warm start again"
        )
    model = AutoModelForCausalLM.from_pretrained(str(base), **(args.model_init_kwargs or {}))
    return PeftModel.from_pretrained(model, str(adapter), is_trainable=True)


def train_refiner(
    base_model: str | Path,
    prompts: list[list[dict]],
    columns: dict[str, list],
    reward_fn: Callable[..., list[float]],
    settings: GRPOSettings,
    output_dir: str | Path,
    *,
    completion_limit: int,
    on_step: Callable[[int, dict], None] | None = None,
    stop: Sequence[str] = (),
    desc: str = "grpo",
    init_adapter: str | Path | None = None,
) -> TrainResult:
    """Train a LoRA Refiner adapter with GRPO and save it atomically to ``output_dir``.

    ``reward_fn(completions: list[str], **columns)`` gets the completion texts and, for each
    column, the value of each completion's prompt; it returns one float per completion.
    ``completion_limit`` and ``stop`` end a completion as the Refiner's profile does
    (``RefinerProfile.token_limit``, ``style.stop``).
    Columns go through a ``datasets.Dataset``: use strings, numbers or uniform lists/dicts
    (JSON strings for ragged structures), as Arrow fills missing dict keys with None.
    ``on_step(step, metrics)`` gets every step's metrics (loss, reward, reward_std, kl,
    generation_s, reward_s, ...), e.g. to log them to MLflow. ``desc`` names the steps'
    progress bar. ``init_adapter``: a LoRA adapter of the base (a warm start,
    ``training.warm_start``) that GRPO goes on training, and its KL reference; its rank
    must be ``settings.lora_r``. None: a new adapter on the base.
    """
    import torch

    cuda = torch.cuda.is_available()
    base = check_inputs(base_model, prompts, columns, settings, cuda)
    out = Path(output_dir).expanduser()
    check_replaceable(out)
    if not cuda:
        # The thread count of inference (llm.local.threads: the machine's cores unless
        # OMP_NUM_THREADS says), fixed so that the numbers do not follow the machine's load.
        from stackelberg.llm.local import set_threads
        from stackelberg.llm.local.loading import bound_onednn_cache

        set_threads(None)
        bound_onednn_cache()  # bfloat16 training: a kernel per shape

    from transformers import AutoTokenizer

    from stackelberg.training.trainer import StepLog, StepProgress, TimedGRPOTrainer

    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        dataset = prompt_dataset(prompts, columns)
        steps_log = StepLog(on_step)
        stop_ids = stop_token_ids(AutoTokenizer.from_pretrained(base), stop) if stop else []
        rollout = None
        if settings.generation == "local":
            from stackelberg.llm.base import SamplingParams
            from stackelberg.training.rollout import LocalRollout

            sampling = SamplingParams(
                temperature=settings.temperature,
                top_p=settings.top_p,
                max_new_tokens=completion_limit,
                stop=tuple(stop),
            )
            rollout = LocalRollout(sampling, settings.seed)
        args = grpo_config(settings, work / "trainer", cuda, completion_limit, stop_ids)
        model, peft_config = str(base), lora_config(settings)
        if init_adapter is not None:
            model, peft_config = warm_started(base, init_adapter, settings, args), None
        trainer = TimedGRPOTrainer(
            model=model,
            reward_funcs=trl_reward(reward_fn),
            args=args,
            stop_token_ids=stop_ids,
            train_dataset=dataset,
            peft_config=peft_config,
            callbacks=[steps_log, StepProgress(desc)],
            rollout_func=rollout,
            share_prompts=settings.share_prompts,
        )
        trainer.train()
        staged = work / "adapter"
        main_process = trainer.save_adapter(staged)
        if main_process:
            info = {
                "base_model": str(base),
                "settings": settings.model_dump(mode="json"),
                "completion_limit": completion_limit,
                "stop": list(stop),
                "steps": trainer.state.global_step,
                "warm_start": None if init_adapter is None else str(init_adapter),
            }
            (staged / SETTINGS_FILE).write_text(json.dumps(info, indent=2))
            replace_dir(staged, out)
        trainer.accelerator.wait_for_everyone()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return TrainResult(
        adapter_dir=out,
        steps=trainer.state.global_step,
        history=steps_log.history,
        generation_s=trainer.generation_s_total,
        reward_s=trainer.reward_s_total,
        model=trainer.model,
        main_process=main_process,
    )
