"""grpo: train the Refiner (LoRA) with GRPO on the Measurer reward of the train instances.

The reward of a completion goes through the same code as the score stage: parse the
Refiner output, put the utterance in the follower's prompt, score the instance's desired
and undesired responses. The adapter lands in models/refiner/GAME and becomes a new version
of the MLflow registered model ``refiner-GAME``. With ``grpo.launch`` set, the training runs
under ``accelerate launch`` on several GPUs (``training.launch``), each process running this
module's ``main``.

The same module trains the joint Refiner (``grpo.joint``), as the stage grpo_joint
(``JOINT_STAGE``): one Refiner on every joint game's train instances, each prompted and
rewarded as its game's own Refiner is, into models/refiner/joint (``refiner-joint``).

A game's Refiners go on from its warm start (models/warm_start/GAME, ``warm_start.source``)
where it holds an adapter; the joint Refiner starts from the base model.
"""

from __future__ import annotations

import json
import pickle
import tempfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from stackelberg.agents.refiner import Candidate, parse_refiner_output
from stackelberg.datasets import game_of, labeled_split
from stackelberg.persuasion.candidates import refiner_prompt
from stackelberg.persuasion.intents import VIEWS, other_view_row
from stackelberg.persuasion.measurer import ensemble_names, measure_completions, member_refiner
from stackelberg.training.grpo import train_refiner
from stackelberg.training.grpo_outputs import (
    EXTRA,
    JOINT_GAMES,
    JOINT_REFINER,
    PARSE_RATE,
    TRAIN_HISTORY,
    train_history_rates,
    write_adapter,
    write_no_joint,
)
from stackelberg.training.launch import check_machine, launch_command, run_launched
from stackelberg.training.prompt_rewards import (
    PROMPT_REWARDS,
    prompt_reward_log,
    prompt_reward_records,
    step_prompt_rewards,
)
from stackelberg.training.warm_start import warm_start_adapter

#: the stage that runs this module for the joint Refiner (dvc.yaml; flows/context.py: MODULE_OF)
JOINT_STAGE = "grpo_joint"


def plan(ctx) -> list[dict]:
    """The game's Refiner, then its extra Refiners on the same instances: one per entry of
    the reward ablation (``grpo.ablations``), of ``grpo.views``, then one per member of an
    ensemble Measurer, trained against it alone (``grpo.member_refiners``). The joint
    Refiner: ``joint_plan``."""
    if ctx.stage == JOINT_STAGE:
        return joint_plan(ctx)
    df = labeled_split(ctx.path("label"), "train", "train the Refiner on")
    ids = df["instance_id"].to_list()
    section = ctx.section
    return (
        [{"label": "train", "ids": ids}]
        + [
            {"label": f"train on the {name} {kind}", "ids": ids, "extra": name}
            for names, kind in ((section.ablations, "reward"), (section.views, "intents"))
            for name in names
        ]
        + [
            {"label": f"against {m} alone", "ids": ids, "extra": member_refiner(m), "member": m}
            for m in section.member_refiners
        ]
    )


def joint_plan(ctx) -> list[dict]:
    """One item, the joint Refiner on the train instances of every game of ``grpo.joint``;
    none without it (``finish`` then leaves a folder that names no game)."""
    games = ctx.section.joint
    ids = [
        i
        for game in games
        for i in labeled_split(replace(ctx, game=game).path("label"), "train", "train on")[
            "instance_id"
        ].to_list()
    ]
    return [{"label": f"train on {', '.join(games)}", "ids": ids}] if games else []


def train_instances(ctx, ids: list[str], extra: str | None) -> tuple[list[dict], list]:
    """The intents rows of ``ids`` and their views, read from each one's game (several for
    the joint Refiner); for the Refiner of the other view (``extra`` in ``VIEWS``), with
    that view's responses as its desired and undesired ones."""
    rows, views = [], []
    by_game: dict[str, list[str]] = defaultdict(list)
    for i in ids:
        by_game[game_of(i)].append(i)
    for game, game_ids in by_game.items():
        game_rows, game_views = replace(ctx, game=game).instances("intents", game_ids)
        rows += [other_view_row(r) for r in game_rows] if extra in VIEWS else game_rows
        views += game_views
    return rows, views


def work(ctx, item) -> dict:
    import torch

    settings = ctx.section
    check_machine(settings, torch.cuda.device_count())
    ctx.path().parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".grpo-", dir=ctx.path().parent) as scratch:
        adapter = Path(scratch) / "adapter"
        extra, member = item.get("extra"), item.get("member")
        if settings.launch == "none":
            train_game(ctx, item["ids"], adapter, extra, member)
        else:
            ctx.release_models()  # the GPUs' memory is the launched processes'
            job = Path(scratch) / "job.pkl"
            job.write_bytes(pickle.dumps((ctx, item["ids"], extra, member)))
            run_launched(launch_command(settings, __spec__.name, [str(job), str(adapter)]))
        summary = json.loads((adapter / TRAIN_HISTORY).read_text())
        # The files travel in the (persisted) result: `dvc repro` deletes the stage's
        # outputs before rerunning it, so a cached result must not point at them.
        files = {f.name: f.read_bytes() for f in adapter.iterdir()}
    return {**summary, "adapter_files": files, "extra": extra}


def train_game(
    ctx, ids: list[str], adapter_dir: Path, extra: str | None = None, member: str | None = None
) -> None:
    """Train the game's Refiner on the instances ``ids`` (``extra``: the extra Refiner of
    that name instead, on those reward terms instead of score.terms, or on that view's
    intents; with ``member``, the member Refiner trained against that member of an ensemble
    Measurer alone); the adapter and its history land in
    ``adapter_dir`` (in a launched run, from the main process only). An ensemble's members'
    mean rewards go into each step's history (``member_reward/NAME``)."""
    # Training loads its own copy of the Refiner: only the Measurer and the Refiner's
    # tokenizer stay loaded beside it (the players and the labeler come back for evaluate).
    ctx.release_models("refiner", "measurer", keep_prefixes=("measurer",))
    rows, views = train_instances(ctx, ids, extra)
    # a Refiner served by vLLM trains here too, on the served base model's checkpoint
    refiner_cfg = ctx.params.models.refiner
    measurer = ctx.measurer()
    # each instance rewarded as its game's (the joint Refiner's are of several games)
    scores = {g: ctx.params.for_game("score", g) for g in dict.fromkeys(r["game"] for r in rows)}
    if member is not None:
        measurer = measurer.member(member)
    elif extra is not None and extra not in VIEWS:
        scores = {g: s.model_copy(update={"terms": extra}) for g, s in scores.items()}
    members = ensemble_names(measurer)
    by_id = {r["instance_id"]: (r, v) for r, v in zip(rows, views, strict=True)}
    # one style (output format, stop, token limit) for every game: the joint Refiner's
    # games share it (params' load checks)
    profiles = {g: ctx.params.refiner_profile(g) for g in dict.fromkeys(r["game"] for r in rows)}
    profile = profiles.get(rows[0]["game"]) if rows else ctx.params.refiner_profile(ctx.game)
    output_format = profile.style.output_format
    room = profile.token_limit  # a candidate's room in the Measurer's window
    prompts = [
        refiner_prompt(ctx.llm("refiner"), v, profiles[r["game"]])
        for r, v in zip(rows, views, strict=True)
    ]
    # The prompts are built: the Refiner base goes too, unless it is the Measurer's copy
    # (the same checkpoint and dtype); a Measurer in another dtype would otherwise sit beside
    # two Refiner copies, this one and the one trained.
    ctx.release_models("measurer", keep_prefixes=("measurer",))
    records: list = []  # this process's (step, instance, reward sum, completions)

    def reward_fn(
        completions: list[str],
        completion_ids: list[list[int]],
        instance_id: list[str],
        log_metric=None,
        step=None,
        **_,
    ) -> list[float]:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, iid in enumerate(instance_id):
            groups[iid].append(i)
        rewards = [0.0] * len(completions)
        member_sums = [0.0] * len(members)
        n_parsed = 0
        for iid, idx in groups.items():
            row, view = by_id[iid]
            cands = [
                Candidate(
                    completions[i],
                    *parse_refiner_output(completions[i], row["base_utterance"], output_format),
                    len(completion_ids[i]) < room,  # ended before the limit (room)
                )
                for i in idx
            ]
            n_parsed += sum(c.parsed for c in cands)
            measured = measure_completions(measurer, row, view, cands, scores[row["game"]], room)
            for i, p in zip(idx, measured.parts, strict=True):
                rewards[i] = p.reward
                member_sums = [a + b for a, b in zip(member_sums, p.member_rewards, strict=True)]
        if log_metric is not None and completions:  # the step's parse rate, in its history
            log_metric(PARSE_RATE, n_parsed / len(completions))
            for name, total in zip(members, member_sums, strict=True):
                log_metric(f"member_reward/{name}", total / len(completions))
        if step is not None:  # each prompt's mean reward per step, the curve's evidence
            records.extend(prompt_reward_records(step, instance_id, rewards))
        return rewards

    result = train_refiner(
        refiner_cfg.model,
        prompts,
        {"instance_id": [r["instance_id"] for r in rows]},
        reward_fn,
        ctx.section,
        adapter_dir,
        completion_limit=room,
        stop=profile.style.stop,
        desc=f"{ctx.stage}@{ctx.game} steps" + (f", {extra}" if extra else ""),
        # every Refiner of a game goes on from its warm start; the joint one from the base
        init_adapter=None
        if ctx.stage == JOINT_STAGE
        else warm_start_adapter(ctx.path("warm_start")),
    )
    from accelerate.utils import gather_object

    # each process scored its share of every step (one process: its records as they are)
    records = gather_object(records)
    if result.main_process:
        summary = {
            "history": result.history,
            "steps": result.steps,
            "generation_s": result.generation_s,
            "reward_s": result.reward_s,
            "prompts": len(prompts),
            "completions_per_step": ctx.section.completions_per_step,
            PROMPT_REWARDS: prompt_reward_log(records),
        }
        (Path(result.adapter_dir) / TRAIN_HISTORY).write_text(json.dumps(summary, indent=1))


def finish(ctx, results) -> dict:
    import mlflow

    if not results:  # grpo_joint without grpo.joint: its output names no game
        write_no_joint(ctx.path())
        return {}
    res, others = results[0], results[1:]
    adapter = ctx.path()
    files = dict(res["adapter_files"])
    joint = ctx.stage == JOINT_STAGE
    if joint:  # the games it trained on, beside the adapter
        files[JOINT_GAMES] = json.dumps(ctx.section.joint).encode()
    for other in others:  # the extra Refiners, inside the game's
        files |= {f"{EXTRA}/{other['extra']}/{k}": v for k, v in other["adapter_files"].items()}
    write_adapter(files, adapter)
    for prefix, run in [("train", res)] + [(f"train_{o['extra']}", o) for o in others]:
        for step, metrics in enumerate(run["history"], 1):
            mlflow.log_metrics(
                {
                    f"{prefix}/{k}": float(v)
                    for k, v in metrics.items()
                    if isinstance(v, int | float)
                },
                step=step,
            )
        # the prompts' spread per step (each prompt's reward stays in the train history)
        for step, prompts in (step_prompt_rewards(run) or {}).items():
            mlflow.log_metrics(
                {
                    f"{prefix}/prompt_reward_min": min(prompts),
                    f"{prefix}/prompt_reward_max": max(prompts),
                },
                step=step,
            )
    register_adapter(adapter, f"refiner-{JOINT_REFINER if joint else ctx.game}")
    for other in others:
        name = other["extra"]
        register_adapter(adapter / EXTRA / name, f"refiner-{ctx.game}-{name}", name)
    rewards = [h["reward"] for h in res["history"] if "reward" in h]
    rates = train_history_rates(res["history"], res.get("completions_per_step", 0))
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


def register_adapter(adapter: Path, name: str, extra: str | None = None) -> str:
    """Log the adapter to the active run and register it as a new model version (an
    ``extra`` Refiner's under its own artifact path)."""
    import mlflow
    from mlflow import MlflowClient

    path = "refiner-adapter" + (f"-{extra}" if extra else "")
    if extra:
        mlflow.log_artifacts(str(adapter), path)
    else:  # the game's Refiner alone: its extra Refiners are logged apart
        for f in adapter.iterdir():
            if f.is_file():
                mlflow.log_artifact(str(f), path)
    run = mlflow.active_run()
    client = MlflowClient()
    try:
        client.get_registered_model(name)
    except mlflow.exceptions.MlflowException:
        client.create_registered_model(name, description="Stackelberg Refiner LoRA adapter")
    source = f"{run.info.artifact_uri}/{path}"
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
    ctx, ids, extra, member = pickle.loads(Path(job).read_bytes())
    train_game(ctx, ids, Path(adapter_dir), extra, member)


if __name__ == "__main__":
    main()
