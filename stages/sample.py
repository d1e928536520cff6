"""sample: n candidates per instance from the untrained Refiner (the reward landscape before
training); the base utterance is kept as candidate -1 so it is scored alongside."""

from __future__ import annotations

from stackelberg.agents.refiner import ended_before_limit
from stackelberg.datasets import from_rows, read_dataset, write_dataset
from stackelberg.persuasion.candidates import SampleSettings, sample_candidates
from stages._data import batches, rows_and_views, seed_of, settings_from


def sample_settings(section) -> SampleSettings:
    return settings_from(SampleSettings, section)


def plan(ctx) -> list[dict]:
    return batches(read_dataset(ctx.path("label"), "intents"), ctx.section.batch_instances)


def work(ctx, item) -> dict:
    rows, views = rows_and_views(ctx, "intents", item["ids"])
    seeds = [seed_of(r["instance_id"]) for r in rows]
    samples = sample_candidates(ctx.llm("refiner"), views, sample_settings(ctx.section), seeds)
    out = []
    for row, cands in zip(rows, samples, strict=True):
        base = row["base_utterance"]
        out.append(_row(row, -1, "base", base, base, True))
        out += [_row(row, i, "refiner", c.raw, c.utterance, c.parsed) for i, c in enumerate(cands)]
    # Completions that ended (end-of-sequence or stop) before max_new_tokens, by their tokens.
    ended = sum(c.ended for cands in samples for c in cands)
    return {"rows": out, "ended": ended}


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
    rows = [r for chunk in results for r in chunk["rows"]]
    df = from_rows(rows, "candidates")
    write_dataset(df, ctx.path(), "candidates")
    refined = df.filter(df["source"] == "refiner")
    n = refined.height
    return {
        "candidates": n,
        "parse_rate": refined["parsed"].mean() if n else 0.0,
        # the share of completions that ended (end-of-sequence or stop) before max_new_tokens
        "ended_rate": sum(chunk["ended"] for chunk in results) / n if n else 0.0,
        "mean_words": refined["candidate"].str.split(" ").list.len().mean() if n else 0.0,
    }


def candidate_rates(llm, candidates, settings: SampleSettings) -> dict[str, float]:
    """The Refiner-output rates of a written candidates dataset (``refiner`` rows): its
    completions, the share that ended before the limit (their tokens counted with ``llm``'s
    tokenizer, as at sampling) and the share that parsed."""
    refined = candidates.filter(candidates["source"] == "refiner")
    n = refined.height
    ended = sum(
        ended_before_limit(llm, raw, settings.max_new_tokens) for raw in refined["refiner_output"]
    )
    return {
        "completions": n,
        "ended_rate": ended / n if n else 0.0,
        "parse_rate": float(refined["parsed"].mean()) if n else 0.0,
    }


if __name__ == "__main__":
    from stages._cli import stage_main

    stage_main("sample")
