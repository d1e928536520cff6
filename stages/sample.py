"""sample: n candidates per instance from the untrained Refiner (the reward landscape before
training); the base utterance is kept as candidate -1 so it is scored alongside."""

from __future__ import annotations

from stackelberg.datasets import from_rows, read_dataset, write_dataset
from stackelberg.persuasion.candidates import SampleSettings, sample_candidates
from stages._data import batches, rows_and_views, seed_of, settings_from


def sample_settings(section) -> SampleSettings:
    return settings_from(SampleSettings, section)


def plan(ctx) -> list[dict]:
    return batches(read_dataset(ctx.path("label"), "intents"), ctx.section.batch_instances)


def work(ctx, item) -> list[dict]:
    rows, views = rows_and_views(ctx, "intents", item["ids"])
    seeds = [seed_of(r["instance_id"]) for r in rows]
    samples = sample_candidates(ctx.llm("refiner"), views, sample_settings(ctx.section), seeds)
    out = []
    for row, cands in zip(rows, samples, strict=True):
        base = row["base_utterance"]
        out.append(_row(row, -1, "base", base, base, True))
        out += [_row(row, i, "refiner", raw, c, ok) for i, (raw, c, ok) in enumerate(cands)]
    return out


def _row(row, index, source, raw, candidate, parsed) -> dict:
    return {
        "instance_id": row["instance_id"],
        "candidate_index": index,
        "source": source,
        "refiner_output": raw,
        "candidate": candidate,
        "parsed": parsed,
    }


def finish(ctx, results) -> dict:
    rows = [r for chunk in results for r in chunk]
    df = from_rows(rows, "candidates")
    write_dataset(df, ctx.path(), "candidates")
    refined = df.filter(df["source"] == "refiner")
    return {
        "candidates": refined.height,
        "parse_rate": refined["parsed"].mean() if refined.height else 0.0,
        "mean_words": refined["candidate"].str.split(" ").list.len().mean()
        if refined.height
        else 0.0,
    }


if __name__ == "__main__":
    from stages._cli import stage_main

    stage_main("sample")
