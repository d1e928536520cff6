"""A tournament in TextArena's SecretMafia-v0 (the ``textarena`` extra), by this project's
protocol: the agent under test holds every seat of one camp, and the opponent (this
project's ``random`` agent unless told otherwise) holds the others. TextArena deals roles
and draws speaking orders from the seed, so every condition meets the same deals.

The tables of a call play together: each waits on its seat's LLM requests, and the
requests of all waiting tables go to the backend in one batch (as ``runner.play_tables``
batches this project's own tables). SecretMafia draws its speaking orders and tie-breaks
from Python's global ``random``, which its reset seeds; each table keeps that generator's
state of its own, so a game plays as it would alone.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from stackelberg.agents import Agent
from stackelberg.agents.refiner import RefinerAgent
from stackelberg.agents.runner import run_requests
from stackelberg.interop import require
from stackelberg.interop.secret_mafia import ENV_ID, SeatedAgent

ta = require("textarena", "textarena")
from textarena.envs.SecretMafia.env import SecretMafiaEnv  # noqa: E402 (after the check)

#: the camps of SecretMafia, as its roles name their teams
CAMPS = tuple(dict.fromkeys(role.team.lower() for role in SecretMafiaEnv._ROLE_FACTORY.values()))
#: a table of seven, as SecretMafia-v0 is usually played (two Mafia, Doctor, Detective)
PLAYERS = 7

Record = dict[str, Any]


def camp_of(role: str) -> str:
    """The camp of a SecretMafia role ("Doctor" -> "village")."""
    return SecretMafiaEnv._ROLE_FACTORY[role].team.lower()


class _Table:
    """One game in progress: its environment, seats, and the answer being computed."""

    def __init__(
        self,
        condition: str,
        camp: str,
        seed: int,
        seats: list[int],
        env: Any,
        agents: list[SeatedAgent],
    ) -> None:
        self.condition, self.camp, self.seed, self.seats = condition, camp, seed, seats
        self.env, self.agents = env, agents
        self.answer: Any = None
        self.turns = 0
        self.started = time.perf_counter()
        self.random_state = random.getstate()  # as the environment's reset seeded it

    def advance(self, results: list[Any] | None = None) -> list[Any] | None:
        """Play until the seat to act needs LLM results (returns its requests) or the game
        is over (None)."""
        random.setstate(self.random_state)
        try:
            return self._advance(results)
        finally:
            self.random_state = random.getstate()

    def _advance(self, results: list[Any] | None) -> list[Any] | None:
        while True:
            try:
                requests = self.answer.send(results) if self.answer else None
                if requests is None:
                    player, observation = self.env.get_observation()
                    self.answer = self.agents[player].respond(observation)
                    requests = next(self.answer)
                return requests
            except StopIteration as stop:
                self.answer, results = None, None
                self.turns += 1
                done, _ = self.env.step(stop.value)
                if done:
                    return None

    def record(self) -> Record:
        rewards, info = self.env.close()
        roles = {p: info[p]["role"] for p in sorted(info)}
        counts: dict[str, int] = {}
        for agent in self.agents:
            if isinstance(agent.agent, RefinerAgent):
                for key, value in agent.agent.play_counts().items():
                    counts[key] = counts.get(key, 0) + value
        return {
            "seed": self.seed,
            "condition": self.condition,
            "camp": self.camp,
            "seats": self.seats,
            "roles": [roles[p] for p in sorted(roles)],
            "win": all(rewards[p] > 0 for p in self.seats),
            "reason": info[self.seats[0]].get("reason", ""),
            "invalid_moves": sum(bool(i["invalid_move"]) for i in info.values()),
            "turns": self.turns,
            "seconds": time.perf_counter() - self.started,
            **counts,
        }


def play_mafia(
    conditions: Sequence[str],
    seeds: Iterable[int],
    camp: str,
    build: Callable[[str], Agent],
    llm: Any = None,
    opponent: Callable[[], Agent] | None = None,
    players: int = PLAYERS,
    on_game: Callable[[Record], None] | None = None,
) -> list[Record]:
    """Play each condition on each seed with ``camp`` held by ``build(condition)`` agents
    and the other seats by ``opponent()`` agents (default: ``random``); one record per
    game (``on_game`` sees each as it ends), in the order the games end."""
    if camp not in CAMPS:
        raise ValueError(f"unknown camp {camp!r}; choose one of: {', '.join(CAMPS)}")
    from stackelberg.agents import RandomAgent

    opponent = opponent or RandomAgent
    tables = []
    for seed in seeds:
        for condition in conditions:
            env = ta.make(ENV_ID)
            env.reset(num_players=players, seed=seed)
            roles = env.player_roles
            seats = [p for p in range(players) if camp_of(roles[p]) == camp]
            agents = [
                SeatedAgent((lambda c=condition: build(c)) if p in seats else opponent, llm, seed)
                for p in range(players)
            ]
            tables.append(_Table(condition, camp, seed, seats, env, agents))
    records: list[Record] = []
    waiting: dict[int, list[Any]] = {}

    def advanced(i: int, results: list[Any] | None = None) -> None:
        requests = tables[i].advance(results)
        if requests is None:
            waiting.pop(i, None)
            records.append(tables[i].record())
            if on_game:
                on_game(records[-1])
        else:
            waiting[i] = requests

    for i in range(len(tables)):
        advanced(i)
    while waiting:
        order = list(waiting)
        answers = run_requests(llm, [r for i in order for r in waiting[i]])
        start = 0
        for i in order:
            n = len(waiting[i])
            advanced(i, answers[start : start + n])
            start += n
    return records


__all__ = ["CAMPS", "PLAYERS", "camp_of", "play_mafia"]
