"""tactics: train the rl_ins tactic policy (REINFORCE on scripted ONUW self-play).

One work item: the training run, then the trained and the uniform tactic choice on the
same held-out seeds. Writes models/tactics/onuw (the policy, its shape, the training
curve and the comparison); logs the curve and the comparison to MLflow. ONUW only.
"""

from __future__ import annotations

import io
import json

from stackelberg.agents.tactics.policy import TacticPolicy, save_policy
from stackelberg.evaluation.stats import held_out_comparison
from stackelberg.games import ConfigError
from stackelberg.io import atomic_writer
from stackelberg.progress import progress
from stackelberg.training.tactics import GAME, eval_seeds, one_thread, play_learner, train_tactics

#: the games this stage runs for (flows/run.py refuses the others)
GAMES = (GAME,)
#: the training curve and the held-out comparison, beside the policy
HISTORY = "history.json"


def plan(ctx) -> list[dict]:
    if ctx.game not in GAMES:
        raise ConfigError(f"tactics: rl_ins plays {GAME} only; no tactic policy for {ctx.game}")
    return [{"label": "train"}]


def work(ctx, item) -> dict:
    import torch

    settings = ctx.section
    bar = progress(settings.episodes, f"tactics@{ctx.game} training", "game")
    policy, history = train_tactics(settings, on_step=lambda s: bar.update(s["games"] - bar.n))
    bar.close()
    seeds = eval_seeds(settings)
    with one_thread():
        trained = [won for won, _, _ in play_learner(policy, seeds, settings.options)]
        uniform = [won for won, _, _ in play_learner(None, seeds, settings.options)]
    weights = io.BytesIO()
    torch.save(policy.state_dict(), weights)
    return {
        "weights": weights.getvalue(),
        "history": history,
        "trained": trained,
        "uniform": uniform,
    }


def finish(ctx, results) -> dict:
    import mlflow
    import torch

    res = results[0]
    settings = ctx.section
    policy = TacticPolicy(settings.hidden)
    policy.load_state_dict(torch.load(io.BytesIO(res["weights"]), weights_only=True))
    out = save_policy(policy, ctx.path(), game=ctx.game, settings=settings.model_dump(mode="json"))
    comparison, gains = held_out_comparison(
        ("uniform", "trained"), res["uniform"], res["trained"], settings.seed
    )
    with atomic_writer(out / HISTORY) as fh:
        json.dump({"history": res["history"], "held_out": comparison}, fh, indent=1)
    for step, metrics in enumerate(res["history"], 1):
        mlflow.log_metrics({f"train/{k}": float(v) for k, v in metrics.items()}, step=step)
    mlflow.log_artifacts(str(out), "tactics")
    return {"updates": len(res["history"])} | gains
