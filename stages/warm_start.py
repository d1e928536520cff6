"""warm_start: fit the Refiner's LoRA on the grammar's completions before GRPO.

With ``warm_start.source: grammar`` each train instance's targets are sentences of the
speaker's grammar scored by the Measurer (``persuasion.grammar_targets``: the best one, or
draws from those that help), as the Refiner's own completions of its own prompt; the
adapter (GRPO's rank and precision) lands in models/warm_start/GAME, and GRPO goes on training it. With ``source: none`` (the
default, and the paper's) the folder holds only ``warm_start.json`` and GRPO starts from
the base model.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from stackelberg.datasets import labeled_split
from stackelberg.io import atomic_dir
from stackelberg.persuasion.candidates import refiner_prompt
from stackelberg.persuasion.grammar_targets import grammar_targets
from stackelberg.training.grpo_outputs import WARM_START_INFO, check_replaceable, write_adapter
from stackelberg.training.grpo_settings import train_precision
from stackelberg.training.trl_bridge import lora_config
from stackelberg.training.warm_start import NO_WARM_START, fit_warm_start

#: targets shown in the stage's info file and metrics
EXAMPLES = 5
#: the Measurer's prompt prefixes stay stored for GRPO, which scores the same instances next
KEEP_PREFIXES = ("measurer",)


def plan(ctx) -> list[dict]:
    """One item, the train instances; none where ``warm_start.source`` is none."""
    if ctx.section.source == NO_WARM_START:
        return []
    df = labeled_split(ctx.path("label"), "train", "warm-start the Refiner on")
    return [{"label": "warm start", "ids": df["instance_id"].to_list()}]


def work(ctx, item) -> dict:
    import torch

    rows, views = ctx.instances("intents", item["ids"])
    profile = ctx.params.refiner_profile(ctx.game)
    settings = ctx.section
    drawn = grammar_targets(
        ctx.measurer(),
        rows,
        views,
        profile,
        ctx.params.for_game("score", ctx.game),
        settings.targets,
        settings.draws,
        settings.seed,
    )
    prompts = [refiner_prompt(ctx.llm("refiner"), v, profile) for v in views]
    # the fit loads its own copy of the base; the Measurer stays for GRPO, with its store
    ctx.release_models("measurer", keep_prefixes=KEEP_PREFIXES)
    grpo = ctx.params.for_game("grpo", ctx.game)
    cuda = torch.cuda.is_available()
    chats = [
        {"prompt": p, "completion": [{"role": "assistant", "content": t.completion}]}
        for p, ts in zip(prompts, drawn, strict=True)
        for t in ts
    ]
    ctx.path().parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".warm-start-", dir=ctx.path().parent) as scratch:
        fit = fit_warm_start(
            ctx.params.models.refiner.model,
            chats,
            settings,
            scratch,
            lora=lora_config(grpo),
            bf16=train_precision(grpo.precision, cuda) == "bfloat16",
            desc=f"warm_start@{ctx.game} steps",
        )
        files = {f.name: f.read_bytes() for f in (Path(scratch) / "adapter").iterdir()}
    targets = [t for ts in drawn for t in ts]
    gains = [t.reward - t.base_reward for t in targets]
    base_words = sum(
        t.completion == v.base_utterance for ts, v in zip(drawn, views, strict=True) for t in ts
    )
    info = {
        "source": settings.source,
        "targets": settings.targets,
        "instances": len(drawn),
        "chats": len(targets),
        "mean_target_gain": sum(gains) / len(gains),
        # where no sentence beats the planned speech's words, the target is those words
        "base_words_share": base_words / len(targets),
        "helping_share": sum(ts[0].helping > 0 for ts in drawn) / len(drawn),
        "mean_helping": sum(ts[0].helping for ts in drawn) / len(drawn),
        "distinct_targets": len({t.completion for t in targets}),
        **fit,
        "examples": [ts[0].completion for ts in drawn[:EXAMPLES]],
    }
    return {"info": info, "adapter_files": files}


def finish(ctx, results) -> dict:
    out = ctx.path()
    if not results:
        check_replaceable(out)
        with atomic_dir(out) as staged:
            (staged / WARM_START_INFO).write_text(json.dumps({"source": NO_WARM_START}))
        return {}
    info = results[0]["info"]
    files = {**results[0]["adapter_files"], WARM_START_INFO: json.dumps(info, indent=1).encode()}
    write_adapter(files, out)
    # the stage's metrics go to its MLflow run as they are
    return {k: float(v) for k, v in info.items() if isinstance(v, int | float)}
