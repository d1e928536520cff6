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
  speeches beside the exact follower's, over the instances where the exact follower does
  not score every sentence alike: the rank correlation within an instance (mean and
  bootstrap 95% interval over instances), how often both pick the same best sentence, and
  the exact reward the Measurer's pick gains over the base speech as a share of what the
  best sentence gains (ratio of means over instances).

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
from scipy.stats import spearmanr

from stackelberg.agents import make_agent
from stackelberg.agents.runner import Table, play_tables
from stackelberg.agents.scripted import OPINION_GAMES
from stackelberg.evaluation.stats import bootstrap_mean_ci
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


def instances(game: str, agents: str, seeds: int, limit: int) -> list[tuple]:
    """(view, desired, undesired) of the labeled speech turns of ``seeds`` games."""
    tables = []
    for seed in range(seeds):
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
            desired, undesired = scripted_intents(view, 3, True, True, row["seed"])
            if desired and undesired:
                out.append((view, desired, undesired))
    random.Random(f"ground-truth:{game}").shuffle(out)
    return out[:limit]


def interval(values) -> dict:
    ci = bootstrap_mean_ci(list(values))
    return {"mean": ci.estimate, "low": ci.low, "high": ci.high, "n": ci.n}


def fmt(ci: dict) -> str:
    return f"{ci['mean']:+.3f} [{ci['low']:+.3f}, {ci['high']:+.3f}]"


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
            "base": interval(o.base_reward for o in found),
            "optimum": interval(o.reward for o in found),
            "headroom": interval(o.headroom for o in found),
            "headroom_single": interval(o.headroom for o in single),
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
            rhos, same, gained, reach = [], [], [], []
            for (view, desired, undesired), best in zip(rows, single, strict=True):
                speeches = speaker_sentences(view)
                truth = [
                    terms(p)
                    for p in exact_parts(exact, view, speeches, desired, undesired, settings)
                ]
                parts, _ = measure(llm, view, speeches, desired, undesired, settings)
                model = [terms(p) for p in parts]
                if len(set(truth)) == 1:  # the follower is indifferent: nothing to rank
                    continue
                if len(set(model)) > 1:
                    rhos.append(float(spearmanr(truth, model).statistic))
                pick = int(np.argmax(model))
                same.append(float(truth[pick] == max(truth)))
                gained.append(truth[pick] - best.base_reward)
                reach.append(best.headroom)
            share = float(np.mean(gained) / np.mean(reach)) if np.mean(reach) else float("nan")
            out["measurers"][name] = {
                "instances": len(same),
                "rank_correlation": interval(rhos),
                "same_best": float(np.mean(same)),
                "pick_share_of_optimum": share,
                "seconds": time.time() - t1,
            }
            print(
                f"  {name}: rank correlation {fmt(out['measurers'][name]['rank_correlation'])}, "
                f"same best {np.mean(same):.0%}, its pick reaches {share:.0%} of the "
                f"one-sentence headroom ({time.time() - t1:.0f} s)",
                flush=True,
            )
        report["games"][game] = out
        with open(args.out, "w") as fh:  # written as each game ends: nothing lost if killed
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
