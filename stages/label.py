"""label: K desired and K undesired follower responses per instance (intent identification);
with ``label.both_views``, also from the other view (full information or the speaker's own)."""

from __future__ import annotations

from stackelberg.datasets import (
    NothingToWorkWithError,
    batches,
    from_rows,
    read_dataset,
    seed_of,
    write_dataset,
)
from stackelberg.llm import LLMConfig
from stackelberg.params import draw_model
from stackelberg.persuasion.intents import (
    OTHER_DESIRED,
    OTHER_UNDESIRED,
    SCRIPTED,
    Dropped,
    label_views,
)


def plan(ctx) -> list[dict]:
    df = read_dataset(ctx.path("select"), "instances")
    if df.is_empty():
        raise NothingToWorkWithError(f"{ctx.path('select')}: no instances to label")
    return batches(df, ctx.section.batch_instances)


def work(ctx, item) -> dict:
    rows, views = ctx.instances("instances", item["ids"])
    s = ctx.section
    # Each instance's game draws its labeler (a list of models), as self-play draws players;
    # the scripted scheme loads no model at all.
    by_model: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        key = (
            SCRIPTED
            if s.scheme == SCRIPTED
            else draw_model(ctx.params.models.labeler, row["seed"]).model_dump_json()
        )
        by_model.setdefault(key, []).append(i)
    labels: list = [None] * len(rows)
    labeler_of: list[str] = [""] * len(rows)
    dropped: dict[str, Dropped] = {}  # per labeler, checked in finish over all batches
    for key, idx in by_model.items():
        config = None if key == SCRIPTED else LLMConfig.model_validate_json(key)
        got = label_views(
            ctx.model(config) if config else None,
            [views[i] for i in idx],
            s,
            [seed_of(rows[i]["instance_id"]) for i in idx],
        )
        labeler = config.model if config else SCRIPTED
        dropped[labeler] = Dropped.of(got, s.k)
        for i, lab in zip(idx, got, strict=True):
            labels[i], labeler_of[i] = lab, labeler
    kept = [
        {
            **row,
            "desired": lab.desired,
            "undesired": lab.undesired,
            # the other view's (label.both_views), else null
            OTHER_DESIRED: lab.other.desired if lab.other else None,
            OTHER_UNDESIRED: lab.other.undesired if lab.other else None,
            "label_attempts": lab.total_attempts,
            "labeler_model": labeler,
        }
        for row, lab, labeler in zip(rows, labels, labeler_of, strict=True)
        if lab.complete(s.k)
    ]
    return {
        "rows": kept,
        "total": len(rows),
        "attempts": sum(lab.total_attempts for lab in labels),
        "dropped": dropped,
    }


def finish(ctx, results) -> dict:
    dropped: dict[str, Dropped] = {}
    for res in results:
        for labeler, batch in res["dropped"].items():
            dropped[labeler] = dropped.get(labeler, Dropped()) + batch
    for labeler, tally in dropped.items():
        tally.check(labeler, ctx.section)
    rows = [r for res in results for r in res["rows"]]
    total = sum(res["total"] for res in results)
    write_dataset(from_rows(rows, "intents"), ctx.path(), "intents")
    return {
        "instances": total,
        "labeled": len(rows),
        "dropped": total - len(rows),
        "parse_rate": len(rows) / total if total else 0.0,
        "mean_attempts": sum(res["attempts"] for res in results) / max(total, 1),
    }
