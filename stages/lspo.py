"""lspo: the lspo agent's latent strategies and their CFR-solved policy (Werewolf).

One work item: the speeches of the self-play records and of the candidate games are
clustered into latent strategies per role, the abstract game over them is solved by
outcome-sampling MCCFR, then one seat plays the solved and the uniform choice over latent
strategies on the same held-out seeds against scripted players. Writes models/lspo/werewolf
(the strategies, the policy, the solver's curve and the comparison); logs them to MLflow.
Werewolf only.
"""

from __future__ import annotations

import json

from stackelberg.agents.latent.cfr import LatentPolicy, save_policy
from stackelberg.datasets import read_dataset
from stackelberg.evaluation.stats import held_out_comparison
from stackelberg.games import ConfigError
from stackelberg.io import atomic_writer
from stackelberg.progress import progress
from stackelberg.training.lspo import GAME, eval_seeds, play_learner, train_lspo

#: the games this stage runs for (flows/run.py refuses the others)
GAMES = (GAME,)
#: the solver's curve and the held-out comparison, beside the policy
HISTORY = "history.json"


def plan(ctx) -> list[dict]:
    if ctx.game not in GAMES:
        raise ConfigError(f"lspo: the lspo agent plays {GAME} only; no policy for {ctx.game}")
    return [{"label": "solve"}]


def work(ctx, item) -> dict:
    settings = ctx.section
    rows = read_dataset(ctx.path("selfplay"), "selfplay")["record"].to_list()
    bar = progress(settings.iterations, f"lspo@{ctx.game} solving", "game")
    policy, history = train_lspo(
        (json.loads(r) for r in rows), settings, on_step=lambda t: bar.update(t - bar.n)
    )
    bar.close()
    seeds = eval_seeds(settings)
    uniform = LatentPolicy(policy.strategies, {})
    return {
        "strategies": {r: [s.to_dict() for s in ss] for r, ss in policy.strategies.items()},
        "table": policy.table,
        "history": history,
        "solved": play_learner(policy, seeds, settings.options),
        "uniform": play_learner(uniform, seeds, settings.options),
        "records": len(rows),
    }


def finish(ctx, results) -> dict:
    import mlflow

    from stackelberg.agents.latent.clusters import Strategy

    res = results[0]
    settings = ctx.section
    strategies = {
        r: tuple(Strategy.from_dict(s) for s in ss) for r, ss in res["strategies"].items()
    }
    policy = LatentPolicy(strategies, res["table"])
    out = save_policy(policy, ctx.path(), game=ctx.game, settings=settings.model_dump(mode="json"))
    comparison, gains = held_out_comparison(
        ("uniform", "solved"), res["uniform"], res["solved"], settings.seed
    )
    with atomic_writer(out / HISTORY) as fh:
        json.dump({"history": res["history"], "held_out": comparison}, fh, indent=1)
    for step, metrics in enumerate(res["history"], 1):
        mlflow.log_metrics({f"solve/{k}": float(v) for k, v in metrics.items()}, step=step)
    mlflow.log_artifacts(str(out), "lspo")
    return {
        "self_play_records": res["records"],
        "information_sets": len(res["table"]),
        "latent_strategies": sum(len(ss) for ss in strategies.values()),
    } | gains
