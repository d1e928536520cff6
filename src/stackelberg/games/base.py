"""The protocol every game engine follows.

A game is a sequence of *decisions*: at every point exactly one player owes one decision
(speak, vote, pick a target, ...). Simultaneous choices (votes) are asked one player at a
time and revealed together, so later voters never see earlier votes before the reveal.
Engines are pure rules: no LLM, no I/O, all chance through one seeded ``random.Random``.

Engines keep an ordered event log of facts. Each event says who may see it (``visible_to``),
so the observation of a player is the events visible to them; the words a player reads
about them live with the prompts (``stackelberg.agents.prompts``), not here.
"""

from __future__ import annotations

import dataclasses
import random
import typing
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

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
    """What one player may know now, as data (its prompt words it: ``agents.prompting``)."""

    data: dict[str, Any]


def player_name(pid: int) -> str:
    return f"Player {pid + 1}"


class RecordIfSet:
    """Marks an option that a record names only when it is not at its default: options added
    after records were first written, so that a game at the default rules keeps a
    byte-identical record (``restore`` fills a missing option with its default)."""


RECORD_IF_SET = RecordIfSet()


def _none_or_items(raw: Any) -> Any:
    """A list option from YAML or ``--set``: "a,b,c" or a sequence; "none"/"null"/"" -> None."""
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("none", "null", "")):
        return None
    items = raw.split(",") if isinstance(raw, str) else raw
    if isinstance(items, (list, tuple)):
        return tuple(str(x).strip() for x in items if str(x).strip())
    return raw


def _no_bool(raw: Any) -> Any:
    """pydantic would read true as 1: a count given as a flag is a mistake to report."""
    if isinstance(raw, bool):
        raise ValueError("a count, not true/false")
    return raw


#: Option types: pydantic coerces the strings of ``--set`` and the values of YAML.
Flag = bool
Count = Annotated[int, BeforeValidator(_no_bool)]
RoleList = Annotated[tuple[str, ...] | None, BeforeValidator(_none_or_items)]


class GameOptions(BaseModel):
    """A game's options: every engine's ``Config`` derives from it. pydantic coerces loose
    values and rejects unknown keys; ``parse`` turns its errors into one-line ConfigErrors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def parse(cls, game: str, options: dict[str, Any] | None) -> GameOptions:
        try:
            return cls(**dict(options or {}))
        except ValidationError as exc:
            raise cls._config_error(game, exc.errors()[0]) from None

    @classmethod
    def _config_error(cls, game: str, error: Any) -> ConfigError:
        """One line naming the option and what it accepts."""
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, ConfigError):  # a rule check of the model's own validators
            return cause
        name = str(error["loc"][0]) if error["loc"] else ""
        raw = error["input"]
        if error["type"] == "extra_forbidden":
            return ConfigError(
                f"{game}: unknown option {name!r}; known options: {', '.join(cls.model_fields)}"
            )
        field = cls.model_fields[name]
        if typing.get_origin(field.annotation) is Literal:
            allowed = ", ".join(typing.get_args(field.annotation))
            return ConfigError(f"{game}: {name}={raw!r}; allowed: {allowed}")
        low, high = bounds(field)
        if error["type"] in ("greater_than_equal", "less_than_equal"):
            what = f"from {low} to {high}" if high is not None else f">= {low}"
            return ConfigError(f"{game}: {name}={raw!r}; must be an integer {what}")
        kind = getattr(field.annotation, "__name__", str(field.annotation))
        return ConfigError(f"{game}: option {name}={raw!r} is not a valid {kind}")

    def recorded(self) -> dict[str, Any]:
        """The options as a record names them (``RECORD_IF_SET`` ones only when changed)."""
        out = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if RECORD_IF_SET in field.metadata and value == field.default:
                continue
            out[name] = list(value) if isinstance(value, tuple) else value
        return out


def bounds(field: Any) -> tuple[Any, Any]:
    """The ``ge``/``le`` limits of an option's field (None where unlimited)."""
    low = next((m.ge for m in field.metadata if getattr(m, "ge", None) is not None), None)
    high = next((m.le for m in field.metadata if getattr(m, "le", None) is not None), None)
    return low, high


@dataclass(frozen=True)
class GameSpec:
    """A game's facts, stated once next to its engine: the registry (``stackelberg.games``)
    lists the specs, and params, the command lines, tournaments and reports read them there,
    so that adding a game is one place."""

    #: the key of params, records, stage names and the command line
    name: str
    #: the game's name as players and reports read it
    title: str
    #: the engine's options
    options: type[GameOptions]
    #: teams an agent under test can hold
    camps: tuple[str, ...]
    #: the camps a tournament plays unless told otherwise (those of the default deal)
    tested_camps: tuple[str, ...]
    #: a game scored per player rather than won (Sotopia): dimension -> (lowest, highest);
    #: its result holds ``scores``, and reports show these in place of win rates
    dimensions: Mapping[str, tuple[int, int]] = dataclasses.field(default_factory=dict)


class Game(ABC):
    """Base class of the engines. Subclasses implement the abstract methods.

    Lifecycle: ``reset(seed, roles)``, then while ``decision()`` is not None, the current
    player's action goes to ``step(action)``; finally ``result()`` and ``record(...)``.
    """

    spec: ClassVar[GameSpec]
    #: ``spec.name`` and ``spec.options``, set from the spec of each engine class
    name: ClassVar[str]
    Config: ClassVar[type[GameOptions]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "spec" in cls.__dict__:
            cls.name, cls.Config = cls.spec.name, cls.spec.options

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
        return cls(cls.Config.parse(cls.name, options))

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
        events = self.visible_events(player)
        d = self.decision()
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
        return Observation(data)

    def record(self, agents: list[str] | None = None) -> dict[str, Any]:
        """The game record, JSON-ready: game, seed, options (``config``), players (with
        ``agents``), events and result."""
        if not self.done:
            raise GameError(f"{self.name}: the game is not finished")
        agents = agents or ["unknown"] * self.n_players
        return {
            "game": self.name,
            "seed": self.seed,
            "config": self.config.recorded(),
            "players": [
                {"id": p.id, "name": p.name, "role": p.role, "team": p.team, "agent": agents[p.id]}
                for p in self.players
            ],
            "events": [e.to_dict() for e in self.events],
            "result": self.result(),
        }


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
    "Count",
    "Flag",
    "GameOptions",
    "GameSpec",
    "RoleList",
    "player_name",
]
