"""evaluate: the trained Refiner against the untrained one, and agents with and without it.

The work items: the held-out Measurer reward (test instances; n candidates from each
Refiner; paired by instance), and the win-rate tournaments by camp, a batch of tables each
(X and refiner+X on the same seeds; a scored game, Sotopia, reports its dimensions instead,
scored by its rules or, with the game option ``evaluator: llm``, by models.labeler).
Writes reports/GAME/metrics.json (DVC metrics) and PNG plots, logs to MLflow. ``rl_ins``
seats play with the tactics stage's policy (models/tactics/onuw), handed to them on the
``tactics`` route; ``strategist`` seats with the strategist stage's value model
(models/strategist/avalon), on the ``strategist`` route; ``lspo`` seats with the lspo stage's
policy (models/lspo/werewolf), on the ``lspo`` route (``evaluation.routes``); ``bestN+X``
seats with the untrained Refiner and the Measurer (``refiner_base`` and ``measurer`` routes),
labeling and scoring as the label and score stages do. The joint Refiner (``grpo.joint``,
models/refiner/joint) samples and is scored beside the game's own, as are the game's extra
Refiners (``grpo.ablations``, ``grpo.views``, ``grpo.member_refiners``), and plays as
``refiner-joint+X``; with ``label.both_views`` the Refiners of the information table are
also scored against the other view's intents (``evaluation.transfer``).

The work is the library's (``evaluation.held_out_scoring``, ``evaluation.routes``,
``evaluation.tournament``, ``evaluation.metrics``, ``evaluation.plots``); this module picks
the models, frees memory between them, and writes the outputs.
"""

from __future__ import annotations

import json
from contextlib import ExitStack

from stackelberg.agents.refiner import RefinerProfile
from stackelberg.datasets import of_split, read_dataset, seed_of
from stackelberg.evaluation.ablation import TERMS_KEY
from stackelberg.evaluation.behaviour import behaviour_followers
from stackelberg.evaluation.ground_truth import ground_truth_summary
from stackelberg.evaluation.held_out import held_out_details
from stackelberg.evaluation.held_out_scoring import (
    TRAINED,
    UNTRAINED,
    BehaviourRun,
    candidate_seeds,
    held_out_reward,
    sample_held_out,
    score_other_view,
)
from stackelberg.evaluation.judge import judge_tournament
from stackelberg.evaluation.metrics import game_metrics, refiner_runs
from stackelberg.evaluation.mlflow_names import mlflow_metrics
from stackelberg.evaluation.plots import plot_game
from stackelberg.evaluation.routes import JUDGE
from stackelberg.evaluation.routes import tournament_routes as play_routes
from stackelberg.evaluation.tournament import (
    best_of_played,
    drop_game_records,
    matrix_games,
    play_matrix,
)
from stackelberg.evaluation.transfer import joint_comparison, views_comparison
from stackelberg.io import atomic_writer
from stackelberg.llm import LLMConfig
from stackelberg.llm.local.threads import BackgroundLane
from stackelberg.params import draw_model
from stackelberg.persuasion.candidates import dataset_rates
from stackelberg.persuasion.exact_follower import exact_follower_for
from stackelberg.persuasion.intents import SCRIPTED
from stackelberg.persuasion.measurer import measurer_backends
from stackelberg.training.grpo_outputs import (
    EXTRA,
    JOINT_REFINER,
    TRAIN_HISTORY,
    train_history_rates,
)
from stackelberg.viewer import render_pages, tournament_entries, write_pages

METRICS = "metrics.json"
HELD_OUT = "held_out_reward"
#: the viewer pages of a few tournament games, beside the metrics
VIEWER_FOLDER = "games"


def refiner_profile(ctx, trained: bool, extra: str | None = None) -> RefinerProfile:
    """The Refiner as it runs (``Params.refiner_profile``), untrained or with this game's
    trained adapter beside its weights (``extra``: the game's extra Refiner of that name,
    ``GRPOSettings.extra_refiners``; ``joint``: the joint Refiner, ``grpo.joint``): the
    held-out reward compares them as they play."""
    if extra == JOINT_REFINER:
        adapter = ctx.path("grpo_joint")
    else:
        adapter = ctx.path("grpo") / EXTRA / extra if extra else ctx.path("grpo")
    return ctx.params.refiner_profile(ctx.game, adapter if trained else None)


def plan(ctx) -> list[dict]:
    """The held-out reward with the first batch of tournament tables, then the other
    batches of ``batch_games`` tables (each a work item, played with its LLM calls batched;
    on a cluster, items run in parallel). In the first item the Measurer scores the held-out
    candidates beside the tables (``held_out_beside_tournament``)."""
    p = ctx.section
    games = len(tournament_games(ctx))
    items = []
    for start in range(0, games, p.batch_games):
        stop = min(start + p.batch_games, games)
        items.append({"label": f"tournament games {start}-{stop - 1}", "tables": [start, stop]})
    if not items:
        return [{"label": HELD_OUT, "held_out": True}]
    items[0] |= {"label": f"{HELD_OUT}, {items[0]['label']}", "held_out": True}
    return items


def work(ctx, item) -> dict:
    if not item.get("held_out"):
        return tournaments(ctx, slice(*item["tables"]))
    if "tables" not in item:
        sampled = held_out_samples(ctx)
        return held_out_scores(ctx, held_out_measurer(ctx), sampled)
    return held_out_beside_tournament(ctx, slice(*item["tables"]))


def tournament_games(ctx) -> list:
    """Every game of the tournaments (``matrix_games``), in the order they are played."""
    p = ctx.section
    return matrix_games(
        ctx.game, p.conditions, condition_seeds(ctx), p.camps or None, p.options, p.camps_in_turn()
    )


def condition_seeds(ctx) -> dict[str, range]:
    """Each condition's seeds (``games_of``: LLM players' few, the others' many), all from
    ``tournament_seed`` on, so that every pair meets the same deals."""
    p = ctx.section
    return {c: range(p.tournament_seed, p.tournament_seed + p.games_of(c)) for c in p.conditions}


def tournament_seeds(ctx) -> range:
    """Every seed some condition plays."""
    p = ctx.section
    most = max(map(p.games_of, p.conditions), default=0)
    return range(p.tournament_seed, p.tournament_seed + most)


def held_out_beside_tournament(ctx, part: slice) -> dict:
    """The held-out reward and the tournament games ``part``: the Refiners sample first,
    then the Measurer scores their candidates in a ``BackgroundLane`` while the tables play.
    A tournament decodes a token at a time for a few tables, which leaves most of the second
    core idle; the Measurer's forward passes use it. Each side keeps its own prompt-prefix
    blocks, so neither changes what the other computes. A Measurer that the tables also use
    (one backend, or one store) scores after them instead."""
    sampled = held_out_samples(ctx)
    if not sampled:
        return tournaments(ctx, part) | held_out_scores(ctx, None, sampled)
    measurer = held_out_measurer(ctx, also=(refiner_profile(ctx, trained=True).model,))
    routes = tournament_routes(ctx, keep=("measurer",))
    backends = measurer_backends(measurer)
    stores = {id(s): s for b in backends if (s := getattr(b, "prefix_store", None)) is not None}
    if any(
        route is b or id(getattr(route, "prefix_store", None)) in stores
        for route in routes.values()
        for b in backends
    ):
        return tournaments(ctx, part, routes) | held_out_scores(ctx, measurer, sampled)
    with ExitStack() as budgets:  # each store (an ensemble: each member's) on its own
        for store in stores.values():
            budgets.enter_context(store.own_budget())
        with BackgroundLane(held_out_scores, ctx, measurer, sampled) as lane:
            played = tournaments(ctx, part, routes)
        return played | lane.join()


def held_out_samples(ctx) -> dict:
    """The test instances and the Refiners' candidates for them (``sample_held_out``),
    sampled before the Measurer loads (``{}`` without test instances)."""
    p = ctx.section
    df = of_split(read_dataset(ctx.path("label"), "intents"), "test")
    if df.is_empty():
        return {}
    rows, views = ctx.instances("intents", df["instance_id"].to_list())
    extra = ctx.params.for_game("grpo", ctx.game).extra_refiners()
    if ctx.params.grpo.joint:  # the joint Refiner, beside the game's own
        extra = [*extra, JOINT_REFINER]
    # The Refiners sample first, beside the players only: the Measurer and the Refiner base
    # left by earlier stages (one copy in float32, two when the Measurer has its own dtype)
    # make room for loading the Refiners' base (read in float32, then int8; the trained
    # ones run their adapter beside the same weights), and the Measurer comes back after.
    refiners = {UNTRAINED: refiner_profile(ctx, False), TRAINED: refiner_profile(ctx, True)}
    refiners |= {name: refiner_profile(ctx, True, name) for name in extra}
    ctx.release_models("player", "labeler", also=tuple(r.model for r in refiners.values()))
    seeds = candidate_seeds([seed_of(r["instance_id"]) for r in rows], p.seed)
    return sample_held_out(ctx.model, refiners, extra, rows, views, p.n, p.best_of, seeds)


def held_out_measurer(ctx, also: tuple[LLMConfig, ...] = ()):
    """The Measurer, loaded once both Refiners have sampled: what loading them freed (the
    base's float32 weights before int8) goes back first (the stage's peak memory); ``also``
    stays loaded (the trained Refiner, for tables that play next)."""
    ctx.release_models("measurer", "player", "labeler", also=also)
    return ctx.measurer()


def held_out_scores(ctx, measurer, sampled: dict) -> dict:
    """The held-out reward (``held_out_reward``) under the Measurer and, with
    ``models.unseen_follower``, under that follower too, loaded when its turn comes; with
    ``evaluate.behaviour.responses``, the followers' judged responses (``behaviour_run``)."""
    config = ctx.params.models.unseen_follower
    unseen = None if config is None else (lambda: ctx.model(config), config.model)
    reward = held_out_reward(
        sampled,
        ctx.section.n,
        ctx.params.for_game("score", ctx.game),
        f"evaluate@{ctx.game}",
        measurer,
        unseen=unseen,
        behaviour=behaviour_run(ctx, measurer, unseen),
        best_of=ctx.section.best_of,
        exact=exact_follower_for(ctx.game, ctx.params.for_game("label", ctx.game).scheme),
    )
    return with_other_view(ctx, measurer, sampled, reward)


def with_other_view(ctx, measurer, sampled: dict, reward: dict) -> dict:
    """With ``label.both_views``: the held-out reward with the information table's
    candidates scored against the other view's intents too (``score_other_view``)."""
    label = ctx.params.for_game("label", ctx.game)
    if not label.both_views or not reward.get("scored"):
        return reward
    other = label.other_view().view
    reward["scored"]["other_view"] = score_other_view(
        measurer,
        sampled,
        ctx.section.n,
        other,
        ctx.params.for_game("score", ctx.game),
        f"evaluate@{ctx.game} held-out, {other} intents",
    )
    return reward


def behaviour_run(ctx, measurer, unseen) -> BehaviourRun | None:
    """Who responds to the held-out candidates and who judges (``evaluate.behaviour``): the
    scripted labeler's rule, or the LLM labeler (models.labeler; a list: the one drawn for
    evaluate.seed). None without responses asked for."""
    settings = ctx.section.behaviour
    if not settings.responses:
        return None
    entry = ctx.params.models.measurer
    model = getattr(entry, "model", "ensemble")  # a list is an ensemble: its members respond
    followers = behaviour_followers(settings.followers, measurer, model, unseen)
    scheme = ctx.params.for_game("label", ctx.game).scheme
    labeler = draw_model(ctx.params.models.labeler, ctx.section.seed)
    return BehaviourRun(settings, followers, None if scheme == SCRIPTED else ctx.model(labeler))


def tournament_routes(ctx, keep: tuple[str, ...] = ()) -> dict:
    """What the tables play with, by route (``routes.tournament_routes``). Loaded after
    every other model but those of ``keep`` (roles) is dropped: the held-out reward's
    untrained Refiner leaves room for the tables, unless a ``bestN+X`` speaker plays with
    it (and with the Measurer)."""
    p = ctx.section
    trained_refiner = refiner_profile(ctx, trained=True).model
    untrained_refiner = refiner_profile(ctx, trained=False).model
    if best_of_played(p.conditions):
        keep, also = (*keep, "measurer"), (trained_refiner, untrained_refiner)
    else:
        also = (trained_refiner,)
    ctx.release_models("player", "labeler", *keep, also=also)
    judged = (p.options or {}).get("evaluator") == "llm"  # a scored game's LLM evaluator
    return play_routes(
        (*p.conditions, p.opponent),
        ctx.model,
        seat_models(ctx).values(),
        trained_refiner,
        ctx.path,  # each trained route is named after the stage that writes its model
        # models.labeler (a list: one model drawn)
        judge=draw_model(ctx.params.models.labeler, p.tournament_seed) if judged else None,
        untrained_refiner=untrained_refiner,
        measurer=ctx.params.models.measurer,
        named_refiner=lambda name: refiner_profile(ctx, True, name).model,  # refiner-NAME+X
    )


def seat_models(ctx) -> dict[int, str]:
    """Each seed's players' model (drawn per seed, the same for every condition: pairs stay
    paired), as the config's JSON."""
    return {
        s: draw_model(ctx.params.models.player, s).model_dump_json() for s in tournament_seeds(ctx)
    }


def tournaments(ctx, part: slice, routes: dict | None = None) -> dict:
    """The games ``part`` of the tournaments (``routes``: ``tournament_routes``', loaded
    here when not given). The first ``viewer_games`` of each condition keep their game
    record: among them are the games of this part that ``finish`` picks for viewer pages,
    from the whole tournament."""
    p = ctx.section
    routes = dict(tournament_routes(ctx) if routes is None else routes)
    judge = routes.pop(JUDGE, None)
    records = play_matrix(
        ctx.game,
        p.conditions,
        condition_seeds(ctx),
        camps=p.camps or None,
        camps_in_turn=p.camps_in_turn(),
        opponent=p.opponent,
        llm_routes=routes,
        route_of_seed=seat_models(ctx).get,
        agent_options=p.agent_options(),
        # The Refiner plays as it runs everywhere; a best-of speaker labels and scores as
        # the label and score stages do.
        refiner=ctx.params.refiner_profile(ctx.game),
        best_of_options=ctx.params.best_of_options(ctx.game),
        options=p.options,
        batch_games=p.batch_games,
        keep_games=True,  # a few become viewer pages; a scored game's LLM evaluator reads them
        part=part,
    )
    if judge is not None:
        # Seeded per character by its place in the whole tournament, as if judged at once.
        first = part.start * len(records[0]["players"])
        counts = judge_tournament(judge, records, seed=p.seed + first)
    drop_game_records(records, p.viewer_games)
    return {"records": records} | ({"judge": counts} if judge is not None else {})


def finish(ctx, results) -> dict:
    import mlflow

    p = ctx.section
    reward = results[0]  # the first item's: the held-out reward (and the first tables)
    records = [r for part in results for r in part.get("records", [])]
    entries = tournament_entries(records, p.viewer_games)
    for r in records:
        r.pop("game_record", None)
    write_viewer_pages(ctx, entries)
    trained = json.loads((ctx.path("grpo") / TRAIN_HISTORY).read_text())
    curves = training_curves(ctx, trained)
    metrics = game_metrics(
        records,
        reward["before"],
        reward["after"],
        resamples=p.bootstrap,
        seed=p.seed,
        game=ctx.game,
        refiner_outputs=refiner_outputs(ctx, reward, trained, records),
        **curves,
    )
    if reward.get("scored"):
        metrics["held_out"] = held_out_details(
            reward["rows"], reward["scored"], p.n, p.best_of, p.examples, p.bootstrap, p.seed
        )
        metrics["held_out"] |= transfer_details(ctx, reward["scored"])
        if reward.get("optima"):
            metrics["held_out"]["ground_truth"] = ground_truth_summary(
                reward["rows"],
                reward["scored"],
                reward["optima"],
                p.n,
                p.best_of,
                p.bootstrap,
                p.seed,
            )
    out = ctx.path()
    plots = out / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    plot_game(
        metrics,
        trained["history"],
        curves["step_rewards"],
        reward["before"],
        reward["after"],
        plots,
    )
    with atomic_writer(out / METRICS) as fh:
        json.dump(metrics, fh, indent=1)
    for png in sorted(plots.glob("*.png")):
        mlflow.log_artifact(str(png), "plots")
    mlflow.log_artifact(str(out / METRICS))
    mlflow.log_metrics(mlflow_metrics(metrics))
    # The reward ablation (evaluation.ablation) finds this run by the terms it trained on.
    mlflow.set_tag(TERMS_KEY, ctx.params.for_game("score", ctx.game).terms)
    r = metrics["reward"] or {}
    return {
        "games_played": len(records),
        "reward_before": (r.get("before") or {}).get("estimate", float("nan")),
        "reward_after": (r.get("after") or {}).get("estimate", float("nan")),
    }


def transfer_details(ctx, scored: dict) -> dict:
    """The joint Refiner beside the game's own (``grpo.joint``) and the 2x2 information
    table (``label.both_views``), where they were trained and scored (``evaluation.transfer``)."""
    p, out = ctx.section, {}
    if joint := ctx.params.grpo.joint:
        measurer = scored["measurer"]
        out["joint"] = joint_comparison(
            measurer, measurer["extra"][JOINT_REFINER], p.n, joint, ctx.game, p.bootstrap, p.seed
        )
    if "other_view" in scored:
        own_view = ctx.params.for_game("label", ctx.game).view
        out["views"] = views_comparison(scored, p.n, own_view, p.bootstrap, p.seed)
    return out


def training_curves(ctx, history: dict) -> dict:
    """The GRPO run's prompt rewards by step, the same less each prompt's untrained baseline,
    and each revisited prompt's first and last reward, from its train history ``history``:
    the keyword arguments of ``game_metrics`` and ``training_summary`` (all None for a run
    trained before prompt rewards were kept)."""
    from stackelberg.evaluation.training_curve import gain_over_baseline, revisit_pairs
    from stackelberg.training.prompt_rewards import step_prompt_reward_map, step_prompt_rewards

    by_prompt = step_prompt_reward_map(history)
    if by_prompt is None:
        return {"step_rewards": None, "step_gains": None, "revisits": None}
    return {
        "step_rewards": step_prompt_rewards(history),
        "step_gains": gain_over_baseline(by_prompt, untrained_baselines(ctx)),
        "revisits": revisit_pairs(by_prompt),
    }


def untrained_baselines(ctx) -> dict[str, float]:
    """Each train instance's baseline for the training gain (``training_curve``): the mean
    reward of the untrained Refiner's candidates on it (the score stage's refiner rows)."""
    import polars as pl

    scores = read_dataset(ctx.path("score"), "scores").filter(pl.col("source") == "refiner")
    means = scores.group_by("instance_id").agg(pl.col("reward").mean())
    return {str(k): float(v) for k, v in means.iter_rows()}


def write_viewer_pages(ctx, entries: list) -> None:
    """A few tournament games as static pages (reports/GAME/games, an index of none without
    tournaments: the stage's output always exists), logged to MLflow."""
    import mlflow

    pages = render_pages(entries, f"evaluate@{ctx.game}", reveal=True)
    folder = write_pages(pages, ctx.path() / VIEWER_FOLDER)
    if entries:
        mlflow.log_artifacts(str(folder), VIEWER_FOLDER)


def refiner_outputs(ctx, reward: dict, trained: dict, records: list[dict]) -> dict[str, dict]:
    """The Refiner-output rates of this game's Refiner runs (``metrics.refiner_runs``); the
    sample stage's candidates counted with the trained Refiner's tokenizer, as sampled."""
    sample = None
    candidates = ctx.path("sample")
    if candidates.exists():
        sample = dataset_rates(read_dataset(candidates, "candidates"))
    grpo = train_history_rates(trained["history"], trained.get("completions_per_step", 0))
    return refiner_runs(sample, grpo, reward, records)
