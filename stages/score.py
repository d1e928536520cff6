"""score: the Measurer reward of every sampled candidate (and of the base utterance), with its
parts."""

from __future__ import annotations

import polars as pl

from stackelberg.datasets import batches, from_rows, labeled_split, read_dataset, write_dataset
from stackelberg.persuasion.candidates import dataset_candidates
from stackelberg.persuasion.measurer import ensemble_names, measure_completions

#: the Measurer's computed contexts stay for the grpo stage, which runs next and scores the
#: same train instances' contexts (an instance's context does not depend on its candidates)
KEEP_PREFIXES = ("measurer",)


def plan(ctx) -> list[dict]:
    # The sample stage's candidates: the train split (evaluate scores the held-out one).
    train = labeled_split(ctx.path("label"), "train", "score")
    return batches(train, ctx.section.batch_instances)


def work(ctx, item) -> list[dict]:
    rows, views = ctx.instances("intents", item["ids"])
    cands = read_dataset(ctx.path("sample"), "candidates").filter(
        pl.col("instance_id").is_in(item["ids"])
    )
    settings = ctx.section
    llm = ctx.measurer()
    members = ensemble_names(llm)
    room = ctx.params.refiner_profile(ctx.game).token_limit  # a candidate's room
    out = []
    for row, view in zip(rows, views, strict=True):
        mine = cands.filter(pl.col("instance_id") == row["instance_id"]).sort("candidate_index")
        _, parts, cut = measure_completions(
            llm, row, view, dataset_candidates(mine), settings, room
        )
        for c, p in zip(mine.iter_rows(named=True), parts, strict=True):
            d = p.as_dict()
            out.append(
                {
                    "instance_id": c["instance_id"],
                    "candidate_index": c["candidate_index"],
                    "source": c["source"],
                    "candidate": c["candidate"],
                    **{
                        k: d[k]
                        for k in (
                            "reward",
                            "positive",
                            "negative",
                            "raw",
                            "clamped",
                            "length_penalty",
                            "format_penalty",
                            "words",
                        )
                    },
                    **{k: list(d[k]) for k in ("pos_means", "neg_means", "pos_sums", "neg_sums")},
                    "variant": settings.terms,  # score.terms, in a column of its older name
                    "aggregation": settings.aggregation,
                    "history_cut": cut,
                    "members": members,
                    "member_rewards": list(p.member_rewards),
                }
            )
    return out


def finish(ctx, results) -> dict:
    df = from_rows([r for chunk in results for r in chunk], "scores")
    write_dataset(df, ctx.path(), "scores")
    base = df.filter(pl.col("source") == "base")["reward"]
    refined = df.filter(pl.col("source") == "refiner")["reward"]
    cut = df.group_by("instance_id").agg(pl.col("history_cut").first())["history_cut"]
    return member_means(df) | {
        "scored": df.height,
        "reward_mean.refiner": refined.mean() if refined.len() else float("nan"),
        "reward_std.refiner": refined.std() if refined.len() > 1 else float("nan"),
        "reward_mean.base": base.mean() if base.len() else float("nan"),
        "prompts_cut": int((cut > 0).sum()),
    }


def member_means(df: pl.DataFrame) -> dict[str, float]:
    """An ensemble Measurer's members: each one's mean reward of the Refiner's candidates
    (``reward_mean.refiner.NAME``; one model: none)."""
    rows = df.filter(pl.col("source") == "refiner")
    if rows.is_empty() or not rows["members"][0].len():
        return {}
    names = rows["members"][0].to_list()
    rewards = rows["member_rewards"].to_list()
    return {
        f"reward_mean.refiner.{name}": sum(r[i] for r in rewards) / len(rewards)
        for i, name in enumerate(names)
    }
