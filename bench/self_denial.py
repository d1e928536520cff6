"""Does a speaker's word on itself move the scripted listeners? (Werewolf)

    python bench/self_denial.py [--kind scripted|scripted_sampled] [--seeds 200]

Every werewolf adds "Player <me> is not a werewolf." to each of its speeches; the others
are plain players of ``--kind``. Prints the wolves' win rate without and with the added
sentence over the same seeds, and the paired games gained and lost. A listener that
credits such a self-denial like a third party's word is easy to persuade for the wrong
reason; the scripted listeners give it no weight.
"""

from __future__ import annotations

import argparse
import sys

import _project_root  # noqa: F401  (the project importable from the root)

from stackelberg.agents import make_agent
from stackelberg.agents.base import Agent
from stackelberg.agents.runner import play_game
from stackelberg.games import make_game


class SelfDenial(Agent):
    """X, with "Player <me> is not a werewolf." after each of its speeches."""

    def __init__(self, inner: Agent) -> None:
        self.inner = inner
        self.kind = inner.kind

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self.inner.setup(game, player, rng)

    def act(self, decision):
        action = self.inner.act(decision)
        if decision.options is None:  # a speech
            return f"{action} Player {self.player + 1} is not a werewolf."
        return action


def wolves_win(kind: str, seeds: int, deny: bool) -> list[bool]:
    out = []
    for seed in range(seeds):
        deal = make_game("werewolf", {})
        deal.reset(seed)
        agents = [
            SelfDenial(make_agent(kind, "werewolf"))
            if deny and p.team == "werewolf"
            else make_agent(kind, "werewolf")
            for p in deal.players
        ]
        record = play_game(make_game("werewolf", {}), agents, seed)
        out.append(record["result"]["winner"] == "werewolf")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", default="scripted", choices=["scripted", "scripted_sampled"])
    ap.add_argument("--seeds", type=int, default=200)
    args = ap.parse_args(argv)
    plain = wolves_win(args.kind, args.seeds, deny=False)
    denied = wolves_win(args.kind, args.seeds, deny=True)
    gained = sum(d and not p for p, d in zip(plain, denied, strict=True))
    lost = sum(p and not d for p, d in zip(plain, denied, strict=True))
    n = args.seeds
    print(
        f"{args.kind}: wolves win {100 * sum(plain) / n:.1f}% -> {100 * sum(denied) / n:.1f}% "
        f"with the self-denial; paired games gained {gained}, lost {lost} (n={n})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
