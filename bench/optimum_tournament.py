"""Would the Stackelberg optimum win games? The exact follower's best speech, played. A probe.

    python bench/optimum_tournament.py [--game werewolf] [--seeds 300] [--views own,full]
        [--format addition|speech] [--camps village,werewolf] [--out F]

Every seat plays ``scripted_sampled``, the players the exact follower is. Under
``optimum-VIEW``, each speech of the tested camp that has a follower is replaced by its best
rewrite under the exact follower (terms only). In the addition format, that is the planned
speech plus the one grammar sentence that moves the next speaker furthest toward the labels,
or nothing added where no sentence helps. In the speech format, it is the best single
grammar sentence, or the planned speech if none beats it.

The labels come from the scripted labeler (k = 3). Under ``own`` they come from the speaker's
own view, which is what configs/persuasion.yaml trains on. Under ``full`` they use full
information, the game's truth, which is what the camp's win needs. No model runs, so this is
the ceiling of a Refiner trained on that reward, said with the grammar's words. The
conditions play the same seeds as the plain players, so the games are paired.

Prints, per camp and condition, the win rate and the paired difference from the plain
players, with its bootstrap 95% interval and McNemar's exact p.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import _project_root  # noqa: F401  (the project importable from the root)

from stackelberg.agents.base import Agent
from stackelberg.agents.runner import Table, derived_rng, play_tables
from stackelberg.agents.scripted import sampled_agent
from stackelberg.evaluation.tournament import camp_seats, game_summary
from stackelberg.evaluation.tournament_stats import paired_tests, win_rates
from stackelberg.games import game_spec, make_game
from stackelberg.games.base import SPEAK
from stackelberg.persuasion.best_of import live_view
from stackelberg.persuasion.exact_follower import (
    ExactFollower,
    exact_parts,
    speaker_sentences,
    terms,
)
from stackelberg.persuasion.intents import LabelSettings, scripted_labels
from stackelberg.persuasion.measurer import ScoreSettings
from stackelberg.persuasion.reward import best_index

KIND = "scripted_sampled"
FIRST_SEED = 100_000  # the evaluate stage's tournament_seed
VIEWS = {"own": False, "full": True}
#: the tables of configs/persuasion.yaml (Avalon at 5 players)
OPTIONS = {"avalon": {"n_players": 5}}


class OptimumSpeaker(Agent):
    """``scripted_sampled`` whose speeches with a follower say the exact follower's best
    rewrite (module docstring); its label draws come from a stream of their own, so that the
    player beneath plays as it does unwrapped on the seed."""

    def __init__(self, game: str, full_information: bool, output_format: str) -> None:
        self.inner = sampled_agent(game)
        self.label = LabelSettings(k=3, full_information=full_information)
        self.output_format = output_format
        self.follower = ExactFollower()
        self.score = ScoreSettings()
        self.changed = self.speeches = 0

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self.inner.setup(game, player, rng)
        self.rng = derived_rng(rng, "optimum")

    def take_notes(self) -> list[tuple[str, str]]:
        return self.inner.take_notes()

    def seat_facts(self) -> dict[str, Any]:
        return self.inner.seat_facts()

    def act(self, decision) -> Any:
        follower = self.game.next_speaker() if decision.kind == SPEAK else None
        action = self.inner.act(decision)
        if decision.kind != SPEAK or follower is None:
            return action
        self.speeches += 1
        view = live_view(self.game, self.player, follower, action)
        labels = scripted_labels(view, self.label, self.rng.randrange(2**31))
        if not labels.complete(self.label.k):
            return action
        said = [s for s in speaker_sentences(view) if s != action]
        if self.output_format == "addition":
            said = [f"{action} {s}" for s in said]
        speeches = [action, *said]
        parts = exact_parts(
            self.follower, view, speeches, labels.desired, labels.undesired, self.score
        )
        best = speeches[best_index([terms(p) for p in parts])]  # ties: the planned speech
        self.changed += best != action
        return best


def play(game: str, seeds: range, camps: list[str], views: list[str], output_format: str):
    """Every (camp, condition, seed) game, the plain players' and each view's optimum."""
    jobs = [
        (condition, camp, seed, seats)
        for camp in camps
        for condition in (KIND, *(f"optimum-{v}" for v in views))
        for seed in seeds
        if (seats := camp_seats(game, seed, camp, OPTIONS.get(game)))
    ]
    tables = []
    for condition, _, seed, seats in jobs:
        table = make_game(game, OPTIONS.get(game))
        agents = [
            OptimumSpeaker(game, VIEWS[condition.removeprefix("optimum-")], output_format)
            if condition != KIND and pid in seats
            else sampled_agent(game)
            for pid in range(len(table.reset(seed).players))
        ]
        tables.append(Table(table, agents, seed))
    play_tables(tables, None)
    records, said = [], {}
    for (condition, camp, _, seats), t in zip(jobs, tables, strict=True):
        records.append(game_summary(t, condition, camp, KIND, seats))
        for agent in t.agents:
            if isinstance(agent, OptimumSpeaker):
                counts = said.setdefault(condition, [0, 0])
                counts[0] += agent.changed
                counts[1] += agent.speeches
    return records, said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="werewolf", choices=["werewolf", "avalon", "onuw"])
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--views", default="own,full")
    parser.add_argument("--format", default="addition", choices=["addition", "speech"])
    parser.add_argument("--camps", help="comma-separated; default: the game's two main camps")
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    views = args.views.split(",")
    if args.seeds < 1 or not set(views) <= set(VIEWS):
        print(f"optimum_tournament: --seeds >= 1; --views of {', '.join(VIEWS)}", file=sys.stderr)
        return 2
    camps = args.camps.split(",") if args.camps else list(game_spec(args.game).tested_camps)
    start = time.perf_counter()
    records, said = play(
        args.game, range(FIRST_SEED, FIRST_SEED + args.seeds), camps, views, args.format
    )
    result = {
        "game": args.game,
        "format": args.format,
        "seeds": [FIRST_SEED, FIRST_SEED + args.seeds - 1],
        "win_rates": win_rates(records),
        "paired": paired_tests(records, [(KIND, f"optimum-{v}") for v in views]),
        "changed_speeches": {c: {"changed": a, "speeches": b} for c, (a, b) in said.items()},
        "wall_s": round(time.perf_counter() - start, 1),
    }
    for test in result["paired"]:
        print(
            f"{args.game} {args.format} {test['camp']:>10}: {test['base']} "
            f"{test['base_rate']:.3f} -> {test['treated']} {test['treated_rate']:.3f}  diff "
            f"{test['diff']:+.3f} [{test['ci'][0]:+.3f}, {test['ci'][1]:+.3f}]  gained "
            f"{test['c']} lost {test['b']}  McNemar p {test['p_value']:.3g}  (n {test['n']})"
        )
    print(json.dumps({"wall_s": result["wall_s"], "changed": result["changed_speeches"]}))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
