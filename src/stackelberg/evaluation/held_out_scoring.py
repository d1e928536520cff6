"""The held-out reward's work: the Refiners' candidates for the test instances, then every
candidate's record under the Measurer (and, under an unseen follower, those its tables read).

The Refiners sample first, each prompted and stopped as the trained one plays; the followers
score after, all candidates of an instance in one call (one context, computed once). The
records (``held_out.candidate_record``) are what metrics.json's paired reward and
``held_out.held_out_details`` read. With ``evaluate.behaviour.responses``, the followers
then respond to the candidates and a judge reads their responses (``behaviour``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from stackelberg.evaluation.behaviour import behaviour_followers, follower_behaviour
from stackelberg.evaluation.ground_truth import optimum_record
from stackelberg.evaluation.held_out import best_of_choice, candidate_record, instance_means
from stackelberg.llm.local.threads import BackgroundLane
from stackelberg.persuasion.candidates import output_rates, sample_candidates
from stackelberg.persuasion.exact_follower import ExactFollower, optimum
from stackelberg.persuasion.intents import other_view_row
from stackelberg.persuasion.measurer import (
    MEMBER_REFINER_PREFIX,
    ensemble_names,
    measure_completions,
    measurer_backends,
)
from stackelberg.progress import progress

#: held-out candidates' seeds: the instance's seed plus this stride times (evaluate.seed + 1),
#: so that they differ from the seeds the sample stage draws for the same instance and from
#: one evaluate seed to the next (7919, the 1000th prime, an arbitrary choice: a new value
#: would change every held-out candidate)
CANDIDATE_SEED_STRIDE = 7_919
#: what the metrics keep of a held-out instance (its examples, its responses)
HELD_OUT_ROW = ("instance_id", "base_utterance", "desired", "undesired")
#: the Refiners' candidates in ``sample_held_out``'s result: the untrained Refiner's (its
#: first ``n`` the "before" group, best-of-k picks among its first k) and the trained one's
UNTRAINED, TRAINED = "pool", "after"


def scored_beside(
    measurer: Any,
    routes: Mapping[str, Any],
    score: Callable[[], dict],
    play: Callable[[Mapping[str, Any]], dict],
) -> dict:
    """``play(routes) | score()``, the Measurer's ``score`` in a ``BackgroundLane`` while the
    tables ``play``: a tournament decodes a token at a time for a few tables, which leaves
    most of the second core idle, and the Measurer's forward passes use it. Each side keeps
    its own prompt-prefix blocks, so neither changes what the other computes. A Measurer that
    the tables also use (one backend, or one store) scores after them instead."""
    backends = measurer_backends(measurer)
    stores = {id(s): s for b in backends if (s := getattr(b, "prefix_store", None)) is not None}
    if any(
        route is b or id(getattr(route, "prefix_store", None)) in stores
        for route in routes.values()
        for b in backends
    ):
        return play(routes) | score()
    with ExitStack() as budgets:  # each store (an ensemble: each member's) on its own
        for store in stores.values():
            budgets.enter_context(store.own_budget())
        with BackgroundLane(score) as lane:
            played = play(routes)
        return played | lane.join()


def candidate_seeds(instance_seeds: Sequence[int], seed: int) -> list[int]:
    """The sampling seed of each held-out instance's candidates (``evaluate.seed``: ``seed``)."""
    return [s + CANDIDATE_SEED_STRIDE * (seed + 1) for s in instance_seeds]


def sample_held_out(
    load: Callable[[Any], Any],
    refiners: Mapping[str, Any],
    extra: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
    views: Sequence[Any],
    n: int,
    best_of: Sequence[int],
    seeds: Sequence[int],
) -> dict[str, Any]:
    """The held-out instances (``rows``, their ``views``) and each Refiner's candidates for
    them: ``refiners`` maps ``UNTRAINED``, ``TRAINED`` and each name of ``extra`` (the extra
    Refiners and the joint one, trained beside the game's own, kept under ``extra``) to its
    profile, its model loaded with ``load`` in that order. Each samples ``n`` candidates as
    it runs, the untrained one max(n, ``best_of``). Also the output rates of the "before"
    and "after" candidates."""
    out: dict[str, Any] = {
        "rows": rows,
        "views": views,
        "room": refiners[TRAINED].token_limit,
        "extra": {},
    }
    for name, profile in refiners.items():
        count = max([n, *best_of]) if name == UNTRAINED else n
        cands = sample_candidates(load(profile.model), views, profile, count, seeds)
        (out["extra"] if name in extra else out)[name] = cands
    out["before_outputs"] = output_rates([c for cands in out[UNTRAINED] for c in cands[:n]])
    out["after_outputs"] = output_rates([c for cands in out[TRAINED] for c in cands])
    return out


@dataclass(frozen=True)
class BehaviourRun:
    """What the behaviour check needs: its settings, who responds (key, model, loader:
    ``behaviour.behaviour_followers``) and the judge (None: the scripted labeler's rule; else
    the LLM labeler's backend)."""

    settings: Any  # evaluate.behaviour (evaluation.settings.BehaviourSettings)
    followers: list[tuple[str, str, Callable[[], Any]]]
    judge: Any = None

    @classmethod
    def of(
        cls,
        settings: Any,
        measurer_entry: Any,
        measurer: Any,
        unseen: tuple[Callable[[], Any], str] | None,
        judge: Callable[[], Any] | None,
    ) -> BehaviourRun | None:
        """The check ``settings`` ask for (None without responses): the Measurer
        (``measurer_entry``: its params entry; a list is an ensemble, whose members
        respond) and the unseen follower respond; ``judge`` loads the LLM judge (None: the
        scripted labeler's rule)."""
        if not settings.responses:
            return None
        model = getattr(measurer_entry, "model", "ensemble")
        followers = behaviour_followers(settings.followers, measurer, model, unseen)
        return cls(settings, followers, None if judge is None else judge())


def score_candidates(follower: Any, sampled: Mapping[str, Any], score: Any, desc: str) -> dict:
    """Every held-out candidate's record (``held_out.candidate_record``) under ``follower``,
    by group (``UNTRAINED``, ``TRAINED``, ``extra``), per instance; ``score``: the score
    stage's settings, ``desc``: the progress bar's."""
    groups = {g: sampled[g] for g in (UNTRAINED, TRAINED)} | {
        f"extra/{name}": c for name, c in sampled["extra"].items()
    }
    out: dict = {g: [] for g in groups}
    bar = progress(len(sampled["rows"]), desc, "instance")
    for i, (row, view) in enumerate(zip(sampled["rows"], sampled["views"], strict=True)):
        cands = [(g, c) for g in groups for c in groups[g][i]]
        texts, parts, _ = measure_completions(
            follower, row, view, [c for _, c in cands], score, sampled["room"]
        )
        for g in groups:
            out[g].append([])
        for (g, c), text, part in zip(cands, texts, parts, strict=True):
            out[g][-1].append(candidate_record(text, c.parsed, part))
        bar.update(1)
    bar.close()
    extra = {g.split("/", 1)[1]: out.pop(g) for g in list(out) if g.startswith("extra/")}
    return out | {"extra": extra}


def held_out_reward(
    sampled: Mapping[str, Any],
    n: int,
    score: Any,
    label: str,
    measurer: Any,
    unseen: tuple[Callable[[], Any], str] | None = None,
    behaviour: BehaviourRun | None = None,
    best_of: Sequence[int] = (),
    exact: Any = None,
    other_view: str | None = None,
) -> dict[str, Any]:
    """Each instance's mean reward per Refiner ("before": the untrained Refiner's first
    ``n``), the Refiners' output rates, and every candidate's record under the Measurer and,
    with ``unseen`` (a loader of that follower and its model's name), the records a table
    reads under the unseen follower too (``unseen_subset``); ``label`` names the run in
    progress bars (``evaluate@GAME``). With ``behaviour``, each follower's judged responses
    to the candidates (``behaviour``). With ``exact`` (the instances' exact follower,
    ``exact_follower_for``), every candidate's record under it and each instance's
    Stackelberg optimum (``optima``; ``evaluation.ground_truth``). With ``other_view``
    (``label.both_views``: the other view's name), the information table's candidates
    scored against that view's intents too (``score_other_view``)."""
    if not sampled:
        return {"before": [], "after": []}
    out: dict[str, Any] = {f"{g}_outputs": sampled[f"{g}_outputs"] for g in ("before", "after")}
    out["rows"] = [{k: r[k] for k in HELD_OUT_ROW} for r in sampled["rows"]]
    desc = f"{label} held-out"
    out["scored"] = {"measurer": score_candidates(measurer, sampled, score, f"{desc}, Measurer")}
    out["scored"]["members"] = ensemble_names(measurer)
    if unseen is not None:
        load, model = unseen
        kept = pool_kept(out["scored"]["measurer"][UNTRAINED], n, best_of)
        records = score_candidates(
            load(), unseen_subset(sampled, kept), score, f"{desc}, unseen follower"
        )
        out["scored"]["unseen"] = records | {UNTRAINED: in_pool(records[UNTRAINED], kept)}
        out["scored"]["unseen_model"] = model
    if behaviour is not None and behaviour.settings.responses:
        out["scored"]["behaviour"] = responses(sampled, n, score, behaviour, desc)
    if exact is not None:
        out["scored"]["exact"] = (
            out["scored"]["measurer"]  # the exact follower is the Measurer: scored already
            if type(measurer) is ExactFollower
            else score_candidates(exact, sampled, score, f"{desc}, exact follower")
        )
        out["optima"] = [
            optimum_record(*optimum(exact, view, row["desired"], row["undesired"], score))
            for row, view in zip(sampled["rows"], sampled["views"], strict=True)
        ]
    if other_view is not None:
        out["scored"]["other_view"] = score_other_view(
            measurer, sampled, n, other_view, score, f"{desc}, {other_view} intents"
        )
    records = out["scored"]["measurer"]
    out["before"] = instance_means([c[:n] for c in records[UNTRAINED]])
    out["after"] = instance_means(records[TRAINED])
    return out


def pool_kept(
    pool: Sequence[Sequence[Mapping[str, Any]]], n: int, best_of: Sequence[int]
) -> list[list[int]]:
    """Per instance, the untrained Refiner's candidates a table reads beside the Measurer's:
    its first ``n`` (the "before" group) and the Measurer's pick of each best-of-k."""
    picks = [best_of_choice(pool, k) for k in best_of]
    return [
        sorted(set(range(min(n, len(cands)))) | {p[i] for p in picks})
        for i, cands in enumerate(pool)
    ]


def unseen_subset(sampled: Mapping[str, Any], kept: Sequence[Sequence[int]]) -> dict[str, Any]:
    """What the unseen follower scores: the untrained Refiner's ``kept`` candidates, the
    trained one's, and the member Refiners, trained against one ensemble member (the ensemble
    table reads them under every follower); not the rest of the best-of pool, nor the other
    extra Refiners, which no table reads under it: in the study's Werewolf and Avalon at most 10
    of an instance's 20 candidates (the follower's time)."""
    extra = sampled["extra"]
    return {
        **sampled,
        UNTRAINED: [[c[i] for i in k] for c, k in zip(sampled[UNTRAINED], kept, strict=True)],
        "extra": {r: c for r, c in extra.items() if r.startswith(MEMBER_REFINER_PREFIX)},
    }


def in_pool(
    records: Sequence[Sequence[Mapping[str, Any]]], kept: Sequence[Sequence[int]]
) -> list[list[Any]]:
    """The kept candidates' records back at their places in the pool (None where not
    scored), so that the best-of picks index both followers' pools alike."""
    out = []
    for recs, k in zip(records, kept, strict=True):
        row: list[Any] = [None] * (max(k) + 1 if k else 0)
        for i, rec in zip(k, recs, strict=True):
            row[i] = rec
        out.append(row)
    return out


def responses(
    sampled: Mapping[str, Any], n: int, score: Any, behaviour: BehaviourRun, desc: str
) -> dict[str, Any]:
    """Per follower (``behaviour.followers``): its model and the judged responses to each
    Refiner's candidates ("before": the untrained Refiner's first ``n``)."""
    groups = {
        "before": [c[:n] for c in sampled[UNTRAINED]],
        "after": sampled[TRAINED],
        **sampled["extra"],
    }
    out = {}
    for key, model, load in behaviour.followers:
        verdicts = follower_behaviour(
            load(),
            sampled,
            groups,
            score,
            behaviour.settings,
            behaviour.judge,
            f"{desc}, {key} responds",
        )
        out[key] = {"model": model, "verdicts": verdicts}
    return out


def score_other_view(
    follower: Any,
    sampled: Mapping[str, Any],
    n: int,
    other_view: str,
    score: Any,
    desc: str,
) -> dict:
    """``score_candidates`` against the other view's intents (``label.both_views``; each
    row's ``other_desired`` and ``other_undesired``), for the Refiners of the 2x2
    information table only: the untrained one's first ``n`` candidates, the game's own
    Refiner and the one trained on the other view (``other_view``, among ``extra`` when it
    was trained)."""
    extra = sampled["extra"]
    subset = {
        **sampled,
        "rows": [other_view_row(r) for r in sampled["rows"]],
        UNTRAINED: [c[:n] for c in sampled[UNTRAINED]],
        "extra": {other_view: extra[other_view]} if other_view in extra else {},
    }
    return score_candidates(follower, subset, score, desc)
