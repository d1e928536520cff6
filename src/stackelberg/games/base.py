"""The protocol every game engine follows.

A game is a sequence of *decisions*: at every point exactly one player owes one decision
(speak, vote, pick a target, ...). Simultaneous choices (votes) are asked one player at a
time and revealed together, so later voters never see earlier votes before the reveal.
Engines are pure rules: no LLM, no I/O, all chance through one seeded ``random.Random``.

Engines keep an ordered event log. Each event says who may see it (``visible_to``), so the
observation of a player is the events visible to them, rendered as text.
"""

from __future__ import annotations

import dataclasses
import random
import types
import typing
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

ALL = "all"
SPEAK = "speak"


class GameError(ValueError):
    """A user-facing problem with a game: bad option, bad role set, illegal action."""


class ConfigError(GameError):
    """An invalid game option or role set."""


class IllegalActionError(GameError):
    """An action that is not legal now; the state is unchanged."""


@dataclass(slots=True)
class Event:
    """One entry of the event log. ``visible_to`` is ``"all"`` or a tuple of player ids."""

    type: str
    phase: str
    round: int
    player: int | None
    visible_to: str | tuple[int, ...]
    data: dict[str, Any]

    def visible(self, player: int) -> bool:
        return self.visible_to == ALL or player in self.visible_to

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "phase": self.phase,
            "round": self.round,
            "player": self.player,
            "visible_to": ALL if self.visible_to == ALL else list(self.visible_to),
            "data": self.data,
        }


@dataclass(frozen=True, slots=True)
class Decision:
    """What the current player must decide.

    ``options`` is the tuple of legal actions, or ``None`` for free speech (any string).
    ``prompt`` is one line telling a player what is asked.
    """

    player: int
    kind: str
    options: tuple[Any, ...] | None
    prompt: str


@dataclass(frozen=True, slots=True)
class Player:
    id: int
    name: str
    role: str
    team: str


@dataclass(frozen=True, slots=True)
class Observation:
    """What one player may know now: as text (for LLM prompts and humans) and as data."""

    text: str
    data: dict[str, Any]


def player_name(pid: int) -> str:
    return f"Player {pid + 1}"


def _parse_value(name: str, hint: Any, raw: Any, game: str) -> Any:
    """Convert a ``--set`` string (or a YAML value) to the type of a config field."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (types.UnionType, typing.Union) and type(None) in args:
        if raw is None or (isinstance(raw, str) and raw.lower() in ("none", "null", "")):
            return None
        (hint,) = [a for a in args if a is not type(None)]
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    try:
        if hint is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("true", "1", "yes", "on"):
                return True
            if text in ("false", "0", "no", "off"):
                return False
            raise ValueError
        if hint is int:
            if isinstance(raw, bool):
                raise ValueError
            return int(raw)
        if hint is float:
            return float(raw)
        if hint is str:
            return str(raw)
        if origin is tuple:
            items = raw.split(",") if isinstance(raw, str) else list(raw)
            return tuple(str(x).strip() for x in items if str(x).strip())
    except (TypeError, ValueError):
        pass
    raise ConfigError(
        f"{game}: option {name}={raw!r} is not a valid {getattr(hint, '__name__', hint)}"
    )


def parse_config(config_cls: type, game: str, options: dict[str, Any] | None) -> Any:
    """Build a config dataclass from loose options, naming any unknown key or bad value."""
    options = dict(options or {})
    hints = typing.get_type_hints(config_cls)
    known = [f.name for f in dataclasses.fields(config_cls)]
    values = {}
    for key, raw in options.items():
        if key not in known:
            raise ConfigError(f"{game}: unknown option {key!r}; known options: {', '.join(known)}")
        values[key] = _parse_value(key, hints[key], raw, game)
    try:
        return config_cls(**values)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{game}: {exc}") from None


class Game(ABC):
    """Base class of the engines. Subclasses implement the abstract methods.

    Lifecycle: ``reset(seed, roles)``, then while ``decision()`` is not None, the current
    player's action goes to ``step(action)``; finally ``result()`` and ``record(...)``.
    """

    name: ClassVar[str]
    Config: ClassVar[type]
    #: A short statement of the rules, given to LLM players in their prompts.
    rules_text: ClassVar[str]

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.Config()
        self.players: list[Player] = []
        self.events: list[Event] = []
        self.seed: int | None = None
        self.phase = "setup"
        self.round = 0
        self.rng = random.Random(0)

    @classmethod
    def from_options(cls, options: dict[str, Any] | None = None) -> Game:
        return cls(parse_config(cls.Config, cls.name, options))

    @classmethod
    def restore(cls, record: dict[str, Any]) -> Game:
        """A finished game's players and event log from its record, to describe its events
        (e.g. to rebuild what a player saw at some point). Not a resumable state."""
        game = cls.from_options(record.get("config"))
        game.seed = record["seed"]
        game.players = [Player(p["id"], p["name"], p["role"], p["team"]) for p in record["players"]]
        game.events = [
            Event(
                e["type"],
                e["phase"],
                e["round"],
                e["player"],
                e["visible_to"] if e["visible_to"] == ALL else tuple(e["visible_to"]),
                e["data"],
            )
            for e in record["events"]
        ]
        game.phase = "over"
        return game

    # ---- to implement -------------------------------------------------------------------
    @abstractmethod
    def _setup(self, roles: list[str] | None) -> None:
        """Deal roles (with ``self.rng`` unless given), fill ``self.players``, log knowledge."""

    @abstractmethod
    def decision(self) -> Decision | None:
        """The pending decision, or None when the game is over."""

    @abstractmethod
    def _apply(self, decision: Decision, action: Any) -> None:
        """Apply an already-validated action."""

    @abstractmethod
    def result(self) -> dict[str, Any]:
        """{"winner": team or "draw", "winners": [ids], "reason": str, ...}; only when done."""

    @abstractmethod
    def next_speaker(self) -> int | None:
        """During a speech turn: who speaks right after the current speaker in the same
        discussion round (the follower), or None if the current speaker is last."""

    @abstractmethod
    def describe_event(self, event: Event, viewer: int) -> str | None:
        """One line of text for an event as ``viewer`` sees it (None to leave it out)."""

    def private_knowledge(self, player: int) -> dict[str, Any]:
        """Structured private facts for the observation's data (override per game)."""
        return {}

    def public_state(self) -> dict[str, Any]:
        """Structured public facts (alive players, quest scores, ...) for observations."""
        return {}

    # ---- shared machinery ---------------------------------------------------------------
    def reset(self, seed: int, roles: list[str] | None = None) -> Game:
        self.seed = seed
        self.rng = random.Random(seed)
        self.players = []
        self.events = []
        self.phase = "setup"
        self.round = 0
        self._setup(list(roles) if roles is not None else None)
        return self

    @property
    def n_players(self) -> int:
        return len(self.players)

    @property
    def done(self) -> bool:
        return self.decision() is None

    def current_player(self) -> int | None:
        d = self.decision()
        return None if d is None else d.player

    def legal_actions(self) -> tuple[Any, ...] | None:
        d = self.decision()
        if d is None:
            return ()
        return d.options

    def step(self, action: Any) -> None:
        d = self.decision()
        if d is None:
            raise IllegalActionError(f"{self.name}: the game is over; no action is legal")
        if d.options is None:
            if not isinstance(action, str):
                raise IllegalActionError(
                    f"{self.name}: {player_name(d.player)} must speak (a string) for "
                    f"{d.kind!r}, got {action!r}"
                )
            action = " ".join(action.split())
        elif not any(o == action and type(o) is type(action) for o in d.options):
            # the type check keeps True from passing for 1 (and 0 for False)
            raise IllegalActionError(
                f"{self.name}: illegal action {action!r} by {player_name(d.player)} for "
                f"{d.kind!r}; legal: {list(d.options)}"
            )
        self._apply(d, action)

    def log(
        self,
        type: str,
        player: int | None,
        data: dict[str, Any],
        visible_to: str | tuple[int, ...] | list[int] = ALL,
    ) -> Event:
        if not isinstance(visible_to, str):
            visible_to = tuple(visible_to)
        ev = Event(type, self.phase, self.round, player, visible_to, data)
        self.events.append(ev)
        return ev

    def visible_events(self, player: int, start: int = 0) -> list[Event]:
        return [e for e in self.events[start:] if e.visible_to == ALL or player in e.visible_to]

    def observation(self, player: int) -> Observation:
        me = self.players[player]
        lines = [f"You are {me.name}, your role is {me.role} (team {me.team})."]
        events = self.visible_events(player)
        for ev in events:
            line = self.describe_event(ev, player)
            if line:
                lines.append(line)
        d = self.decision()
        if d is not None and d.player == player:
            lines.append(f"Now: {d.prompt}")
        data = {
            "game": self.name,
            "player": player,
            "name": me.name,
            "role": me.role,
            "team": me.team,
            "phase": self.phase,
            "round": self.round,
            "private": self.private_knowledge(player),
            "public": self.public_state(),
            "events": [e.to_dict() for e in events],
            "decision": None
            if d is None or d.player != player
            else {
                "kind": d.kind,
                "options": None if d.options is None else list(d.options),
                "prompt": d.prompt,
            },
        }
        return Observation("\n".join(lines), data)

    def record(self, agents: list[str] | None = None) -> dict[str, Any]:
        """The game record of DESIGN.md (a JSON-ready dict)."""
        if not self.done:
            raise GameError(f"{self.name}: the game is not finished")
        agents = agents or ["unknown"] * self.n_players
        return {
            "game": self.name,
            "seed": self.seed,
            "config": config_dict(self.config),
            "players": [
                {"id": p.id, "name": p.name, "role": p.role, "team": p.team, "agent": agents[p.id]}
                for p in self.players
            ],
            "events": [e.to_dict() for e in self.events],
            "result": self.result(),
        }


#: Metadata key of a config field that a record names only when it is not at its default:
#: options added after records were first written, so that a game at the default rules keeps
#: a byte-identical record (``restore`` fills a missing option with its default).
RECORD_IF_SET = "record_if_set"


def option(default: Any) -> Any:
    """A config field recorded only when set to something other than ``default``."""
    return dataclasses.field(default=default, metadata={RECORD_IF_SET: True})


def config_dict(config: Any) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(config):
        v = getattr(config, f.name)
        if f.metadata.get(RECORD_IF_SET) and v == f.default:
            continue
        out[f.name] = list(v) if isinstance(v, tuple) else v
    return out


def check_choice(game: str, name: str, value: Any, allowed: tuple[str, ...]) -> None:
    """Raise a one-line ConfigError unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ConfigError(f"{game}: {name}={value!r}; allowed: {', '.join(allowed)}")


__all__ = [
    "ALL",
    "SPEAK",
    "ConfigError",
    "Decision",
    "Event",
    "Game",
    "GameError",
    "IllegalActionError",
    "Observation",
    "Player",
    "RECORD_IF_SET",
    "check_choice",
    "config_dict",
    "option",
    "parse_config",
    "player_name",
]
