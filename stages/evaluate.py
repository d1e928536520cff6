"""evaluate: the trained Refiner against the untrained one, and agents with and without it.

The work items: the held-out Measurer reward (test instances; n candidates from each
Refiner; paired by instance), and the win-rate tournaments by camp, a batch of tables each
(X and refiner+X on the same seeds; a scored game, Sotopia, reports its dimensions instead,
scored by its rules or, with the game option ``evaluator: llm``, by models.labeler).
Writes reports/GAME/metrics.json (DVC metrics) and PNG plots, logs to MLflow. ``rl_ins``
seats play with the tactics stage's policy (models/tactics/onuw), handed to them on the
``tactics`` route; ``strategist`` seats with the strategist stage's value model
(models/strategist/avalon), on the ``strategist`` route; ``lspo`` seats with the lspo stage's
policy (models/lspo/werewolf), on the ``lspo`` route.
"""

from __future__ import annotations

import json
from collections import Counter
from contextlib import nullcontext
from itertools import zip_longest

from stackelberg.agents import LLM_AGENT_KINDS
from stackelberg.agents.latent.cfr import load_policy as load_lspo_policy
from stackelberg.agents.lookahead.value import load_value
from stackelberg.agents.lspo import LSPO_ROUTE, LSPOAgent
from stackelberg.agents.rl_ins import TACTICS_ROUTE, RLInstructedAgent
from stackelberg.agents.strategist import STRATEGIST_ROUTE, StrategistAgent
from stackelberg.agents.tactics.policy import load_policy
from stackelberg.datasets import of_split, read_dataset, seed_of
from stackelberg.evaluation.ablation import VARIANT_KEY
from stackelberg.evaluation.held_out import candidate_record, held_out_details, instance_means
from stackelberg.evaluation.judge import judge_tournament
from stackelberg.evaluation.metrics import game_metrics, mlflow_metrics
from stackelberg.evaluation.plots import (
    plot_reward_curve,
    plot_reward_distribution,
    plot_scores,
    plot_win_rates,
)
from stackelberg.evaluation.tournament import matrix_games, parse_condition, play_matrix
from stackelberg.io import atomic_writer
from stackelberg.llm import LLMConfig
from stackelberg.llm.local.threads import BackgroundLane
from stackelberg.params import draw_model
from stackelberg.persuasion.candidates import dataset_rates, output_rates, sample_candidates
from stackelberg.persuasion.measurer import measure
from stackelberg.progress import progress
from stackelberg.training.grpo import TRAIN_HISTORY, VARIANTS
from stackelberg.training.grpo import output_rates as training_rates
from stackelberg.viewer import Entry, render_pages, write_pages

METRICS = "metrics.json"
HELD_OUT = "held_out_reward"
#: the route of a scored game's LLM evaluator among ``tournament_routes``
JUDGE = "judge"
RL_INS = RLInstructedAgent.kind
#: the viewer pages of a few tournament games, beside the metrics
VIEWER_FOLDER = "games"
#: held-out candidates' seeds: the instance's seed plus this times (evaluate.seed + 1), apart
#: from the seeds the sample stage draws for the same instance
CANDIDATE_SEED_STRIDE = 7_919
#: what the metrics keep of a held-out instance (its examples, its responses)
HELD_OUT_ROW = ("instance_id", "base_utterance", "desired", "undesired")


def refiner_config(ctx, trained: bool, variant: str | None = None) -> LLMConfig:
    """The Refiner as tournaments play it (``evaluate.refiner_dtype``), untrained or with this
    game's trained adapter beside its weights (``variant``: the one trained on that other
    reward variant, ``grpo.variants``): the held-out reward compares them as they play."""
    dtype = ctx.section.refiner_dtype
    adapter = ctx.path("grpo") / VARIANTS / variant if variant else ctx.path("grpo")
    update = ({"adapter": str(adapter)} if trained else {}) | (
        {"dtype": dtype} if dtype != "auto" else {}
    )
    return ctx.params.models.refiner.model_copy(update=update)


def plan(ctx) -> list[dict]:
    """The held-out reward with the first batch of tournament tables, then the other
    batches of ``batch_games`` tables (each a work item, played with its LLM calls batched;
    on a cluster, items run in parallel). In the first item the Measurer scores the held-out
    candidates beside the tables (``held_out_beside_tournament``)."""
    p = ctx.section
    games = len(tournament_games(ctx)) if p.tournament_games else 0
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
        return held_out_reward(ctx)
    return held_out_beside_tournament(ctx, slice(*item["tables"]))


def tournament_games(ctx) -> list:
    """Every game of the tournaments (``matrix_games``), in the order they are played."""
    p = ctx.section
    return matrix_games(ctx.game, p.conditions, tournament_seeds(ctx), p.camps or None, p.options)


def tournament_seeds(ctx) -> range:
    p = ctx.section
    return range(p.tournament_seed, p.tournament_seed + p.tournament_games)


def held_out_reward(ctx) -> dict:
    """The held-out Measurer reward of both Refiners, one after the other."""
    sampled = held_out_samples(ctx)
    return held_out_scores(ctx, held_out_measurer(ctx), sampled)


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
    measurer = held_out_measurer(ctx, also=(refiner_config(ctx, trained=True),))
    routes = tournament_routes(ctx, keep=("measurer",))
    store = getattr(measurer, "prefix_store", None)
    if any(
        route is measurer or (store is not None and getattr(route, "prefix_store", None) is store)
        for route in routes.values()
    ):
        return tournaments(ctx, part, routes) | held_out_scores(ctx, measurer, sampled)
    with store.own_budget() if store is not None else nullcontext():
        with BackgroundLane(held_out_scores, ctx, measurer, sampled) as lane:
            played = tournaments(ctx, part, routes)
        return played | lane.join()


def held_out_samples(ctx) -> dict:
    """The test instances and the Refiners' candidates for them, sampled before the
    Measurer loads (``{}`` without test instances): ``pool``, the untrained Refiner's
    (its first ``n`` are the "before" group; best-of-k picks among its first k), ``after``,
    the trained one's, and ``variants``, those of the Refiners trained on other reward
    variants (``grpo.variants``)."""
    p = ctx.section
    df = of_split(read_dataset(ctx.path("label"), "intents"), "test")
    if df.is_empty():
        return {}
    rows, views = ctx.instances("intents", df["instance_id"].to_list())
    # Every Refiner prompted and stopped as the trained one plays.
    settings = ctx.params.refiner_sampling(ctx.game).model_copy(update={"n": p.n})
    seeds = [seed_of(r["instance_id"]) + CANDIDATE_SEED_STRIDE * (p.seed + 1) for r in rows]
    variants = ctx.params.for_game("grpo", ctx.game).variants
    out = {"rows": rows, "views": views, "room": settings.max_new_tokens, "variants": {}}
    # The Refiners sample first, beside the players only: the Measurer and the Refiner base
    # left by earlier stages (one copy in float32, two when the Measurer has its own dtype)
    # make room for loading the Refiners' base (read in float32, then int8; the trained
    # ones run their adapter beside the same weights), and the Measurer comes back after.
    configs = {"pool": refiner_config(ctx, False), "after": refiner_config(ctx, True)}
    configs |= {v: refiner_config(ctx, True, v) for v in variants}
    ctx.release_models("player", "labeler", also=tuple(configs.values()))
    pool = settings.model_copy(update={"n": max([p.n, *p.best_of])})
    for name, config in configs.items():
        cands = sample_candidates(
            ctx.model(config), views, pool if name == "pool" else settings, seeds
        )
        (out["variants"] if name in variants else out)[name] = cands
    out["before_outputs"] = output_rates([c for cands in out["pool"] for c in cands[: p.n]])
    out["after_outputs"] = output_rates([c for cands in out["after"] for c in cands])
    return out


def held_out_measurer(ctx, also: tuple[LLMConfig, ...] = ()):
    """The Measurer, loaded once both Refiners have sampled: what loading them freed (the
    base's float32 weights before int8) goes back first (the stage's peak memory); ``also``
    stays loaded (the trained Refiner, for tables that play next)."""
    ctx.release_models("measurer", "player", "labeler", also=also)
    return ctx.llm("measurer")


def held_out_scores(ctx, measurer, sampled: dict) -> dict:
    """Each instance's mean reward per Refiner ("before": the untrained Refiner's first
    ``n``), the Refiners' output rates, and every candidate's record under the Measurer and,
    with ``models.unseen_follower``, under that follower too (``held_out.held_out_details``
    reads them). All candidates of an instance in one call per follower: one context,
    computed once."""
    if not sampled:
        return {"before": [], "after": []}
    n = ctx.section.n
    out = {f"{g}_outputs": sampled[f"{g}_outputs"] for g in ("before", "after")}
    out["rows"] = [{k: r[k] for k in HELD_OUT_ROW} for r in sampled["rows"]]
    out["scored"] = {"measurer": score_held_out(ctx, measurer, sampled, "Measurer")}
    unseen = ctx.params.models.unseen_follower
    if unseen is not None:
        out["scored"]["unseen"] = score_held_out(ctx, ctx.model(unseen), sampled, "unseen follower")
        out["scored"]["unseen_model"] = unseen.model
    records = out["scored"]["measurer"]
    out["before"] = instance_means([c[:n] for c in records["pool"]])
    out["after"] = instance_means(records["after"])
    return out


def score_held_out(ctx, follower, sampled: dict, what: str) -> dict:
    """Every held-out candidate's record (``held_out.candidate_record``) under ``follower``,
    by group (``pool``, ``after``, ``variants``), per instance."""
    score = ctx.params.for_game("score", ctx.game)
    groups = {g: sampled[g] for g in ("pool", "after")} | {
        f"variants/{v}": c for v, c in sampled["variants"].items()
    }
    out: dict = {g: [] for g in groups}
    bar = progress(len(sampled["rows"]), f"evaluate@{ctx.game} held-out, {what}", "instance")
    for i, (row, view) in enumerate(zip(sampled["rows"], sampled["views"], strict=True)):
        cands = [(g, c) for g in groups for c in groups[g][i]]
        texts = score.texts([c.raw for _, c in cands], [c.utterance for _, c in cands])
        parts, _ = measure(
            follower, view, texts, row["desired"], row["undesired"], score, sampled["room"]
        )
        for g in groups:
            out[g].append([])
        for (g, c), text, part in zip(cands, texts, parts, strict=True):
            out[g][-1].append(candidate_record(text, c.parsed, part))
        bar.update(1)
    bar.close()
    variants = {g.split("/", 1)[1]: out.pop(g) for g in list(out) if g.startswith("variants/")}
    return out | {"variants": variants}


def tournament_routes(ctx, keep: tuple[str, ...] = ()) -> dict:
    """What the tables play with, by route: the players' models, the trained Refiner, the
    policies of the tactics, strategist and lspo stages. Loaded after every other model
    but those of ``keep`` (roles) is dropped: the held-out reward's untrained Refiner
    leaves room for the tables."""
    p = ctx.section
    trained_refiner = refiner_config(ctx, trained=True)
    ctx.release_models("player", "labeler", *keep, also=(trained_refiner,))
    played = {parse_condition(c) for c in (*p.conditions, p.opponent)}
    routes = {}
    if any(kind in LLM_AGENT_KINDS for kind, _ in played):  # only the models seats play with
        routes = {
            key: ctx.model(LLMConfig.model_validate_json(key)) for key in seat_models(ctx).values()
        }
    if any(refined for _, refined in played):
        routes["refiner"] = ctx.model(trained_refiner)
    kinds = {kind for kind, _ in played}
    if RL_INS in kinds:
        routes[TACTICS_ROUTE] = load_policy(ctx.path("tactics"))  # the tactics stage's
    if StrategistAgent.kind in kinds:
        routes[STRATEGIST_ROUTE] = load_value(ctx.path("strategist"))  # the strategist stage's
    if LSPOAgent.kind in kinds:
        routes[LSPO_ROUTE] = load_lspo_policy(ctx.path("lspo"))  # the lspo stage's
    if judged(ctx):  # a scored game's LLM evaluator: models.labeler (a list: one model drawn)
        routes[JUDGE] = ctx.model(draw_model(ctx.params.models.labeler, p.tournament_seed))
    return routes


def seat_models(ctx) -> dict[int, str]:
    """Each seed's players' model (drawn per seed, the same for every condition: pairs stay
    paired), as the config's JSON."""
    return {
        s: draw_model(ctx.params.models.player, s).model_dump_json() for s in tournament_seeds(ctx)
    }


def judged(ctx) -> bool:
    return (ctx.section.options or {}).get("evaluator") == "llm"


def tournaments(ctx, part: slice, routes: dict | None = None) -> dict:
    """The games ``part`` of the tournaments (``routes``: ``tournament_routes``', loaded
    here when not given). The first ``viewer_games`` of each condition keep their game
    record: among them are the games of this part that ``finish`` picks for viewer pages,
    from the whole tournament."""
    p = ctx.section
    routes = dict(tournament_routes(ctx) if routes is None else routes)
    judge = routes.pop(JUDGE, None)
    trained = ctx.params.for_game("grpo", ctx.game)
    refiner = ctx.params.refiner_sampling(ctx.game)
    seeds = tournament_seeds(ctx)
    model_of_seed = seat_models(ctx)
    records = play_matrix(
        ctx.game,
        p.conditions,
        seeds,
        camps=p.camps or None,
        opponent=p.opponent,
        llm_routes=routes,
        route_of_seed=model_of_seed.get,
        agent_options=p.agent_options(),
        # The Refiner plays as it was trained: its prompt (and its budget, sample's, not the
        # players'), completion limit, stop, sampling.
        refiner_options={
            "max_prompt_tokens": refiner.max_prompt_tokens,
            "style": refiner.style,
            "temperature": trained.temperature,
            "top_p": trained.top_p,
        },
        options=p.options,
        batch_games=p.batch_games,
        keep_games=True,  # a few become viewer pages; a scored game's LLM evaluator reads them
        part=part,
    )
    if judge is not None:
        # Seeded per character by its place in the whole tournament, as if judged at once.
        first = part.start * len(records[0]["players"])
        counts = judge_tournament(judge, records, seed=p.seed + first)
    kept = Counter()
    for r in records:
        kept[r["condition"]] += 1
        if kept[r["condition"]] > p.viewer_games:
            del r["game_record"]
    return {"records": records} | ({"judge": counts} if judge is not None else {})


def viewer_picks(records: list[dict], n: int) -> list[int]:
    """Indices of ``n`` games to show: the first game of each condition, then the second
    of each, and so on, so that X and refiner+X sit side by side."""
    by_condition: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        by_condition.setdefault(r["condition"], []).append(i)
    rounds = zip_longest(*by_condition.values())
    return [i for row in rounds for i in row if i is not None][:n]


def write_viewer_pages(ctx, viewed: list[dict]) -> None:
    """A few tournament games as static pages (reports/GAME/games, an index of none without
    tournaments: the stage's output always exists), logged to MLflow."""
    import mlflow

    entries = [Entry(v["record"], json.dumps(v["record"]), v["label"]) for v in viewed]
    folder = write_pages(
        render_pages(entries, f"evaluate@{ctx.game}", reveal=True), ctx.path() / VIEWER_FOLDER
    )
    if entries:
        mlflow.log_artifacts(str(folder), VIEWER_FOLDER)


def finish(ctx, results) -> dict:
    import mlflow

    p = ctx.section
    reward = results[0]  # the first item's: the held-out reward (and the first tables)
    records = [r for part in results for r in part.get("records", [])]
    viewed = [
        {
            "record": records[i]["game_record"],
            "label": f"{records[i]['condition']}, {records[i]['camp']}",
        }
        for i in viewer_picks(records, p.viewer_games)
    ]
    for r in records:
        r.pop("game_record", None)
    write_viewer_pages(ctx, viewed)
    from stackelberg.training.prompt_rewards import step_prompt_rewards

    trained = json.loads((ctx.path("grpo") / TRAIN_HISTORY).read_text())
    history = trained["history"]
    prompt_rewards = step_prompt_rewards(trained)  # None: trained before they were kept
    metrics = game_metrics(
        records,
        reward["before"],
        reward["after"],
        resamples=p.bootstrap,
        seed=p.seed,
        game=ctx.game,
        refiner_outputs=refiner_outputs(ctx, reward, trained, records),
        step_rewards=prompt_rewards,
    )
    if reward.get("scored"):
        metrics["held_out"] = held_out_details(
            reward["rows"], reward["scored"], p.n, p.best_of, p.examples, p.bootstrap, p.seed
        )
    out = ctx.path()
    plots = out / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    curve = {h.get("step", i): h["reward"] for i, h in enumerate(history, 1) if "reward" in h}
    rise = (metrics["training"] or {}).get("reward_rise")
    plot_reward_curve(curve, plots / "reward_curve.png", prompt_rewards, rise)
    plot_reward_distribution(reward["before"], reward["after"], plots / "reward_distribution.png")
    if records and metrics.get("scores"):
        plot_scores(metrics, plots / "scores.png")
    elif records:
        plot_win_rates(metrics, plots / "win_rates.png")
    with atomic_writer(out / METRICS) as fh:
        json.dump(metrics, fh, indent=1)
    for png in sorted(plots.glob("*.png")):
        mlflow.log_artifact(str(png), "plots")
    mlflow.log_artifact(str(out / METRICS))
    flat = mlflow_metrics(metrics)
    mlflow.log_metrics(flat)
    # The reward ablation (evaluation.ablation) finds this run by the variant it trained on.
    mlflow.set_tag(VARIANT_KEY, ctx.params.for_game("score", ctx.game).variant)
    r = metrics["reward"] or {}
    return {
        "games_played": len(records),
        "reward_before": (r.get("before") or {}).get("estimate", float("nan")),
        "reward_after": (r.get("after") or {}).get("estimate", float("nan")),
    }


def refiner_outputs(ctx, reward: dict, trained: dict, records: list[dict]) -> dict[str, dict]:
    """The Refiner-output rates (completions, ended before the token limit, parsed) of this
    game's Refiner runs: the sample stage's candidates, GRPO training (TRL's clipped ratio
    and the reward's parse rate per step), the held-out candidates before and after, and
    the trained Refiner's speeches in the tournaments."""
    out = {}
    candidates = ctx.path("sample")
    if candidates.exists():
        limit = ctx.params.for_game("sample", ctx.game).max_new_tokens
        df = read_dataset(candidates, "candidates")
        # counted by the trained Refiner, loaded already: the base's tokenizer, no reload
        out["sample"] = dataset_rates(ctx.model(refiner_config(ctx, True)), df, limit)
    out["grpo"] = training_rates(trained["history"], trained.get("completions_per_step", 0))
    for name in ("before", "after"):
        if f"{name}_outputs" in reward:
            out[f"held_out_{name}"] = reward[f"{name}_outputs"]
    if refined := sum(r.get("refined", 0) for r in records):
        out["tournament"] = {
            "completions": refined,
            "ended_rate": sum(r.get("refiner_ended", 0) for r in records) / refined,
            "parse_rate": sum(r.get("refiner_parsed", 0) for r in records) / refined,
        }
    return out
