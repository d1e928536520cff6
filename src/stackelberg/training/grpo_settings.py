"""The ``grpo`` section of params.yaml: the settings of one Refiner run and their checks.

Params load and validate them on any machine; what the machine must have (a GPU for vLLM,
bfloat16 arithmetic) is checked where the training starts (``machine_problem``).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stackelberg.games import GameName
from stackelberg.persuasion.intents import View
from stackelberg.persuasion.measurer import member_refiner
from stackelberg.persuasion.reward import Terms
from stackelberg.settings import Settings

LossType = Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo"]
#: who samples the completions: TRL (transformers, or vLLM with use_vllm), or the project's
#: decoder on the same policy (``rollout.LocalRollout``)
Generation = Literal["trl", "local"]
ScaleRewards = Literal["group", "batch", "none"]
Launch = Literal["none", "accelerate", "deepspeed"]
ZeroStage = Literal[2, 3]
VLLMMode = Literal["server", "colocate"]
Precision = Literal["auto", "float32", "bfloat16"]


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
    temperature: float = Field(
        0.7,
        gt=0,
        description="the rollouts' sampling temperature, GRPO's exploration (TRL: 1.0); the "
        "Refiner as it runs samples at sample.temperature",
    )
    top_p: float = Field(
        0.9, gt=0, le=1, description="the rollouts' nucleus sampling (TRL: 1.0); see temperature"
    )
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
    ablations: list[Terms] = Field(
        default_factory=list,
        description="the paper's reward ablation: a Refiner per entry, trained on the same "
        "instances with these reward terms instead of score.terms (pos_only, neg_only, "
        "full); each lands in models/refiner/GAME/extra/TERMS and is scored on the held-out "
        "instances; empty: none",
    )
    views: list[View] = Field(
        default_factory=list,
        description="a Refiner trained on the same instances with the other view's intents "
        "(speaker_only or full_information, whichever label.full_information is not; needs "
        "label.both_views): models/refiner/GAME/extra/VIEW, scored on the held-out "
        "instances against both views' intents; empty: none",
    )
    joint: list[GameName] = Field(
        default_factory=list,
        description="games whose train instances one joint Refiner trains on, each prompt "
        "naming its game (the stage grpo_joint: models/refiner/joint, MLflow refiner-joint, "
        "refiner-joint+X seats), with the shared grpo, sample and score sections; the "
        "evaluate stage scores it on every game's held-out instances beside the game's own "
        "Refiner, a game left out of this list as one it never saw; empty: none",
    )
    member_refiners: list[str] = Field(
        default_factory=list,
        description="members of an ensemble models.measurer (by name) that each train a "
        "member Refiner of their own, against that member alone, beside the game's Refiner "
        "trained against the whole ensemble, on the same instances: each lands in "
        "models/refiner/GAME/extra/vs_NAME and is scored on the held-out instances "
        "(ensemble vs single Measurer); empty: none",
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
    def _each_once(self) -> GRPOSettings:
        if len(set(self.ablations)) != len(self.ablations):
            raise ValueError(f"ablations {self.ablations}: each reward's terms once")
        if len(set(self.views)) != len(self.views):
            raise ValueError(f"views {self.views}: each view once")
        if len(set(self.joint)) != len(self.joint):
            raise ValueError(f"joint {self.joint}: each game once")
        if len(self.joint) == 1:
            raise ValueError(
                f"joint {self.joint}: a joint Refiner trains on two games or more (one game's "
                "Refiner is its own, grpo@GAME); list more games or none"
            )
        if len(set(self.member_refiners)) != len(self.member_refiners):
            raise ValueError(f"member_refiners {self.member_refiners}: each member once")
        return self

    def extra_refiners(self) -> list[str]:
        """The names of the game's extra Refiners, trained beside its own: one per entry of
        ``ablations``, then of ``views``, then one per member of ``member_refiners``
        (``member_refiner``)."""
        return [*self.ablations, *self.views, *(member_refiner(m) for m in self.member_refiners)]

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


def expected_steps(n_prompts: int, settings: GRPOSettings) -> int:
    """Optimizer steps of a run: whole steps per epoch, times epochs, rounded up (as HF does)."""
    return math.ceil(settings.epochs * (n_prompts // settings.prompts_per_step))


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
