"""What a request to the service may hold, checked into one-line errors.

A refine request is an OpenAI chat request whose last message is the user's, its content a
JSON object (``RefineContext``): the game, the speaker, the draft speech, the next speaker
and what the speaker has seen. A measure request is that game context with candidates and
the follower's desired and undesired responses (``MeasureBody``). Seats are numbered as the
games' text names players: 1 is Player 1. Anything wrong is a ``RequestError``: its HTTP
status and one line naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stackelberg.games import Game, GameError, game_class, make_game
from stackelberg.games.sotopia import Sotopia
from stackelberg.settings import Settings, one_line

#: game options that name a file on the server (Sotopia's scenarios file): a request may not
#: make the server read a path of its choosing
SERVER_ONLY_OPTIONS = frozenset({"scenarios"})
#: how many deals, from the request's seed on, are tried for one giving a seat its stated role
DEAL_TRIES = 256
#: the highest seed a request may give (the backends key 64-bit random streams by it)
MAX_SEED = 2**63 - 1


class RequestError(Exception):
    """A request the service cannot answer as sent: its HTTP status and one line."""

    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status = status
        self.kind = kind


class ServeLimits(Settings):
    """What one request may ask and how many may wait: the bounds that keep a shared server
    answering (``stackelberg serve`` sets each with a flag of the same name)."""

    max_body_bytes: int = Field(262_144, ge=1024, description="largest request body (413)")
    max_messages: int = Field(32, ge=1, description="most chat messages in a request")
    max_history_lines: int = Field(1000, ge=1, description="most history lines in a request")
    max_n: int = Field(8, ge=1, description="most completions (n) in a refine request")
    max_tokens: int = Field(256, ge=1, description="highest max_tokens a request may ask")
    max_candidates: int = Field(32, ge=1, description="most candidates in a measure request")
    max_responses: int = Field(16, ge=1, description="most desired (and undesired) responses")
    max_queue: int = Field(
        256, ge=1, description="requests waiting for the model before new ones get 503"
    )
    max_batch: int = Field(32, ge=1, description="most requests served in one batched call")
    #: how long, in ms, the first request of a batch waits for others to join it
    batch_wait_ms: float = Field(5.0, ge=0, le=1000, description="wait for a batch to fill, ms")


def parse_json(data: bytes | str, where: str) -> Any:
    """JSON text as Python values, or a RequestError: not JSON, nested too deep, or text
    that is no Unicode (a lone surrogate, which no tokenizer takes)."""
    try:
        value = json.loads(data)
        json.dumps(value, ensure_ascii=False).encode()
    except (ValueError, RecursionError) as err:
        what = "nested too deep" if isinstance(err, RecursionError) else str(err).split("\n")[0]
        raise RequestError(f"{where}: not valid JSON ({what})") from None
    return value


class Strict(BaseModel):
    """A request part: unknown fields refused, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


M = TypeVar("M", bound=Strict)


def checked(model: type[M], data: Any, where: str) -> M:
    """``data`` as ``model``, or a RequestError naming the first fields that are wrong."""
    if not isinstance(data, Mapping):
        raise RequestError(f"{where}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(map(str, data)) - set(model.model_fields))
    if unknown:
        raise RequestError(
            f"{where}: unknown field {unknown[0]!r}; the fields are: {', '.join(model.model_fields)}"
        )
    try:
        return model.model_validate(dict(data))
    except ValidationError as err:
        raise RequestError(one_line(err, prefix=where, root=where)) from None


Seat = int  # 1 is Player 1


class TableContext(Strict):
    """The game a request is about: which one, its options, and the deal."""

    game: str = Field(description="a registered game: werewolf, avalon, onuw, sotopia")
    options: dict[str, Any] = Field(default_factory=dict, description="the game's options")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="the deal of the roles not stated")
    scenario: str | None = Field(None, description="sotopia: the scenario id (else the seed's)")

    def deal(self, seat_roles: Mapping[Seat, str | None]) -> Game:
        """The game freshly dealt, as the prompts read it: the first deal from ``seed`` on
        that gives each seat of ``seat_roles`` its stated role (None: any)."""
        refused = sorted(SERVER_ONLY_OPTIONS & set(self.options))
        if refused:
            raise RequestError(f"options.{refused[0]}: names a file on the server; not settable")
        try:
            game = make_game(self.game, self.options)
            if self.scenario is not None and not issubclass(game_class(self.game), Sotopia):
                raise RequestError(f"scenario: {self.game} is dealt by seed, not by scenario")
            dealt = [self.scenario] if self.scenario is not None else None
            game.reset(self.seed, dealt)
            for seat in seat_roles:
                if not 1 <= seat <= game.n_players:
                    raise RequestError(
                        f"seat {seat}: {self.game} here has seats 1 to {game.n_players}"
                    )
            wanted = {seat - 1: role for seat, role in seat_roles.items() if role is not None}
            seen: set[str] = set()
            for seed in range(self.seed, min(self.seed + DEAL_TRIES, MAX_SEED + 1)):
                game.reset(seed, dealt)
                if all(game.players[p].role == role for p, role in wanted.items()):
                    return game
                seen |= {p.role for p in game.players}
        except GameError as err:
            raise RequestError(str(err)) from None
        unknown = [(p, r) for p, r in wanted.items() if r not in seen]
        seat, role = (unknown or list(wanted.items()))[0]
        raise RequestError(
            f"role {role!r}: no deal of {self.game} from seed {self.seed} on gives Player "
            f"{seat + 1} that role; roles dealt: {', '.join(sorted(seen))}"
        )


class RefineContext(TableContext):
    """A refine request's user message: the draft speech and the game around it."""

    speaker: Seat = Field(ge=1, description="who says the draft")
    speaker_role: str | None = Field(None, description="the speaker's role (else the seed's)")
    next_speaker: Seat | None = Field(None, ge=1, description="who speaks next, if known")
    draft: str = Field(min_length=1, description="the speech the Refiner rewrites")
    history: list[str] = Field(
        default_factory=list, description="what the speaker has seen, one line each, oldest first"
    )

    def table(self) -> Game:
        if self.next_speaker == self.speaker:
            raise RequestError("next_speaker: the speaker cannot speak next to itself")
        seats = {self.speaker: self.speaker_role} | (
            {self.next_speaker: None} if self.next_speaker is not None else {}
        )
        return self.deal(seats)


class MeasureBody(TableContext):
    """A measure request: candidates the speaker might say, scored by how the follower's
    reply shifts towards the desired responses and away from the undesired ones."""

    speaker: Seat = Field(ge=1, description="who would say the candidates")
    follower: Seat = Field(ge=1, description="who replies (the Measurer plays this seat)")
    follower_role: str | None = Field(None, description="the follower's role (else the seed's)")
    history: list[str] = Field(
        default_factory=list, description="what the follower has seen, one line each"
    )
    candidates: list[str] = Field(min_length=1, description="the speeches to score")
    desired: list[str] = Field(min_length=1, description="replies the speaker wants")
    undesired: list[str] = Field(min_length=1, description="replies the speaker does not want")

    def table(self) -> Game:
        if self.follower == self.speaker:
            raise RequestError("follower: the speaker cannot follow itself")
        return self.deal({self.follower: self.follower_role, self.speaker: None})

    def check(self, limits: ServeLimits) -> MeasureBody:
        at_most(len(self.history), limits.max_history_lines, "history", "lines")
        at_most(len(self.candidates), limits.max_candidates, "candidates", "candidates")
        at_most(len(self.desired), limits.max_responses, "desired", "responses")
        at_most(len(self.undesired), limits.max_responses, "undesired", "responses")
        return self


class ChatMessage(BaseModel):
    """One chat message; fields beyond role and content (a name) are read by nobody."""

    model_config = ConfigDict(extra="allow", frozen=True)

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        """The content as text; a list of parts is its text parts joined."""
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class ChatBody(Strict):
    """The fields of an OpenAI chat request this server reads; any other is refused."""

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    n: int = Field(1, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    stream: bool = False
    user: str | None = None

    def check(self, limits: ServeLimits) -> ChatBody:
        if self.stream:
            raise RequestError("stream: this server answers whole responses only")
        at_most(len(self.messages), limits.max_messages, "messages", "messages")
        at_most(self.n, limits.max_n, "n", "completions")
        at_most(self.token_limit or 0, limits.max_tokens, "max_tokens", "tokens")
        return self

    @property
    def token_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    def context(self, limits: ServeLimits) -> RefineContext:
        """The refine request the last message holds."""
        last = self.messages[-1]
        where = f"messages[{len(self.messages) - 1}]"
        if last.role != "user":
            raise RequestError(f"{where}: the last message must be the user's refine request")
        context = checked(RefineContext, parse_json(last.text(), f"{where}.content"), where)
        at_most(len(context.history), limits.max_history_lines, "history", "lines")
        return context


def at_most(count: int, limit: int, field: str, what: str) -> None:
    if count > limit:
        raise RequestError(f"{field}: {count} {what}; this server takes at most {limit}")
