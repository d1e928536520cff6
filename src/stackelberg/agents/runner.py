"""Play games with agents: one table, or many tables in lockstep with batched LLM calls.

Agents answer a decision either directly or with a generator that yields lists of LLM
requests and receives their results. ``play_tables`` advances every table until each one
waits on an LLM (or is finished), sends the waiting requests to the backend in one
``run_batch`` call, and repeats, so that the requests of many games share forward passes.
Requests that take one pass (scoring, a policy) go first; tables that wait on generation
are answered together once no other table waits on a one-pass request.
"""

from __future__ import annotations

import hashlib
import random
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stackelberg.agents.base import Agent
from stackelberg.agents.prompting import REASONING
from stackelberg.games.base import SPEAK, Game
from stackelberg.llm.base import GenerateRequest


def agent_rng(seed: int, player: int) -> random.Random:
    """Each seat's own stream: the same seed gives the same play, whatever the other seats do."""
    return random.Random(f"{seed}:{player}")


def derived_rng(rng: random.Random, label: str) -> random.Random:
    """A stream of its own for what wraps an agent (``refiner+X``, ``bestN+X``), drawn from
    ``rng``'s state and ``label`` without drawing from ``rng``: the wrapped agent X makes
    the very draws it makes unwrapped, so X and its wrapped kind stay paired on a seed.
    A digest (sha256), not ``hash()``, which Python salts per process for strings."""
    digest = hashlib.sha256(repr((label, rng.getstate())).encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


@dataclass
class Table:
    """One game in progress with its agents (one per seat)."""

    game: Game
    agents: Sequence[Agent]
    seed: int
    roles: list[str] | None = None
    #: decisions taken so far (for throughput figures)
    decisions: int = 0
    #: (speech event index, speaker, follower or None) of every speech, for instance selection
    speech_turns: list[tuple[int, int, int | None]] = field(default_factory=list)
    #: what an agent adds to its speech events' data (``Agent.speech_data``), by event index
    speech_data: dict[int, dict[str, Any]] = field(default_factory=dict)
    _pending: Any = field(default=None, repr=False)

    def start(self) -> None:
        self.game.reset(self.seed, self.roles)
        if len(self.agents) != self.game.n_players:
            raise ValueError(
                f"{self.game.name}: {len(self.agents)} agents for {self.game.n_players} players"
            )
        for pid, agent in enumerate(self.agents):
            agent.setup(self.game, pid, agent_rng(self.seed, pid))

    def advance(self, results: list[Any] | None = None) -> list[Any] | None:
        """Play until the table needs LLM results (returns the requests) or is over (None)."""
        game = self.game
        if self._pending is not None:
            try:
                requests = self._pending.send(results)
            except StopIteration as stop:
                self._pending = None
                self._step(stop.value)
            else:
                return requests
        while True:
            decision = game.decision()
            if decision is None:
                return None
            action = self.agents[decision.player].act(decision)
            if isinstance(action, types.GeneratorType):
                try:
                    requests = next(action)
                except StopIteration as stop:
                    self._step(stop.value)
                    continue
                self._pending = action
                return requests
            self._step(action)

    def _step(self, action: Any) -> None:
        game = self.game
        decision = game.decision()
        for step, text in self.agents[decision.player].take_notes():
            game.log(REASONING, decision.player, {"step": step, "text": text}, [decision.player])
        if decision.kind != SPEAK:
            game.step(action)
        else:
            follower = game.next_speaker()
            start = len(game.events)
            game.step(action)
            for i in range(start, len(game.events)):
                ev = game.events[i]
                if ev.type == "speech" and ev.player == decision.player:
                    self.speech_turns.append((i, decision.player, follower))
                    if extra := self.agents[decision.player].speech_data():
                        self.speech_data[i] = extra
                    break
        self.decisions += 1

    def record(self) -> dict[str, Any]:
        record = self.game.record([a.kind for a in self.agents])
        for player, agent in zip(record["players"], self.agents, strict=True):
            player.update(agent.seat_facts())
        for i, extra in self.speech_data.items():
            event = record["events"][i]
            event["data"] = {**event["data"], **extra}
        return record


@dataclass(frozen=True)
class Routed:
    """An LLM request for a named backend other than the table's default (e.g. the Refiner)."""

    route: str
    request: Any


def run_requests(llm: Any, requests: list[Any]) -> list[Any]:
    """Answer requests in order; ``llm`` is one backend or a mapping of route -> backend
    (key "default" for plain requests). Requests to one backend go in one batch."""
    if not isinstance(llm, Mapping):
        if any(isinstance(r, Routed) for r in requests):
            raise RuntimeError("a request names a backend route but only one backend was given")
        return llm.run_batch(requests)
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(requests):
        groups.setdefault(r.route if isinstance(r, Routed) else "default", []).append(i)
    answers: list[Any] = [None] * len(requests)
    for route, idx in groups.items():
        if route not in llm:
            raise RuntimeError(f"no backend for route {route!r}; have: {', '.join(llm)}")
        batch = [_unrouted(requests[i]) for i in idx]
        for i, a in zip(idx, llm[route].run_batch(batch), strict=True):
            answers[i] = a
    return answers


def play_tables(
    tables: Sequence[Table],
    llm: Any = None,
    on_finish: Callable[[Table], None] | None = None,
) -> list[dict[str, Any]]:
    """Play all tables to the end; LLM requests of all waiting tables are batched together."""
    for t in tables:
        t.start()
    waiting: dict[int, list[Any]] = {}
    for i, t in enumerate(tables):
        req = t.advance()
        if req is None:
            if on_finish:
                on_finish(t)
        else:
            waiting[i] = req
    while waiting:
        if llm is None:
            raise RuntimeError("an agent asked for an LLM but no backend was given")
        # Tables that wait on generation wait until every other table waits on generation
        # too (or is over): their decoding then runs as one batch, where answering every
        # table each round decoded one speech at a time beside the others' one-pass requests.
        order = [i for i in waiting if not any(map(_generates, waiting[i]))] or list(waiting)
        flat = [r for i in order for r in waiting[i]]
        answers = run_requests(llm, flat)
        pos = 0
        for i in order:
            n = len(waiting[i])
            req = tables[i].advance(answers[pos : pos + n])
            pos += n
            if req is None:
                del waiting[i]
                if on_finish:
                    on_finish(tables[i])
            else:
                waiting[i] = req
    return [t.record() for t in tables]


def _unrouted(request: Any) -> Any:
    """The request itself, whichever backend it names."""
    return request.request if isinstance(request, Routed) else request


def _generates(request: Any) -> bool:
    """Whether a request decodes tokens (many passes), not one pass (scoring, a policy)."""
    return isinstance(_unrouted(request), GenerateRequest)


def play_game(
    game: Game, agents: Sequence[Agent], seed: int, roles: list[str] | None = None, llm: Any = None
) -> dict[str, Any]:
    """Play one game and return its record."""
    return play_tables([Table(game, agents, seed, roles)], llm)[0]
