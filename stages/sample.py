"""sample: n candidates per train instance from the untrained Refiner (the reward landscape
GRPO starts from); the base utterance is kept as candidate -1 so it is scored alongside."""

from __future__ import annotations

from stackelberg.agents.refiner import Candidate
from stackelberg.datasets import (
    NothingToWorkWithError,
    batches,
    from_rows,
    labeled_split,
    seed_of,
    write_dataset,
)
from stackelberg.persuasion.candidates import dataset_rates, sample_candidates


def plan(ctx) -> list[dict]:
    # The train split: the candidates GRPO starts from. The held-out split is sampled by
    # the evaluate stage, before and after training.
    train = labeled_split(ctx.path("label"), "train", "sample candidates for")
    return batches(train, ctx.section.batch_instances)


def work(ctx, item) -> dict:
    rows, views = ctx.instances("intents", item["ids"])
    seeds = [seed_of(r["instance_id"]) for r in rows]
    samples = sample_candidates(
        ctx.llm("refiner"), views, ctx.params.refiner_profile(ctx.game), ctx.section.n, seeds
    )
    out = []
    for row, cands in zip(rows, samples, strict=True):
        base = row["base_utterance"]
        out.append(_row(row, -1, "base", Candidate(base, base, True, True)))
        out += [_row(row, i, "refiner", c) for i, c in enumerate(cands)]
    return out


def _row(row, index, source, candidate: Candidate) -> dict:
    return {
        "instance_id": row["instance_id"],
        "candidate_index": index,
        "source": source,
        "refiner_output": candidate.raw,
        "candidate": candidate.utterance,
        "parsed": candidate.parsed,
        "ended": candidate.ended,  # end-of-sequence or stop before max_new_tokens
    }


def finish(ctx, results) -> dict:
    rows = [r for chunk in results for r in chunk]
    df = from_rows(rows, "candidates")
    refined = df.filter(df["source"] == "refiner")
    n = refined.height
    # The follower reads the parsed utterance (score.candidate_text): with none parsed, every
    # candidate is a fallback; with the raw completion read, parsing is a rate only.
    reads_parsed = ctx.params.for_game("score", ctx.game).candidate_text == "parsed"
    if n and reads_parsed and not refined["parsed"].any():
        answer = NothingToWorkWithError.quote(refined["refiner_output"][0])
        raise NothingToWorkWithError(
            f"refiner {ctx.params.models.refiner.model}: none of its {n} candidates parsed as "
            f"sample.output_format {ctx.section.output_format}; one answer: {answer}"
        )
    write_dataset(df, ctx.path(), "candidates")
    rates = dataset_rates(df)
    return {
        "candidates": n,
        "parse_rate": rates["parse_rate"],
        # the share of completions that ended (end-of-sequence or stop) before max_new_tokens
        "ended_rate": rates["ended_rate"],
        "mean_words": refined["candidate"].str.split(" ").list.len().mean() if n else 0.0,
    }
