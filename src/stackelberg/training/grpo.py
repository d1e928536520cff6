"""Step 3 of the paper: GRPO on the Refiner, through TRL's GRPOTrainer and a LoRA adapter.

Each optimizer step takes ``prompts_per_step`` Refiner prompts, samples ``num_generations``
rewrites of each, scores them with the caller's reward (the Measurer's persuasion reward) and
updates the adapter with group-relative advantages. Everything where TRL's defaults differ
from the paper is set explicitly from :class:`GRPOSettings`.

Only the adapter is kept: it is written to a temporary folder beside ``output_dir`` and
renamed into place, so a killed run leaves the previous adapter or none, never half of one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import logging
import math
import shutil
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from stackelberg.persuasion.reward import Variant
from stackelberg.settings import Settings

log = logging.getLogger(__name__)

LossType = Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo"]
#: who samples the completions: TRL (transformers, or vLLM with use_vllm), or the project's
#: decoder on the same policy (``rollout.LocalRollout``)
Generation = Literal["trl", "local"]
ScaleRewards = Literal["group", "batch", "none"]
Launch = Literal["none", "accelerate", "deepspeed"]
ZeroStage = Literal[2, 3]
VLLMMode = Literal["server", "colocate"]
Precision = Literal["auto", "float32", "bfloat16"]
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
SETTINGS_FILE = "grpo_settings.json"
#: the run's step history, written beside the adapter by the pipeline's grpo stage
TRAIN_HISTORY = "train_history.json"
#: the folder, inside a game's Refiner, of the Refiners trained on other reward variants
VARIANTS = "variants"
#: completion tokens when none are given (agents.refiner.RefinerStyle's default limit)
DEFAULT_COMPLETION_LENGTH = 48
#: TRL's metric of the share of a step's completions that hit max_completion_length
CLIPPED_RATIO = "completions/clipped_ratio"
#: the share of a step's completions that parsed, logged by the caller's reward function
PARSE_RATE = "refiner/parse_rate"


class UnsupportedTRLError(ImportError):
    """The installed TRL lacks a private GRPOTrainer step this project wraps (one line)."""


class GRPOSettings(Settings):
    """GRPO settings of one Refiner run: the ``grpo`` section of params.yaml.

    ``launch`` runs the training under ``accelerate launch`` on ``num_processes`` GPUs
    (``training.launch``); the step's completions are shared out among the processes. The
    ``vllm_*`` fields only matter with ``use_vllm`` on a GPU: in ``server`` mode start
    ``CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model <base>`` (not plain ``vllm serve``: TRL
    pushes the merged adapter weights to it each step) and train on the other GPUs; in
    ``colocate`` mode each training process runs vLLM beside the model on its own GPU.
    """

    num_generations: int = Field(
        4, ge=2, description="completions per prompt, the GRPO group (paper: 8)"
    )
    epsilon: float = Field(0.2, gt=0, description="clip range of the probability ratio")
    beta: float = Field(
        0.04, ge=0, description="KL coefficient to the reference policy (paper: 0.04; TRL: 0)"
    )
    learning_rate: float = Field(
        1e-4, gt=0, description="AdamW learning rate (paper: 1e-6 on a 7B model)"
    )
    epochs: float = Field(1.0, gt=0, description="passes over the prompts (paper: 3)")
    loss_type: LossType = Field(
        "grpo", description="TRL loss_type; the paper's GRPO is 'grpo' (TRL default: dapo)"
    )
    scale_rewards: ScaleRewards = Field("group", description="TRL scale_rewards")
    lora_r: int = Field(16, ge=1, description="LoRA rank (paper: 16)")
    lora_alpha: int = Field(32, ge=1, description="LoRA alpha")
    max_completion_length: int | None = Field(
        None,
        ge=1,
        description="new tokens per completion at most; null: sample.max_new_tokens, the one "
        "limit of sampling, GRPO and play (paper: 512)",
    )
    temperature: float = Field(0.7, gt=0, description="sampling temperature (TRL: 1.0)")
    top_p: float = Field(0.9, gt=0, le=1, description="nucleus sampling (TRL: 1.0)")
    prompts_per_step: int = Field(1, ge=1, description="distinct prompts in one optimizer step")
    micro_batch: int | None = Field(
        None,
        ge=1,
        description="completions per forward and backward pass, the step's gradient summed "
        "over them: the same step in less memory (a CPU: 1); null: the whole step at once",
    )
    share_prompts: bool = Field(
        True,
        description="compute each prompt once per group in the loss and reference forwards "
        "(the completions packed after it as tree-masked branches: the same numbers, fewer "
        "tokens); false: one row per completion, as TRL does",
    )
    seed: int = Field(0, description="seed of the LoRA init, prompt order and sampling")
    variants: list[Variant] = Field(
        default_factory=list,
        description="other reward variants (score.variant) to train a Refiner on as well, on "
        "the same instances, for the paper's ablation: each lands in models/refiner/GAME/"
        "variants/V and is scored on the held-out instances; empty: none",
    )
    precision: Precision = Field(
        "auto",
        description="the policy's weights and compute: bfloat16 (mixed precision, the LoRA "
        "weights float32) or float32; auto: bfloat16 on a GPU that has it and on a CPU that "
        "computes it natively (AVX512-BF16, AMX: a step ~1.4x faster there), else float32",
    )
    generation: Generation = Field(
        "trl",
        description="trl: TRL samples the completions (transformers, or vLLM with use_vllm); "
        "local: the project's KV-cached decoder samples them from the same policy (faster "
        "on a CPU: each distinct prompt prefilled once)",
    )
    launch: Launch = Field(
        "none",
        description="none: train in the stage's process; accelerate: `accelerate launch` on "
        "num_processes GPUs (data parallel); deepspeed: the same with DeepSpeed ZeRO (zero_stage)",
    )
    num_processes: int = Field(
        1, ge=1, description="training processes (one per GPU) with launch accelerate|deepspeed"
    )
    zero_stage: ZeroStage = Field(
        2,
        description="DeepSpeed ZeRO stage with launch deepspeed: 2 (optimizer + gradients "
        "sharded) or 3 (also the weights)",
    )
    accelerate_config: str | None = Field(
        None,
        description="an accelerate config file for launch accelerate|deepspeed; null: the "
        "shipped configs/accelerate/multi_gpu.yaml or zero<zero_stage>.yaml",
    )
    use_vllm: bool = Field(False, description="generate the completions with vLLM (GPU)")
    vllm_mode: VLLMMode = Field(
        "server",
        description="server: a `trl vllm-serve` server on other GPUs; colocate: vLLM inside "
        "each training process, sharing its GPU",
    )
    vllm_server_base_url: str | None = Field(
        None, description="URL of the `trl vllm-serve` server; null: TRL's http://0.0.0.0:8000"
    )
    vllm_server_timeout: float = Field(
        240.0, gt=0, description="seconds to wait for the vLLM server at start"
    )
    vllm_gpu_memory_utilization: float = Field(
        0.3, gt=0, le=1, description="colocate: the share of each GPU's memory vLLM may take"
    )
    vllm_tensor_parallel_size: int = Field(
        1, ge=1, description="colocate: GPUs one vLLM engine spans; must divide num_processes"
    )

    @property
    def completion_limit(self) -> int:
        """The token limit of a completion (``max_completion_length`` or the default)."""
        return self.max_completion_length or DEFAULT_COMPLETION_LENGTH

    @property
    def completions_per_step(self) -> int:
        """Completions in one optimizer step (one generation batch), over all processes."""
        return self.prompts_per_step * self.num_generations

    @property
    def processes(self) -> int:
        """Training processes: ``num_processes`` when launched, else this one."""
        return 1 if self.launch == "none" else self.num_processes

    @property
    def completions_per_process(self) -> int:
        """Completions of one optimizer step that each training process generates and trains on."""
        return self.completions_per_step // self.processes

    @property
    def micro_steps(self) -> int:
        """Forward and backward passes per optimizer step, in each process."""
        return self.completions_per_process // (self.micro_batch or self.completions_per_process)

    @model_validator(mode="after")
    def _the_step_divides_evenly(self) -> GRPOSettings:
        if self.completions_per_step % self.processes:
            raise ValueError(
                f"num_processes {self.processes} must divide the completions of a step "
                f"(prompts_per_step x num_generations = {self.completions_per_step})"
            )
        if self.micro_batch and self.completions_per_process % self.micro_batch:
            raise ValueError(
                f"micro_batch {self.micro_batch} must divide the completions of a step "
                + (
                    f"(prompts_per_step x num_generations = {self.completions_per_step})"
                    if self.processes == 1
                    else f"in each process ({self.completions_per_process} with "
                    f"num_processes {self.processes})"
                )
            )
        return self

    @model_validator(mode="after")
    def _variants_once(self) -> GRPOSettings:
        if len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants {self.variants}: each variant once")
        return self

    @model_validator(mode="after")
    def _launch_and_vllm_agree(self) -> GRPOSettings:
        if self.use_vllm and self.generation == "local":
            raise ValueError("use_vllm generates through vLLM: set generation: trl with it")
        if self.generation == "local" and self.launch == "deepspeed" and self.zero_stage == 3:
            raise ValueError("ZeRO-3 shards the weights the local decoder reads: generation: trl")
        if self.launch == "none" and self.num_processes > 1:
            raise ValueError(
                f"num_processes {self.num_processes} needs launch accelerate or deepspeed "
                "(launch none trains in one process)"
            )
        if self.accelerate_config is not None:
            if self.launch == "none":
                raise ValueError("accelerate_config is read only with launch accelerate|deepspeed")
            if not Path(self.accelerate_config).expanduser().is_file():
                raise ValueError(f"accelerate_config {self.accelerate_config!r}: no such file")
        colocated = self.use_vllm and self.vllm_mode == "colocate"
        if colocated and self.processes % self.vllm_tensor_parallel_size:
            raise ValueError(
                f"vllm_tensor_parallel_size {self.vllm_tensor_parallel_size} must divide the "
                f"training processes ({self.processes}) in vllm_mode colocate"
            )
        return self


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


def output_rates(history: Sequence[Mapping[str, Any]], completions_per_step: int) -> dict:
    """A run's completions, the share that ended before the token limit (1 - TRL's
    ``completions/clipped_ratio``) and the share that parsed (``PARSE_RATE``), over the
    steps that logged them (each step has as many completions); NaN where none did.

    >>> output_rates([{CLIPPED_RATIO: 0.25, PARSE_RATE: 1.0}, {CLIPPED_RATIO: 0.75}], 4)
    {'completions': 8, 'ended_rate': 0.5, 'parse_rate': 1.0}
    """

    def mean(key: str) -> float:
        values = [float(h[key]) for h in history if isinstance(h.get(key), int | float)]
        return sum(values) / len(values) if values else float("nan")

    steps = sum(1 for h in history if CLIPPED_RATIO in h)
    return {
        "completions": steps * completions_per_step,
        "ended_rate": 1.0 - mean(CLIPPED_RATIO),
        "parse_rate": mean(PARSE_RATE),
    }


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
    were a batch to span several steps, its rewards would count for the first.

    >>> f = trl_reward(lambda completions, tag: [len(c) for c in completions])
    >>> f(prompts=[[], []], completions=["ab", "c"], completion_ids=[[1], [2]], tag=[0, 0])
    [2.0, 1.0]
    """

    try:
        wanted = inspect.signature(reward_fn).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        wanted = {}
    wants_log_metric, wants_step = "log_metric" in wanted, "step" in wanted

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


def machine_problem(settings: GRPOSettings, gpus: int) -> str | None:
    """Why this machine, with ``gpus`` CUDA GPUs, cannot generate as ``settings`` ask (one
    line), or None. Params load on any machine; this is checked where the training starts."""
    if settings.use_vllm and not gpus:
        return "grpo.use_vllm needs a CUDA GPU; this machine has none (set use_vllm: false)"
    if settings.use_vllm and importlib.util.find_spec("vllm") is None:
        return (
            "grpo.use_vllm needs vllm installed beside TRL in this environment (in server "
            "mode too: TRL sends the weights through it); see pyproject.toml's gpu extra"
        )
    if (
        settings.precision == "bfloat16"
        and gpus
        and train_precision("auto", cuda=True) != "bfloat16"
    ):
        return "grpo.precision bfloat16: this GPU does not compute bfloat16 (set auto or float32)"
    return None


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


def expected_steps(n_prompts: int, settings: GRPOSettings) -> int:
    """Optimizer steps of a run: whole steps per epoch, times epochs, rounded up (as HF does)."""
    return math.ceil(settings.epochs * (n_prompts // settings.prompts_per_step))


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


def grpo_config(
    settings: GRPOSettings, work_dir: str | Path, cuda: bool, stop_ids: Sequence[int] = ()
) -> Any:
    """The GRPOConfig of ``grpo_config_args``."""
    from trl import GRPOConfig

    return GRPOConfig(**grpo_config_args(settings, work_dir, cuda, stop_ids))


def grpo_config_args(
    settings: GRPOSettings,
    work_dir: str | Path,
    cuda: bool,
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
        max_completion_length=settings.completion_limit,
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


def train_refiner(
    base_model: str | Path,
    prompts: list[list[dict]],
    columns: dict[str, list],
    reward_fn: Callable[..., list[float]],
    settings: GRPOSettings,
    output_dir: str | Path,
    on_step: Callable[[int, dict], None] | None = None,
    stop: Sequence[str] = (),
    desc: str = "grpo",
) -> TrainResult:
    """Train a LoRA Refiner adapter with GRPO and save it atomically to ``output_dir``.

    ``reward_fn(completions: list[str], **columns)`` gets the completion texts and, for each
    column, the value of each completion's prompt; it returns one float per completion.
    Columns go through a ``datasets.Dataset``: use strings, numbers or uniform lists/dicts
    (JSON strings for ragged structures), as Arrow fills missing dict keys with None.
    ``on_step(step, metrics)`` gets every step's metrics (loss, reward, reward_std, kl,
    generation_s, reward_s, ...), e.g. to log them to MLflow. ``desc`` names the steps'
    progress bar.
    """
    import torch

    cuda = torch.cuda.is_available()
    base = check_inputs(base_model, prompts, columns, settings, cuda)
    out = Path(output_dir).expanduser()
    _check_replaceable(out)
    if not cuda:
        # Load-aware thread count, as for inference: two threads on two busy cores run
        # generation 10-30x slower than one.
        from stackelberg.llm.local import set_threads
        from stackelberg.llm.local.loading import bound_onednn_cache

        set_threads(None)
        bound_onednn_cache()  # bfloat16 training: a kernel per shape

    from peft import LoraConfig
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
                max_new_tokens=settings.completion_limit,
                stop=tuple(stop),
            )
            rollout = LocalRollout(sampling, settings.seed)
        trainer = TimedGRPOTrainer(
            model=str(base),
            reward_funcs=trl_reward(reward_fn),
            args=grpo_config(settings, work / "trainer", cuda, stop_ids),
            stop_token_ids=stop_ids,
            train_dataset=dataset,
            peft_config=LoraConfig(
                r=settings.lora_r,
                lora_alpha=settings.lora_alpha,
                target_modules="all-linear",
                task_type="CAUSAL_LM",
            ),
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
                "stop": list(stop),
                "steps": trainer.state.global_step,
            }
            (staged / SETTINGS_FILE).write_text(json.dumps(info, indent=2))
            _replace_dir(staged, out)
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


def train_precision(precision: Precision, cuda: bool) -> str:
    """The precision ``precision`` trains in on this machine (a GPU when ``cuda``): 'auto'
    is bfloat16 where it is computed natively (most GPUs; a CPU with AVX512-BF16 or AMX),
    float32 elsewhere, where bfloat16 would be emulated and slower."""
    if precision != "auto":
        return precision
    if cuda:
        import torch

        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    from stackelberg.llm.local.loading import native_bf16

    return "bfloat16" if native_bf16() else "float32"


def _check_replaceable(out: Path) -> None:
    """Refuse to replace a folder that is neither empty nor a previous adapter."""
    if out.exists() and (
        not out.is_dir() or (any(out.iterdir()) and not (out / "adapter_config.json").exists())
    ):
        raise ValueError(
            f"output_dir {str(out)!r} exists and is not a PEFT adapter folder; "
            "choose a new or empty folder (a previous adapter there is replaced)"
        )


def write_adapter(files: dict[str, bytes], output_dir: str | Path) -> Path:
    """Write an adapter's files (name -> bytes) to ``output_dir`` atomically, replacing a
    previous adapter there."""
    out = Path(output_dir).expanduser()
    if "adapter_config.json" not in files:
        raise ValueError(f"{out}: not a PEFT adapter (no adapter_config.json among its files)")
    _check_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        for name, data in files.items():  # a name may hold a folder ("variants/...")
            (staged / name).parent.mkdir(parents=True, exist_ok=True)
            (staged / name).write_bytes(data)
        _replace_dir(staged, out)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return out


def _replace_dir(staged: Path, out: Path) -> None:
    """Move ``staged`` to ``out``; a previous ``out`` is moved aside first, then deleted."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{uuid.uuid4().hex[:8]}")
        out.rename(old)
    staged.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
