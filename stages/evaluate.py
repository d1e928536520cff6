"""evaluate: the trained Refiner against the untrained one, and agents with and without it.

Work items: the held-out reward (the Refiners' candidates for the test instances, scored by
the Measurer, the unseen follower and the exact follower), beside the first batch of
tournament tables, then the other batches. Which models play which seat is
``evaluation.routes``' (trained baselines, ``bestN+X``, the joint and extra Refiners); the
work is the library's (``held_out_scoring``, ``tournament``, ``game_outputs``). This module
picks the models, frees memory between them, and writes reports/GAME: metrics.json (DVC
metrics), plots, viewer pages, and the MLflow run.
"""

from __future__ import annotations

import json

from stackelberg.agents.refiner import RefinerProfile
from stackelberg.datasets import of_split, read_dataset, seed_of
from stackelberg.evaluation.game_outputs import (
    evaluation_metrics,
    training_curves,
    write_evaluation,
)
from stackelberg.evaluation.held_out_scoring import (
    TRAINED,
    UNTRAINED,
    BehaviourRun,
    candidate_seeds,
    held_out_reward,
    sample_held_out,
    scored_beside,
)
from stackelberg.evaluation.judge import judge_tournament
from stackelberg.evaluation.routes import JUDGE
from stackelberg.evaluation.routes import tournament_routes as play_routes
from stackelberg.evaluation.tournament import (
    batch_items,
    best_of_played,
    drop_game_records,
    play_matrix,
)
from stackelberg.llm import LLMConfig
from stackelberg.params import draw_model
from stackelberg.persuasion.exact_follower import exact_follower_for
from stackelberg.persuasion.intents import SCRIPTED
from stackelberg.training.grpo_outputs import (
    EXTRA,
    JOINT_REFINER,
    TRAIN_HISTORY,
    WARM_START_REFINER,
)
from stackelberg.training.warm_start import warm_start_adapter
from stackelberg.viewer import render_pages, tournament_entries, write_pages

HELD_OUT = "held_out_reward"
#: the viewer pages of a few tournament games, beside the metrics
VIEWER_FOLDER = "games"


def refiner_profile(ctx, trained: bool, extra: str | None = None) -> RefinerProfile:
    """The Refiner as it runs, untrained or with a trained adapter: the game's own, an
    ``extra`` one (``GRPOSettings.extra_refiners``), the joint one (``joint``) or the warm
    start alone (``warm_start``)."""
    if extra == JOINT_REFINER:
        adapter = ctx.path("grpo_joint")
    elif extra == WARM_START_REFINER:
        adapter = ctx.path("warm_start")
    else:
        adapter = ctx.path("grpo") / EXTRA / extra if extra else ctx.path("grpo")
    return ctx.params.refiner_profile(ctx.game, adapter if trained else None)


def plan(ctx) -> list[dict]:
    """The held-out reward with the first batch of tournament tables (the Measurer scores
    beside the tables: ``held_out_beside_tournament``), then the other batches."""
    items = batch_items(len(ctx.section.games(ctx.game)), ctx.section.batch_games)
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


def held_out_beside_tournament(ctx, part: slice) -> dict:
    """The held-out reward and the tournament games ``part``: the Refiners sample first,
    then the Measurer scores their candidates while the tables play (``scored_beside``)."""
    sampled = held_out_samples(ctx)
    if not sampled:
        return tournaments(ctx, part) | held_out_scores(ctx, None, sampled)
    measurer = held_out_measurer(ctx, also=(refiner_profile(ctx, trained=True).model,))
    return scored_beside(
        measurer,
        tournament_routes(ctx, keep=("measurer",)),
        lambda: held_out_scores(ctx, measurer, sampled),
        lambda routes: tournaments(ctx, part, routes),
    )


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
    if warm_start_adapter(ctx.path("warm_start")):  # the warm start alone, before GRPO
        extra = [*extra, WARM_START_REFINER]
    # The Refiners sample first, beside the players only: the Measurer leaves room for
    # loading their base (read in float32, then int8), and comes back after.
    refiners = {UNTRAINED: refiner_profile(ctx, False), TRAINED: refiner_profile(ctx, True)}
    refiners |= {name: refiner_profile(ctx, True, name) for name in extra}
    ctx.release_models("player", "labeler", also=tuple(r.model for r in refiners.values()))
    seeds = candidate_seeds([seed_of(r["instance_id"]) for r in rows], p.seed)
    return sample_held_out(ctx.model, refiners, extra, rows, views, p.n, p.best_of, seeds)


def held_out_measurer(ctx, also: tuple[LLMConfig, ...] = ()):
    """The Measurer, once the Refiners have sampled; ``also`` stays loaded (the trained
    Refiner, for tables that play next)."""
    ctx.release_models("measurer", "player", "labeler", also=also)
    return ctx.measurer()


def held_out_scores(ctx, measurer, sampled: dict) -> dict:
    """The held-out reward (``held_out_reward``): the Measurer's, the unseen follower's and
    the exact follower's records, the followers' judged responses (``BehaviourRun``)."""
    config, label = ctx.params.models.unseen_follower, ctx.params.for_game("label", ctx.game)
    unseen = None if config is None else (lambda: ctx.model(config), config.model)
    labeler = draw_model(ctx.params.models.labeler, ctx.section.seed)  # an LLM judge's
    judge = None if label.scheme == SCRIPTED else (lambda: ctx.model(labeler))
    return held_out_reward(
        sampled,
        ctx.section.n,
        ctx.params.for_game("score", ctx.game),
        f"evaluate@{ctx.game}",
        measurer,
        unseen=unseen,
        behaviour=BehaviourRun.of(
            ctx.section.behaviour, ctx.params.models.measurer, measurer, unseen, judge
        ),
        best_of=ctx.section.best_of,
        exact=exact_follower_for(ctx.game, label.scheme),
        other_view=label.other_view().view if label.both_views else None,
    )


def tournament_routes(ctx, keep: tuple[str, ...] = ()) -> dict:
    """What the tables play with, by route (``routes.tournament_routes``), loaded once every
    model but those of ``keep`` (roles) and a ``bestN+X`` speaker's is dropped."""
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
        judge=draw_model(ctx.params.models.labeler, p.tournament_seed) if judged else None,
        untrained_refiner=untrained_refiner,
        measurer=ctx.params.models.measurer,
        named_refiner=lambda name: refiner_profile(ctx, True, name).model,  # refiner-NAME+X
    )


def seat_models(ctx) -> dict[int, str]:
    """Each seed's players' model (drawn per seed, the same for every condition: pairs stay
    paired), as the config's JSON."""
    return {
        s: draw_model(ctx.params.models.player, s).model_dump_json() for s in ctx.section.seeds()
    }


def tournaments(ctx, part: slice, routes: dict | None = None) -> dict:
    """The games ``part`` of the tournaments (``routes``: ``tournament_routes``' if not
    given); each condition's first ``viewer_games`` keep their record, for viewer pages."""
    p = ctx.section
    routes = dict(tournament_routes(ctx) if routes is None else routes)
    judge = routes.pop(JUDGE, None)
    records = play_matrix(
        ctx.game,
        **p.matrix(),
        llm_routes=routes,
        route_of_seed=seat_models(ctx).get,
        # The Refiner plays as it runs everywhere; a best-of speaker labels and scores as
        # the label and score stages do.
        refiner=ctx.params.refiner_profile(ctx.game),
        best_of_options=ctx.params.best_of_options(ctx.game),
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
    folder = write_pages(
        render_pages(entries, f"evaluate@{ctx.game}", reveal=True), ctx.path() / VIEWER_FOLDER
    )
    if entries:  # an index of none without tournaments: the stage's output always exists
        mlflow.log_artifacts(str(folder), VIEWER_FOLDER)
    trained = json.loads((ctx.path("grpo") / TRAIN_HISTORY).read_text())
    curves = training_curves(trained, lambda: read_dataset(ctx.path("score"), "scores"))
    sample = ctx.path("sample")
    candidates = read_dataset(sample, "candidates") if sample.exists() else None
    own_view = ctx.params.for_game("label", ctx.game).view
    transfer = {"joint": ctx.params.grpo.joint, "game": ctx.game, "own_view": own_view}
    metrics = evaluation_metrics(
        records, reward, trained, curves, candidates, p, ctx.game, transfer
    )
    terms = ctx.params.for_game("score", ctx.game).terms
    write_evaluation(ctx.path(), metrics, trained, curves, reward, terms)
    r = metrics["reward"] or {}
    before, after = ((r.get(k) or {}).get("estimate", float("nan")) for k in ("before", "after"))
    return {"games_played": len(records), "reward_before": before, "reward_after": after}
