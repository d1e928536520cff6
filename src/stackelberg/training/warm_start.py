"""A supervised warm start of the Refiner's LoRA, fitted with TRL's SFTTrainer before GRPO.

GRPO learns only from completions whose rewards differ within a group. A small base model
that cannot yet write what moves the follower samples groups of equal rewards, and learns
nothing from them (docs/persuasion.md: 83% of the last groups of one run). The warm start
fits the adapter to good completions of each train prompt first; GRPO then goes on training
that adapter, with the warm start as its KL reference (TRL copies a passed adapter as "ref").
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from stackelberg.persuasion.grammar_targets import TARGET_KINDS
from stackelberg.settings import Settings
from stackelberg.training.grpo_outputs import ADAPTER_CONFIG

#: ``warm_start.source`` that fits nothing: GRPO starts from the base model
NO_WARM_START = "none"
#: the source that reads the speaker's grammar: the sentences the scripted players say
GRAMMAR = "grammar"


class WarmStartSettings(Settings):
    """The ``warm_start`` section: whether and how the Refiner is warm-started before GRPO.
    The adapter's rank, alpha and precision are GRPO's (the adapter GRPO goes on training)."""

    source: Literal["none", "grammar"] = Field(
        NO_WARM_START,
        description="none: GRPO starts from the base model (the paper); grammar: on each "
        "train instance, the sentence of the speaker's grammar (the scripted players' "
        "sentences, Werewolf, Avalon and ONUW) that the Measurer rewards most, added after "
        "the planned speech or said instead of it as sample.output_format asks",
    )
    targets: Literal[TARGET_KINDS] = Field(  # type: ignore[valid-type]
        "best",
        description="best: each instance's one sentence rewarded most; helping: draws from "
        "every sentence that beats the planned speech's words, each as likely as its gain "
        "(one target per prompt left GRPO's groups equal: docs/persuasion.md)",
    )
    draws: int = Field(
        1, ge=1, description="target chats per train instance (targets: helping: its draws)"
    )
    epochs: float = Field(2.0, gt=0, description="passes over the train instances' chats")
    learning_rate: float = Field(2e-4, gt=0, description="AdamW's learning rate")
    batch_size: int = Field(8, ge=1, description="chats per optimizer step")
    seed: int = Field(0, description="the fit's seed (its data order and the adapter's init)")


def token_ids(encoded: Any) -> list[int]:
    """The ids of ``apply_chat_template(..., tokenize=True)``: a list, or a mapping of them."""
    return list(encoded["input_ids"] if isinstance(encoded, Mapping) else encoded)


def sft_dataset(tokenizer: Any, chats: list[dict]) -> Any:
    """The chats tokenized as the Refiner is prompted (the chat template, the assistant turn
    opened), with labels on the completion alone, up to its end of sequence, fingerprinted here: left to the trainer,
    datasets would hash its tokenizing function with dill, which disassembles it with
    ``print`` (where Prefect's ``log_prints`` patches print, hundreds of log lines)."""
    from datasets import Dataset
    from datasets.table import InMemoryTable

    rows: dict[str, list] = {"input_ids": [], "labels": []}
    for chat in chats:
        prompt = token_ids(
            tokenizer.apply_chat_template(chat["prompt"], add_generation_prompt=True, tokenize=True)
        )
        whole = token_ids(
            tokenizer.apply_chat_template(chat["prompt"] + chat["completion"], tokenize=True)
        )
        if whole[: len(prompt)] != prompt:
            raise ValueError("the chat template renders a prompt apart from its completion")
        completion = whole[len(prompt) :]
        if tokenizer.eos_token_id in completion:  # what the template adds after it: no loss
            end = completion.index(tokenizer.eos_token_id) + 1
            completion = completion[:end] + [-100] * (len(completion) - end)
        rows["input_ids"].append(whole)
        rows["labels"].append([-100] * len(prompt) + completion)
    digest = hashlib.sha256(json.dumps(rows).encode()).hexdigest()
    return Dataset(InMemoryTable.from_pydict(rows), fingerprint=digest[:16])


def fit_warm_start(
    base_model: str | Path,
    chats: list[dict],
    settings: WarmStartSettings,
    output_dir: str | Path,
    *,
    lora: Any,
    bf16: bool,
    desc: str = "warm start",
) -> dict:
    """Fit a LoRA adapter (``lora``: its PEFT config, GRPO's ``trl_bridge.lora_config``) on
    ``chats`` ({"prompt": messages, "completion": [assistant message]}; the loss on the
    completion only) and save it to ``output_dir``/adapter; returns the fit's steps, first
    and last loss (None where none was logged) and seconds."""
    if not chats:
        raise ValueError("the warm start has no chats to fit")
    import torch
    from transformers import AutoTokenizer, PrinterCallback
    from trl import SFTConfig, SFTTrainer

    from stackelberg.training.trainer import StepProgress

    cuda = torch.cuda.is_available()
    if not cuda:
        from stackelberg.llm.local import set_threads
        from stackelberg.llm.local.loading import bound_onednn_cache

        set_threads(None)  # the machine's cores, not its load
        bound_onednn_cache()  # bfloat16 training: a kernel per shape
    out = Path(output_dir)
    config = SFTConfig(
        output_dir=str(out / "trainer"),
        num_train_epochs=settings.epochs,
        learning_rate=settings.learning_rate,
        per_device_train_batch_size=settings.batch_size,
        seed=settings.seed,
        use_cpu=not cuda,
        bf16=bf16,
        model_init_kwargs={"dtype": "bfloat16" if bf16 else "float32"},
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataset_kwargs={"skip_prepare_dataset": True},  # sft_dataset prepared it
        activation_checkpointing=False,  # TRL's default: on, ~25% slower here (as GRPO's)
    )
    tokenizer = AutoTokenizer.from_pretrained(str(base_model))
    trainer = SFTTrainer(
        model=str(base_model),
        args=config,
        processing_class=tokenizer,
        train_dataset=sft_dataset(tokenizer, chats),
        peft_config=lora,
        callbacks=[StepProgress(desc)],
    )
    trainer.remove_callback(PrinterCallback)  # the progress bar reports; no dict per step
    began = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - began
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    trainer.model.save_pretrained(str(out / "adapter"))
    return {
        "steps": trainer.state.global_step,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "fit_s": round(seconds, 1),
    }


def warm_start_adapter(folder: str | Path) -> Path | None:
    """The adapter a warm-start folder holds, or None (``warm_start.source: none``, or no
    folder: a run from before the stage)."""
    path = Path(folder)
    return path if (path / ADAPTER_CONFIG).is_file() else None
