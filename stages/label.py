"""label: K desired and K undesired follower responses per instance (intent identification)."""

from __future__ import annotations

from stackelberg.datasets import from_rows, read_dataset, write_dataset
from stackelberg.persuasion.intents import LabelSettings, label_views
from stages._data import batches, rows_and_views, seed_of, settings_from


def settings(ctx) -> LabelSettings:
    return settings_from(LabelSettings, ctx.section)


def plan(ctx) -> list[dict]:
    df = read_dataset(ctx.path("select"), "instances")
    return batches(df, ctx.section.batch_instances)


def work(ctx, item) -> dict:
    rows, views = rows_and_views(ctx, "instances", item["ids"])
    s = settings(ctx)
    labels = label_views(ctx.llm("backend"), views, s, [seed_of(r["instance_id"]) for r in rows])
    kept = [
        {**row, "desired": lab.desired, "undesired": lab.undesired, "label_attempts": lab.attempts}
        for row, lab in zip(rows, labels, strict=True)
        if lab.complete(s.k)
    ]
    return {"rows": kept, "total": len(rows), "attempts": sum(lab.attempts for lab in labels)}


def finish(ctx, results) -> dict:
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


if __name__ == "__main__":
    from stages._cli import stage_main

    stage_main("label")
