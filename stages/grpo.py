"""grpo: train the Refiner (LoRA) with GRPO on the Measurer reward of the train instances.

The reward of a completion goes through the same code as the score stage: parse the
Refiner output, put the utterance in the follower's prompt, score the instance's desired
and undesired responses. The adapter lands in models/refiner/GAME and becomes a new version
of the MLflow registered model ``refiner-GAME``. With ``grpo.launch`` set, the training runs
under ``accelerate launch`` on several GPUs (``training.launch``), each process running this
module's ``main``.
"""

from __future__ import annotations

import json
import pickle
import tempfile
from collections import defaultdict
from pathlib import Path

from stackelberg.agents.refiner import parse_refiner_output
from stackelberg.datasets import of_split, read_dataset
from stackelberg.persuasion.candidates import refiner_prompt
from stackelberg.persuasion.measurer import measure
from stackelberg.training.grpo import (
    PARSE_RATE,
    TRAIN_HISTORY,
    output_rates,
    train_refiner,
    write_adapter,
)
from stackelberg.training.launch import check_machine, launch_command, run_launched


def plan(ctx) -> list[dict]:
    df = of_split(read_dataset(ctx.path("label"), "intents"), "train")
    if df.is_empty():
        raise ValueError(f"{ctx.path('label')}: no train instances to train the Refiner on")
    return [{"label": "train", "ids": df["instance_id"].to_list()}]


def work(ctx, item) -> dict:
    import torch

    settings = ctx.section
    check_machine(settings, torch.cuda.device_count())
    ctx.path().parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".grpo-", dir=ctx.path().parent) as scratch:
        adapter = Path(scratch) / "adapter"
        if settings.launch == "none":
            train_game(ctx, item["ids"], adapter)
        else:
            ctx.release_models()  # the GPUs' memory is the launched processes'
            job = Path(scratch) / "job.pkl"
            job.write_bytes(pickle.dumps((ctx, item["ids"])))
            run_launched(launch_command(settings, __spec__.name, [str(job), str(adapter)]))
        summary = json.loads((adapter / TRAIN_HISTORY).read_text())
        # The files travel in the (persisted) result: `dvc repro` deletes the stage's
        # outputs before rerunning it, so a cached result must not point at them.
        files = {f.name: f.read_bytes() for f in adapter.iterdir()}
    return {**summary, "adapter_files": files}


def train_game(ctx, ids: list[str], adapter_dir: Path) -> None:
    """Train the game's Refiner on the instances ``ids``; the adapter and its history land in
    ``adapter_dir`` (in a launched run, from the main process only)."""
    # Training loads its own copy of the Refiner: only the Measurer and the Refiner's
    # tokenizer stay loaded beside it (the players and the labeler come back for evaluate).
    ctx.release_models("refiner", "measurer", keep_prefixes=("measurer",))
    rows, views = ctx.instances("intents", ids)
    refiner_cfg = ctx.params.models.refiner
    if refiner_cfg.backend != "local":
        raise ValueError("grpo: models.refiner must be a local model (a checkpoint to train)")
    measurer = ctx.llm("measurer")
    score = ctx.params.for_game("score", ctx.game)
    by_id = {r["instance_id"]: (r, v) for r, v in zip(rows, views, strict=True)}
    prompting = ctx.params.refiner_sampling(ctx.game)
    output_format = prompting.output_format
    room = prompting.max_new_tokens  # a candidate's room in the Measurer's window
    prompts = [refiner_prompt(ctx.llm("refiner"), v, prompting) for v in views]
    # The prompts are built: the Refiner base goes too, unless it is the Measurer's copy
    # (the same checkpoint and dtype); a Measurer in another dtype would otherwise sit beside
    # two Refiner copies, this one and the one trained.
    ctx.release_models("measurer", keep_prefixes=("measurer",))

    def reward_fn(
        completions: list[str], instance_id: list[str], log_metric=None, **_
    ) -> list[float]:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, iid in enumerate(instance_id):
            groups[iid].append(i)
        rewards = [0.0] * len(completions)
        n_parsed = 0
        for iid, idx in groups.items():
            row, view = by_id[iid]
            raw = [completions[i] for i in idx]
            outputs = [parse_refiner_output(t, row["base_utterance"], output_format) for t in raw]
            parsed = [utterance for utterance, _ in outputs]
            n_parsed += sum(ok for _, ok in outputs)
            texts = score.texts(raw, parsed)
            parts, _ = measure(measurer, view, texts, row["desired"], row["undesired"], score, room)
            for i, p in zip(idx, parts, strict=True):
                rewards[i] = p.reward
        if log_metric is not None and completions:  # the step's parse rate, in its history
            log_metric(PARSE_RATE, n_parsed / len(completions))
        return rewards

    settings = ctx.section.model_copy(update={"max_completion_length": prompting.max_new_tokens})
    result = train_refiner(
        refiner_cfg.model,
        prompts,
        {"instance_id": [r["instance_id"] for r in rows]},
        reward_fn,
        settings,
        adapter_dir,
        stop=prompting.style.stop,
        desc=f"grpo@{ctx.game} steps",
    )
    if result.main_process:
        summary = {
            "history": result.history,
            "steps": result.steps,
            "generation_s": result.generation_s,
            "reward_s": result.reward_s,
            "prompts": len(prompts),
            "completions_per_step": settings.completions_per_step,
        }
        (Path(result.adapter_dir) / TRAIN_HISTORY).write_text(json.dumps(summary, indent=1))


def finish(ctx, results) -> dict:
    import mlflow

    res = results[0]
    adapter = ctx.path()
    write_adapter(res["adapter_files"], adapter)
    for step, metrics in enumerate(res["history"], 1):
        mlflow.log_metrics(
            {f"train/{k}": float(v) for k, v in metrics.items() if isinstance(v, int | float)},
            step=step,
        )
    register_adapter(adapter, f"refiner-{ctx.game}")
    rewards = [h["reward"] for h in res["history"] if "reward" in h]
    rates = output_rates(res["history"], res.get("completions_per_step", 0))
    return {
        # completions that ended before max_completion_length (1 - TRL's clipped_ratio) and
        # that parsed, over the whole run
        "ended_rate": rates["ended_rate"],
        "parse_rate": rates["parse_rate"],
        "steps": res["steps"],
        "generation_s": res["generation_s"],
        "reward_s": res["reward_s"],
        "reward_s_per_generation_s": res["reward_s"] / res["generation_s"]
        if res["generation_s"]
        else 0.0,
        "reward_first": rewards[0] if rewards else float("nan"),
        "reward_last": rewards[-1] if rewards else float("nan"),
    }


def register_adapter(adapter: Path, name: str) -> str:
    """Log the adapter to the active run and register it as a new model version."""
    import mlflow
    from mlflow import MlflowClient

    mlflow.log_artifacts(str(adapter), "refiner-adapter")
    run = mlflow.active_run()
    client = MlflowClient()
    try:
        client.get_registered_model(name)
    except mlflow.exceptions.MlflowException:
        client.create_registered_model(name, description="Stackelberg Refiner LoRA adapter")
    source = f"{run.info.artifact_uri}/refiner-adapter"
    version = client.create_model_version(name, source=source, run_id=run.info.run_id)
    return version.version


def main(argv: list[str] | None = None) -> None:
    """One process of a launched run (``grpo.launch``): ``python -m stages.grpo JOB ADAPTER_DIR``,
    JOB the stage's context and instance ids, pickled by ``work``."""
    import os
    import sys

    job, adapter_dir = argv if argv is not None else sys.argv[1:]
    local_rank = os.environ.get("LOCAL_RANK")
    if local_rank is not None:  # `device: cuda` means this process's GPU (the Measurer's too)
        import torch

        if torch.cuda.is_available():
            torch.cuda.set_device(int(local_rank))
    ctx, ids = pickle.loads(Path(job).read_bytes())
    train_game(ctx, ids, Path(adapter_dir))


if __name__ == "__main__":
    main()
