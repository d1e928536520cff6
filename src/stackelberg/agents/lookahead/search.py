"""The strategist's search: a determinized lookahead over the legal options of a move.

For each of ``k`` role assignments drawn from the seat's belief, the public game is replayed
on a fresh engine dealt that assignment (speeches, proposals, revealed votes; each quest's
Fail cards given to its first evil members), with a scripted player on every seat, the
seat's own included; the hidden actions since the last public event (the votes and quest
cards before the seat's) are the scripted players'. Each option is then played forward on
its own replay, the scripted players acting for everyone (the seat too, after its option),
to the end of the team cycle: the next discussion or the end of the game. A finished game is worth 1 or
0 to the seat's camp; any other leaf is valued by the learned value (``value.ValueModel``)
from the seat's scripted bookkeeping there. Options are ranked by their mean over the
assignments, which every option shares (with the same random streams of the players, so
options differ only by what they do; replaying is cheaper than copying a game). No LLM call; the same seed gives the same choice.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stackelberg.agents.lookahead.belief import Roles
from stackelberg.agents.lookahead.value import ValueModel
from stackelberg.agents.scripted.avalon import AvalonScripted
from stackelberg.games.avalon import EVIL, ROLE_TEAM, Avalon
from stackelberg.games.base import SPEAK, Game

#: what the seat says in a simulation: no claim, so no listener moves on words never said
NEUTRAL_SPEECH = "I have no strong read yet."
#: a simulated cycle never needs more decisions than this (a guard, not a budget)
MAX_STEPS = 200
#: public event types a replay feeds to the engine (the rest it logs itself)
REPLAYED = ("speech", "propose", "vote", "quest", "assassinate")


@dataclass
class World:
    """A simulated game and its scripted players, one per seat."""

    game: Avalon
    agents: list[AvalonScripted]

    def play(self, me: int, forced_team: tuple[int, ...] | None = None) -> None:
        """One decision by its scripted player (the seat speaks ``NEUTRAL_SPEECH``; a
        ``forced_team`` is proposed instead of the leader's own pick when legal)."""
        d = self.game.decision()
        if d.kind == SPEAK and d.player == me:
            action: Any = NEUTRAL_SPEECH
        elif d.kind == "propose" and forced_team in d.options:
            action = forced_team
        else:
            action = self.agents[d.player].act(d)
        self.game.step(action)


def replay(game: Game, me: int, roles: Roles, seed: str) -> World | None:
    """The public game so far on an engine dealt ``roles``, up to ``me``'s pending decision;
    None when it cannot be replayed so (the assignment does not fit what happened)."""
    sim = Avalon(game.config)
    sim.reset(game.seed or 0, list(roles))
    agents = [AvalonScripted() for _ in roles]
    for pid, agent in enumerate(agents):
        agent.setup(sim, pid, random.Random(f"{seed}:{pid}"))
    events = [e for e in game.visible_events(me) if e.type in REPLAYED]
    i = 0
    while i < len(events):
        d, ev = sim.decision(), events[i]
        if d is None:
            return None
        if d.kind == "vote":
            block = {}
            while i < len(events) and events[i].type == "vote":
                block[events[i].player] = events[i].data["approve"]
                i += 1
            if len(block) != len(roles):
                return None
            for _ in roles:
                sim.step(block[sim.decision().player])
            continue
        if d.kind == "quest":
            if ev.type != "quest" or not replay_quest(sim, ev.data["fails"]):
                return None
        elif d.kind == "assassinate":
            if ev.type == "assassinate" and ev.player == d.player:
                if ev.data["target"] not in d.options:
                    return None  # this Assassin could not have named that player
                sim.step(ev.data["target"])
            elif None in d.options:
                sim.step(None)  # the Assassin kept its attempt (seen by the Assassin only)
                continue
            else:
                return None
        elif ev.type == "speech" and d.kind == SPEAK and ev.player == d.player:
            sim.step(ev.data["text"])
        elif ev.type == "propose" and d.kind == "propose" and ev.player == d.player:
            sim.step(tuple(ev.data["team"]))
        else:
            return None
        i += 1
    return World(sim, agents)


def replay_quest(sim: Avalon, fails: int) -> bool:
    """Play the quest under way with ``fails`` Fail cards, from its first evil members."""
    team = sim.team
    evil = [p for p in team if ROLE_TEAM[sim.players[p].role] == EVIL]
    if fails > len(evil):
        return False
    failing = set(evil[:fails])
    for _ in team:
        sim.step(sim.decision().player not in failing)
    return True


Cycle = tuple[int, int]


def cycle_of(game: Game) -> Cycle:
    """The team cycle under way: (quest, attempt)."""
    return (game.quest, game.attempt)


def reach(
    world: World, me: int, kind: str, cycle: Cycle, forced_team: tuple[int, ...] | None = None
) -> bool:
    """Play the others' turns (and the seat's speech, neutral) until the seat owes a
    ``kind`` decision in team cycle ``cycle``; False when that cycle ends first."""
    for _ in range(MAX_STEPS):
        d = world.game.decision()
        if d is None or cycle_of(world.game) > cycle:
            return False
        if d.player == me and d.kind == kind and cycle_of(world.game) == cycle:
            return True
        world.play(me, forced_team)
    return False


def leaf_value(world: World, me: int, value: ValueModel, cycle: Cycle) -> float:
    """Play on to the end of team cycle ``cycle``; then 1/0 if the game is over, else the
    learned value from the seat's bookkeeping."""
    game = world.game
    for _ in range(MAX_STEPS):
        if game.decision() is None:
            return float(game.result()["winner"] == game.players[me].team)
        if game.phase == "discussion" and cycle_of(game) != cycle:
            break
        world.play(me)
    view = world.agents[me]
    view.observe()
    return value.of(view)


def lookahead(
    game: Game,
    me: int,
    samples: Sequence[Roles],
    options: Sequence[Any],
    value: ValueModel,
    seed: int,
    prepare: Callable[[World], bool] | None = None,
) -> list[float] | None:
    """The mean leaf value of each option over the sampled assignments that replay (an
    assignment drawn twice is played once and counted twice); ``prepare``
    brings a replayed world to the seat's decision (by default: the hidden votes or cards
    before the seat's). None when no assignment replays."""
    totals = [0.0] * len(options)
    counted = 0
    decision, cycle = game.decision(), cycle_of(game)
    for i, (roles, count) in enumerate(Counter(samples).items()):
        leaves = []
        for option in options:  # each option on its own replay: the same deal and streams
            world = replay(game, me, roles, f"{seed}:{i}")
            if world is None or not (
                prepare(world) if prepare else reach(world, me, decision.kind, cycle)
            ):
                break
            start = cycle_of(world.game)
            world.game.step(option)
            leaves.append(leaf_value(world, me, value, start))
        if len(leaves) == len(options):
            totals = [t + count * v for t, v in zip(totals, leaves, strict=True)]
            counted += count
    return [t / counted for t in totals] if counted else None


def best(options: Sequence[Any], values: Sequence[float], margin: float = 0.0) -> Any:
    """The option of the highest value, unless it beats the first (the default, the
    scripted player's pick) by no more than ``margin``: one vote is rarely decisive, and a
    tie or a small difference is noise, not a reason to leave the default."""
    top = max(range(len(options)), key=lambda j: (values[j], -j))
    return options[top] if values[top] > values[0] + margin else options[0]


__all__ = [
    "NEUTRAL_SPEECH",
    "World",
    "best",
    "leaf_value",
    "lookahead",
    "cycle_of",
    "reach",
    "replay",
]
