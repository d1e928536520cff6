"""Ground truth for persuasion: the Stackelberg optimum and the LLM Measurer held against it.

    python bench/ground_truth.py [--games werewolf,avalon,onuw] [--seeds 8] [--instances 24]
        [--measurer embedded --measurer embedded-gemma3] [--out ground_truth.json]

Plays seeded games of ``--agents`` (default ``scripted_sampled``: the followers the exact
follower is), takes their speech turns as instances (at most ``--instances`` per game,
drawn with a fixed seed) and labels each with the scripted labeler (k=3, full
information), as the default pipeline does. Then, per game, with each reward's terms only
(``clamped``: no length or format penalty):

- the Stackelberg optimum: every speech of the speaker's grammar (each sentence and each
  pair, ``persuasion.exact_follower.grammar_speeches``) scored under the exact follower;
  the headroom is the best speech's reward minus the base speech's;
- for each ``--measurer`` (a local model), its rewards of the grammar's one-sentence
  speeches beside the exact follower's (``evaluation.ground_truth.rank_agreement``, as the
  evaluate stage holds the Measurer against the exact follower on held-out candidates):
  over the instances where the exact follower does not score every sentence alike, the
  rank correlation within an instance, how often the Measurer's best sentence is an exact
  best one, and the exact gain of its pick over the instance's mean sentence as a share of
  the best sentence's (a ratio of means); each with a bootstrap 95% interval.

Prints one table per measure and writes them all as JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

import _project_root  # noqa: F401  (the project importable from the root)
import numpy as np

from stackelberg.agents import make_agent
from stackelberg.agents.runner import Table, play_tables
from stackelberg.agents.scripted import OPINION_GAMES
from stackelberg.evaluation.ground_truth import rank_agreement, without_nan
from stackelberg.evaluation.held_out import interval
from stackelberg.games import make_game
from stackelberg.llm import LLMConfig, make_llm
from stackelberg.persuasion.context import instance_view, speech_instances
from stackelberg.persuasion.exact_follower import (
    ExactFollower,
    exact_parts,
    optimum,
    speaker_sentences,
    terms,
)
from stackelberg.persuasion.measurer import ScoreSettings, measure
from stackelberg.persuasion.truth import scripted_intents


def instances(
    game: str, agents: str, seeds: int, limit: int, first: int = 0, full_information: bool = True
) -> list[tuple]:
    """(view, desired, undesired) of the labeled speech turns of ``seeds`` games, seeded
    from ``first`` on, labeled from ``full_information`` or the speaker's own view."""
    tables = []
    for seed in range(first, first + seeds):
        probe = make_game(game, {})
        probe.reset(seed)
        tables.append(
            Table(make_game(game, {}), [make_agent(agents, game) for _ in probe.players], seed)
        )
    out = []
    for table, record in zip(tables, play_tables(tables), strict=True):
        record_json = json.dumps(record)
        for row in speech_instances(record, table.speech_turns, 3):
            view = instance_view(record_json, row)
            desired, undesired = scripted_intents(view, 3, full_information, True, row["seed"])
            if desired and undesired:
                out.append((view, desired, undesired))
    random.Random(f"ground-truth:{game}").shuffle(out)
    return out[:limit]


def at_least_one(text: str) -> int:
    """An argparse type: a whole number of 1 or more (a bad one is argparse's one-line error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return value


def summary(values) -> dict:
    return interval(list(values), 2000, 0)


def fmt(part: dict) -> str:
    if not part["n"] or part["estimate"] is None:
        return "-"
    lo, hi = part["ci"]
    return f"{part['estimate']:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", default=",".join(OPINION_GAMES))
    ap.add_argument("--agents", default="scripted_sampled")
    ap.add_argument("--seeds", type=int, default=8, help="games played per game")
    ap.add_argument("--instances", type=int, default=24, help="instances per game, at most")
    ap.add_argument("--measurer", action="append", default=[], help="a local model (repeat)")
    ap.add_argument("--singles", action="store_true", help="optimum over single sentences only")
    ap.add_argument("--out", default="ground_truth.json")
    args = ap.parse_args(argv)
    games = [g.strip() for g in args.games.split(",") if g.strip()]
    if bad := [g for g in games if g not in OPINION_GAMES]:
        sys.exit(f"ground_truth: no exact follower for {bad[0]}; choose from {OPINION_GAMES}")
    exact, settings = ExactFollower(), ScoreSettings()
    models = {m: make_llm(LLMConfig(model=m)) for m in args.measurer}
    report: dict = {"temperature": exact.temperature, "games": {}}
    for game in games:
        t0 = time.time()
        rows = instances(game, args.agents, args.seeds, args.instances)
        found = [optimum(exact, v, d, u, settings, pairs=not args.singles) for v, d, u in rows]
        single = [optimum(exact, v, d, u, settings, pairs=False) for v, d, u in rows]
        out = {
            "instances": len(rows),
            "base": summary(o.base_reward for o in found),
            "optimum": summary(o.reward for o in found),
            "headroom": summary(o.headroom for o in found),
            "headroom_single": summary(o.headroom for o in single),
            "speeches_per_instance": float(np.mean([o.speeches for o in found])),
            "examples": [
                {"base": v.base_utterance, "best": o.speech, "headroom": o.headroom}
                for (v, _, _), o in list(zip(rows, found, strict=True))[:5]
            ],
            "measurers": {},
        }
        print(
            f"{game}: {len(rows)} instances, headroom {fmt(out['headroom'])} "
            f"(one sentence {fmt(out['headroom_single'])}), {time.time() - t0:.1f} s",
            flush=True,
        )
        for name, llm in models.items():
            t1 = time.time()
            scored = []
            for view, desired, undesired in rows:
                speeches = speaker_sentences(view)
                truth = exact_parts(exact, view, speeches, desired, undesired, settings)
                parts, _ = measure(llm, view, speeches, desired, undesired, settings)
                scored.append([(terms(m), terms(e)) for m, e in zip(parts, truth, strict=True)])
            agreement = rank_agreement(scored, 2000, 0)
            out["measurers"][name] = agreement | {"seconds": time.time() - t1}
            print(
                f"  {name}: rank correlation {fmt(agreement['rank_correlation'])} over "
                f"{agreement['rank_correlation']['n']} instances, same best "
                f"{fmt(agreement['same_best'])}, its pick's share of the best sentence's gain "
                f"{fmt(agreement['pick_share'])} ({time.time() - t1:.0f} s)",
                flush=True,
            )
        report["games"][game] = out
        with open(args.out, "w") as fh:  # written as each game ends: nothing lost if killed
            json.dump(without_nan(report), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
