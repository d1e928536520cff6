"""The bridge to TRL's public API: its config, its reward call convention, its dataset.

Everything here speaks TRL's conventions in the project's terms and imports TRL (and
datasets) only when called; what touches TRL's private trainer API is ``trl_internals``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from stackelberg.training.grpo_settings import GRPOSettings, train_precision

# Keyword names TRL itself passes to reward functions: a dataset column cannot use them.
RESERVED_COLUMNS = frozenset(
    {
        "prompt",
        "prompts",
        "completion",
        "completions",
        "completion_ids",
        "trainer_state",
        "log_extra",
        "log_metric",
        "environments",
        "step",  # trl_reward's
    }
)


class UnsupportedTRLError(ImportError):
    """The installed TRL lacks a private GRPOTrainer step this project wraps (one line).

    Raised by ``trl_internals.check_trl``; defined here, where importing it imports no TRL,
    so that callers can catch it without paying for TRL's import.
    """


def completion_texts(completions: Sequence[Any]) -> list[str]:
    """The text of each completion as TRL passes them to a reward function.

    >>> completion_texts([[{"role": "assistant", "content": "Response: hi"}], "plain"])
    ['Response: hi', 'plain']
    """
    texts = []
    for completion in completions:
        if isinstance(completion, str):
            texts.append(completion)
        else:  # conversational: the assistant messages of this completion
            texts.append("".join(m.get("content") or "" for m in completion))
    return texts


def trl_reward(reward_fn: Callable[..., Sequence[float | None]]) -> Callable[..., list]:
    """Adapt ``reward_fn(completions: list[str], **columns)`` to TRL's reward call convention.

    TRL calls ``f(prompts=, completions=, completion_ids=, **columns, trainer_state=, ...)``
    with message-list completions; the project's rewards want texts and the dataset columns.
    A ``reward_fn`` with a ``log_metric`` parameter also gets TRL's ``log_metric(name,
    value)``, which adds a metric to the step's logs (averaged over the step's calls).
    A ``reward_fn`` with a ``step`` parameter gets the optimizer step (from 1) that trains
    on the completions: TRL scores a generation batch before the steps that use it, at
    ``global_step`` = the steps done, so it is ``global_step + 1`` (None without TRL's
    state). ``grpo_config_args`` makes a generation batch one optimizer step
    (``steps_per_generation`` = ``gradient_accumulation_steps``, ``num_iterations`` 1),
    so each process calls the reward once per step, on its share of the step's completions;
    were a batch to span several steps, its rewards would count for the first. A
    ``reward_fn`` with a ``completion_ids`` parameter gets each completion's token ids (they
    end with the token that ended it: one cut at the limit has exactly the limit's count).

    >>> f = trl_reward(lambda completions, tag: [len(c) for c in completions])
    >>> f(prompts=[[], []], completions=["ab", "c"], completion_ids=[[1], [2]], tag=[0, 0])
    [2.0, 1.0]
    """

    try:
        wanted = inspect.signature(reward_fn).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        wanted = {}
    wants_log_metric, wants_step = "log_metric" in wanted, "step" in wanted
    wants_ids = "completion_ids" in wanted

    def reward(
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Any = None,
        trainer_state: Any = None,
        log_extra: Any = None,
        log_metric: Any = None,
        environments: Any = None,
        **columns: list,
    ) -> list[float | None]:
        texts = completion_texts(completions)
        if wants_log_metric and log_metric is not None:
            columns = {**columns, "log_metric": log_metric}
        if wants_step:
            step = None if trainer_state is None else trainer_state.global_step + 1
            columns = {**columns, "step": step}
        if wants_ids:
            columns = {**columns, "completion_ids": completion_ids}
        values = list(reward_fn(texts, **columns))
        if len(values) != len(texts):
            raise ValueError(
                f"reward_fn returned {len(values)} values for {len(texts)} completions; "
                "it must return exactly one float per completion"
            )
        return [None if v is None else float(v) for v in values]

    name = getattr(reward_fn, "__name__", "")
    reward.__name__ = name if name.isidentifier() else "reward"
    return reward


def stop_token_ids(tokenizer: Any, stop: Sequence[str]) -> list[int]:
    """Every token whose text contains one of the ``stop`` strings.

    Ending a completion at these tokens is what the local backend's stop strings do for a
    one-character stop such as a newline (a longer stop split across tokens is not caught).
    """
    stops = [s for s in stop if s]
    if not stops:
        return []
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    return [i for i, t in enumerate(texts) if any(s in t for s in stops)]


def vllm_args(settings: GRPOSettings) -> dict[str, Any]:
    """GRPOConfig's vLLM fields: nothing without ``use_vllm``, else the mode's fields."""
    if not settings.use_vllm:
        return {"use_vllm": False}
    if settings.vllm_mode == "server":
        return {
            "use_vllm": True,
            "vllm_mode": "server",
            "vllm_server_base_url": settings.vllm_server_base_url,
            "vllm_server_timeout": settings.vllm_server_timeout,
        }
    return {
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_gpu_memory_utilization": settings.vllm_gpu_memory_utilization,
        "vllm_tensor_parallel_size": settings.vllm_tensor_parallel_size,
    }


def lora_config(settings: GRPOSettings) -> Any:
    """The Refiner's LoRA: every linear layer, at ``settings``' rank and alpha (GRPO's,
    and the warm start's that GRPO goes on training)."""
    from peft import LoraConfig

    return LoraConfig(
        r=settings.lora_r,
        lora_alpha=settings.lora_alpha,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )


def grpo_config(
    settings: GRPOSettings,
    work_dir: str | Path,
    cuda: bool,
    completion_limit: int,
    stop_ids: Sequence[int] = (),
) -> Any:
    """The GRPOConfig of ``grpo_config_args``."""
    from trl import GRPOConfig

    return GRPOConfig(**grpo_config_args(settings, work_dir, cuda, completion_limit, stop_ids))


def grpo_config_args(
    settings: GRPOSettings,
    work_dir: str | Path,
    cuda: bool,
    completion_limit: int,
    stop_ids: Sequence[int] = (),
    bf16: bool | None = None,
) -> dict[str, Any]:
    """The GRPOConfig's arguments: the paper's values wherever TRL's defaults differ, and the
    device setup (apart from the config, which on a CPU machine refuses bf16, so that tests
    can check the GPU setup).

    One optimizer step = one generation batch = ``prompts_per_step`` prompts x
    ``num_generations`` completions, each batch used once (with ``micro_batch``, in passes
    whose gradients add up: the same step in less memory). Under ``accelerate launch`` each
    of the ``num_processes`` processes takes its share of the step's completions, so the step
    is the same on one GPU or eight. ``bf16`` (default: ``settings.precision`` on this
    device, ``train_precision``) trains in bfloat16 mixed precision and loads the weights in
    bfloat16.
    ``stop_ids`` end a completion: through vLLM they are its ``stop_token_ids`` (kept in the
    output, so TRL counts the completion as ended); with transformers generation the
    trainer adds them to its end-of-sequence ids (``TimedGRPOTrainer``).
    """
    bf16 = train_precision(settings.precision, cuda) == "bfloat16" if bf16 is None else bf16
    return dict(
        output_dir=str(work_dir),
        # the paper's GRPO
        beta=settings.beta,
        epsilon=settings.epsilon,
        loss_type=settings.loss_type,
        scale_rewards=settings.scale_rewards,
        learning_rate=settings.learning_rate,
        num_train_epochs=settings.epochs,
        num_generations=settings.num_generations,
        num_iterations=1,
        max_completion_length=completion_limit,
        temperature=settings.temperature,
        top_p=settings.top_p,
        seed=settings.seed,
        # batching: each step generates prompts_per_step x num_generations completions and
        # trains on them in micro_steps passes of micro_batch (the gradient accumulated)
        per_device_train_batch_size=settings.completions_per_process // settings.micro_steps,
        gradient_accumulation_steps=settings.micro_steps,
        steps_per_generation=settings.micro_steps,
        # device
        use_cpu=not cuda,
        bf16=bf16,
        fp16=False,
        activation_checkpointing=False,  # TRL: on (as gradient_checkpointing); ~25% slower here
        model_init_kwargs={"dtype": "bfloat16" if bf16 else "float32"},
        **vllm_args(settings),
        generation_kwargs={"stop_token_ids": list(stop_ids)}
        if settings.use_vllm and stop_ids
        else None,
        # the caller logs (on_step) and keeps only the adapter
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        log_completions=False,
        remove_unused_columns=False,
        disable_tqdm=True,
    )


def prompt_dataset(prompts: Sequence[Any], columns: Mapping[str, Sequence[Any]]):
    """The trainer's dataset: the prompts and the reward function's columns.

    Fingerprinted here: datasets' own fingerprint pickles the table with dill, which
    disassembles a helper with ``print`` while it holds stdout, and where print is patched
    (Prefect's ``log_prints``) that bytecode became a dozen lines of every GRPO run's log.
    """
    from datasets import Dataset
    from datasets.table import InMemoryTable

    table = {"prompt": list(prompts), **{k: list(v) for k, v in columns.items()}}
    digest = hashlib.sha256(json.dumps(table, sort_keys=True, default=repr).encode()).hexdigest()
    return Dataset(InMemoryTable.from_pydict(table), fingerprint=digest[:16])
