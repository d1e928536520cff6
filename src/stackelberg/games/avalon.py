"""The Resistance: Avalon, 5 to 10 players.

The rules, options and results: docs/games.md, "Avalon"; the events and their data:
docs/records.md. Sources: the Avalon rulebook (Don Eskridge, Indie Boards & Cards) and the
paper's setup (6 players: Merlin, Percival, two Loyal Servants, Morgana, Assassin).

Phases: "setup", then per quest (``round`` = quest 1..5) and attempt "discussion" (decision
``speak``; with ``discussion="first_attempt"`` only at a quest's first attempt), "proposal"
(``propose``: sorted id tuples of the quest's size), "vote" (``vote``: True approves),
"quest" (``quest``: True plays Success; good players have no other option) and, when the
Assassin strikes, "assassination" (``assassinate``); "over" at the end.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from stackelberg.games.base import (
    RECORD_IF_SET,
    SPEAK,
    ConfigError,
    Count,
    Decision,
    Flag,
    Game,
    GameError,
    GameOptions,
    GameSpec,
    IllegalActionError,
    Player,
    RoleList,
    player_name,
)

# ---- rules as data ------------------------------------------------------------------------
GOOD, EVIL = "good", "evil"
ROLE_TEAM: dict[str, str] = {
    "merlin": GOOD,
    "percival": GOOD,
    "loyal_servant": GOOD,
    "morgana": EVIL,
    "assassin": EVIL,
    "minion": EVIL,
    "mordred": EVIL,
    "oberon": EVIL,
}
#: Roles of which a table holds at most one (merlin and assassin: exactly one).
UNIQUE_ROLES = ("merlin", "percival", "morgana", "assassin", "mordred", "oberon")
EVIL_COUNT: dict[int, int] = {5: 2, 6: 2, 7: 3, 8: 3, 9: 3, 10: 4}
TEAM_SIZES: dict[int, tuple[int, ...]] = {
    5: (2, 3, 2, 3, 3),
    6: (2, 3, 4, 3, 4),
    7: (2, 3, 3, 4, 4),
    8: (3, 4, 4, 5, 5),
    9: (3, 4, 4, 5, 5),
    10: (3, 4, 4, 5, 5),
}
#: Quest 4 needs two Fail cards when the table has at least this many players.
TWO_FAIL_QUEST, TWO_FAIL_MIN_PLAYERS = 4, 7
MAX_ATTEMPTS = 5  # the fifth rejection in a row within one quest: evil wins (by default)
WINS_NEEDED = 3
#: Which default card a ``mordred`` / ``oberon`` option replaces, first available wins.
REPLACES: tuple[str, ...] = ("minion", "morgana")

KIND_PROPOSE, KIND_VOTE, KIND_QUEST, KIND_ASSASSINATE = "propose", "vote", "quest", "assassinate"
_VOTE_OPTIONS = (True, False)
_GOOD_CARDS = (True,)
_EVIL_CARDS = (True, False)


def fails_needed(n_players: int, quest: int) -> int:
    """Fail cards that make quest ``quest`` (1-based) fail at this table size."""
    return 2 if quest == TWO_FAIL_QUEST and n_players >= TWO_FAIL_MIN_PLAYERS else 1


_TEAMS_CACHE: dict[tuple[int, int], tuple[tuple[int, ...], ...]] = {}


def team_options(n_players: int, size: int) -> tuple[tuple[int, ...], ...]:
    """All teams of ``size`` distinct players as sorted id tuples (cached)."""
    key = (n_players, size)
    teams = _TEAMS_CACHE.get(key)
    if teams is None:
        teams = _TEAMS_CACHE[key] = tuple(itertools.combinations(range(n_players), size))
    return teams


def default_roles(n_players: int, mordred: bool = False, oberon: bool = False) -> list[str]:
    """The default deck for a player count (docs/games.md), with Mordred/Oberon swapped in."""
    n_evil = EVIL_COUNT[n_players]
    if n_players == 6:
        deck = ["merlin", "percival", "loyal_servant", "loyal_servant", "morgana", "assassin"]
    else:
        deck = ["merlin", "percival"] + ["loyal_servant"] * (n_players - n_evil - 2)
        deck += ["morgana", "assassin"] + ["minion"] * (n_evil - 2)
    for extra, wanted in (("mordred", mordred), ("oberon", oberon)):
        if not wanted:
            continue
        for card in REPLACES:
            if card in deck:
                deck[deck.index(card)] = extra
                break
        else:
            raise ConfigError(
                f"avalon: {n_players} players have {n_evil} evil cards, too few for "
                f"mordred=true and oberon=true beside the assassin; use a larger n_players or "
                f"an explicit roles list"
            )
    return deck


class AvalonConfig(GameOptions):
    """Options of Avalon; defaults are the paper's 6-player setup."""

    n_players: Annotated[Count, Field(ge=min(EVIL_COUNT), le=max(EVIL_COUNT))] = 6
    roles: RoleList = None  # explicit role list (one per player), None = default deck
    mordred: Flag = False  # Mordred replaces a minion card (Morgana if none); hidden from Merlin
    oberon: Flag = False  # Oberon replaces a minion card (Morgana if none); unseen by evil
    merlin_sees_oberon: Flag = True  # whether Merlin's knowledge includes Oberon
    #: a team vote with as many approvals as rejections: "rejected" or "approved"
    tied_team_vote: Annotated[Literal["rejected", "approved"], RECORD_IF_SET] = "rejected"
    #: the fifth rejected team in a row in a quest: "evil_wins" or "quest_goes_anyway"
    fifth_rejection: Annotated[Literal["evil_wins", "quest_goes_anyway"], RECORD_IF_SET] = (
        "evil_wins"
    )
    #: "after_three_successes" or "once_after_any_quest" (one attempt, offered after each quest)
    assassin_timing: Annotated[
        Literal["after_three_successes", "once_after_any_quest"], RECORD_IF_SET
    ] = "after_three_successes"
    #: when the table talks: before every team proposal ("every_attempt"), or only before a
    #: quest's first ("first_attempt": a rejected team goes straight to the next leader's
    #: proposal; half the speeches or fewer, for budgets that cannot pay for them)
    discussion: Literal["every_attempt", "first_attempt"] = "every_attempt"

    @model_validator(mode="after")
    def _legal_deck(self) -> AvalonConfig:
        if self.roles is None:
            default_roles(self.n_players, self.mordred, self.oberon)
            return self
        if self.mordred or self.oberon:
            raise ConfigError(
                "avalon: mordred/oberon options apply to the default deck; with an explicit "
                "roles list, put 'mordred' or 'oberon' in roles instead"
            )
        check_roles(self.roles, self.n_players)
        return self

    def deck(self) -> list[str]:
        """The configured role multiset (one card per player)."""
        if self.roles is not None:
            return list(self.roles)
        return default_roles(self.n_players, self.mordred, self.oberon)


def check_roles(roles: tuple[str, ...] | list[str], n_players: int) -> None:
    """Raise ConfigError unless ``roles`` is a legal Avalon deck for ``n_players``."""
    bad = [r for r in roles if r not in ROLE_TEAM]
    if bad:
        raise ConfigError(
            f"avalon: roles contains unknown role(s) {bad}; allowed: {', '.join(ROLE_TEAM)}"
        )
    if len(roles) != n_players:
        raise ConfigError(
            f"avalon: roles has {len(roles)} entries but n_players={n_players}; "
            f"give one role per player (or set n_players={len(roles)})"
        )
    n_evil = sum(ROLE_TEAM[r] == EVIL for r in roles)
    if n_evil != EVIL_COUNT[n_players]:
        raise ConfigError(
            f"avalon: roles has {n_evil} evil roles; {n_players} players need exactly "
            f"{EVIL_COUNT[n_players]}"
        )
    counts = Counter(roles)
    for role in ("merlin", "assassin"):
        if counts[role] != 1:
            raise ConfigError(f"avalon: roles must contain exactly one {role}, got {counts[role]}")
    for role in UNIQUE_ROLES:
        if counts[role] > 1:
            raise ConfigError(f"avalon: roles may contain at most one {role}, got {counts[role]}")


class Avalon(Game):
    """The Avalon rules engine (see the module docstring for the spec)."""

    spec = GameSpec(
        name="avalon",
        title="Avalon",
        options=AvalonConfig,
        camps=(GOOD, EVIL),
        tested_camps=(GOOD, EVIL),
    )

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self._decision: Decision | None = None
        self._reset_state()

    def _reset_state(self) -> None:
        self.leader = 0
        self.quest = 1
        self.attempt = 1
        self.quest_results: list[bool] = []
        self.team: tuple[int, ...] = ()
        self.sees: dict[int, tuple[int, ...]] = {}
        self.played: dict[int, list[list[Any]]] = {}
        self.winner: str | None = None
        self.reason: str | None = None
        self.assassin_target: int | None = None
        self.assassin_struck = False  # the Assassin has named a player
        self._order: list[int] = []
        self._idx = 0
        self._votes: dict[int, bool] = {}
        self._vote_prompt = ""
        self._fails = 0
        self._decision = None

    # ---- setup ------------------------------------------------------------------------------
    def _setup(self, roles: list[str] | None) -> None:
        self._reset_state()
        cfg = self.config
        n = cfg.n_players
        deck = cfg.deck()
        self.leader = self.rng.randrange(n)
        if roles is None:
            roles = list(deck)
            self.rng.shuffle(roles)
        elif sorted(roles) != sorted(deck):
            raise ConfigError(
                f"avalon: roles {roles} are not a permutation of the configured deck {sorted(deck)}"
            )
        self.players = [
            Player(pid, player_name(pid), role, ROLE_TEAM[role]) for pid, role in enumerate(roles)
        ]
        self.n_evil = EVIL_COUNT[n]
        self.team_sizes = TEAM_SIZES[n]
        self.played = {pid: [] for pid in range(n)}
        self._log_knowledge(roles)
        self._start_discussion()

    def _log_knowledge(self, roles: list[str]) -> None:
        evil = [p for p, r in enumerate(roles) if ROLE_TEAM[r] == EVIL]
        for pid, role in enumerate(roles):
            if role == "merlin":
                hidden = {"mordred"} | (set() if self.config.merlin_sees_oberon else {"oberon"})
                sees = [p for p in evil if roles[p] not in hidden]
            elif role == "percival":
                sees = [p for p, r in enumerate(roles) if r in ("merlin", "morgana")]
            elif ROLE_TEAM[role] == EVIL and role != "oberon":
                sees = [p for p in evil if p != pid and roles[p] != "oberon"]
            else:
                continue
            self.sees[pid] = tuple(sees)
            self.log("knowledge", pid, {"sees": sees}, (pid,))

    # ---- flow -------------------------------------------------------------------------------
    @property
    def team_size(self) -> int:
        return self.team_sizes[self.quest - 1]

    def _seat_order(self) -> list[int]:
        n = self.config.n_players
        return [(self.leader + i) % n for i in range(n)]

    def _start_discussion(self) -> None:
        self.phase = "discussion"
        self.round = self.quest
        self._order = self._seat_order()
        self._idx = 0
        self._set_decision()

    def _set_decision(self) -> None:
        """Compute the pending decision once per state change (``decision()`` returns it)."""
        phase = self.phase
        q, a = self.quest, self.attempt
        if phase == "discussion":
            pid = self._order[self._idx]
            self._decision = Decision(
                pid, SPEAK, None, f"Quest {q}, attempt {a}: discussion; say something to the table."
            )
        elif phase == "proposal":
            size = self.team_size
            self._decision = Decision(
                self.leader,
                KIND_PROPOSE,
                team_options(self.config.n_players, size),
                f"Quest {q}, attempt {a}: you lead; propose a team of {size} players.",
            )
        elif phase == "vote":
            self._decision = Decision(
                self._order[self._idx], KIND_VOTE, _VOTE_OPTIONS, self._vote_prompt
            )
        elif phase == "quest":
            pid = self.team[self._idx]
            good = self.players[pid].team == GOOD
            self._decision = Decision(
                pid,
                KIND_QUEST,
                _GOOD_CARDS if good else _EVIL_CARDS,
                f"Quest {q}: play Success (True)" + ("." if good else " or Fail (False)."),
            )
        elif phase == "assassination":
            assassin = self._assassin()
            known = set(self.sees.get(assassin, ()))
            options = tuple(
                p for p in range(self.config.n_players) if p != assassin and p not in known
            )
            prompt = "Name the player you believe is Merlin."
            if self._may_pass():
                options += (None,)
                prompt = (
                    f"Quest {q} is over. Name the player you believe is Merlin (your one "
                    "attempt: right, evil wins; wrong, the game goes on), or None to wait."
                )
            self._decision = Decision(assassin, KIND_ASSASSINATE, options, prompt)
        else:
            self._decision = None

    def _assassin(self) -> int:
        return next(p.id for p in self.players if p.role == "assassin")

    def _any_quest(self) -> bool:
        return self.config.assassin_timing == "once_after_any_quest"

    def _may_pass(self) -> bool:
        """Whether the Assassin may keep the attempt for later (not at the last chance)."""
        return self._any_quest() and self.quest_results.count(True) < WINS_NEEDED

    def decision(self) -> Decision | None:
        return self._decision

    def _apply(self, decision: Decision, action: Any) -> None:
        # base.step checks membership, where True == 1: also insist on the option's type
        if decision.options is not None and not any(
            type(action) is type(o) for o in decision.options
        ):
            raise IllegalActionError(
                f"avalon: illegal action {action!r} by {player_name(decision.player)} for "
                f"{decision.kind!r}: expected a {type(decision.options[0]).__name__}; "
                f"legal: {list(decision.options)}"
            )
        phase = self.phase
        if phase == "discussion":
            self.log("speech", decision.player, {"text": action})
            self._idx += 1
            if self._idx == len(self._order):
                self.phase = "proposal"
            self._set_decision()
        elif phase == "proposal":
            self.team = tuple(action)
            self._vote_prompt = (
                f"Quest {self.quest}, attempt {self.attempt}: approve (True) or reject (False) "
                f"the team {_names(self.team)}."
            )
            self.log(
                "propose",
                decision.player,
                {"quest": self.quest, "attempt": self.attempt, "team": list(action)},
            )
            self.phase = "vote"
            self._order = self._seat_order()
            self._idx = 0
            self._votes = {}
            self._set_decision()
        elif phase == "vote":
            self._votes[decision.player] = action
            self._idx += 1
            if self._idx == len(self._order):
                self._reveal_votes()
            else:
                self._set_decision()
        elif phase == "quest":
            self.played[decision.player].append([self.quest, action])
            if not action:
                self._fails += 1
            self._idx += 1
            if self._idx == len(self.team):
                self._resolve_quest()
            else:
                self._set_decision()
        elif phase == "assassination":
            if action is None:  # the Assassin waits (assassin_timing="once_after_any_quest")
                self.log("assassinate", decision.player, {"target": None}, (decision.player,))
                self._next_quest()
                return
            self.assassin_target = action
            self.assassin_struck = True
            self.log("assassinate", decision.player, {"target": action})
            if self.players[action].role == "merlin":
                self._finish(EVIL, "merlin_assassinated")
            elif not self._any_quest() or self.quest_results.count(True) == WINS_NEEDED:
                self._finish(GOOD, "assassin_missed")
            else:
                self._next_quest()
        else:  # pragma: no cover - no decision is pending when over
            raise GameError(f"avalon: no action expected in phase {phase!r}")

    def _reveal_votes(self) -> None:
        n = self.config.n_players
        for pid in range(n):
            self.log("vote", pid, {"approve": self._votes[pid]})
        approvals = sum(self._votes.values())
        approved = approvals * 2 > n or (
            approvals * 2 == n and self.config.tied_team_vote == "approved"
        )
        self.log("team_result", None, {"approved": approved, "approvals": approvals})
        self.leader = (self.leader + 1) % n
        forced = (
            not approved
            and self.attempt == MAX_ATTEMPTS
            and self.config.fifth_rejection == "quest_goes_anyway"
        )
        if forced:
            self.log(
                "forced_team",
                None,
                {"quest": self.quest, "attempt": self.attempt, "team": list(self.team)},
            )
        if approved or forced:
            self.phase = "quest"
            self._idx = 0
            self._fails = 0
            self._set_decision()
        elif self.attempt == MAX_ATTEMPTS:
            self._finish(EVIL, "five_rejections")
        else:
            self.attempt += 1
            if self.config.discussion == "first_attempt":
                self.phase = "proposal"  # the next leader proposes without a discussion
                self._set_decision()
            else:
                self._start_discussion()

    def _resolve_quest(self) -> None:
        success = self._fails < fails_needed(self.config.n_players, self.quest)
        self.log(
            "quest",
            None,
            {
                "quest": self.quest,
                "team": list(self.team),
                "fails": self._fails,
                "success": success,
            },
        )
        self.quest_results.append(success)
        if self.quest_results.count(False) == WINS_NEEDED:
            self._finish(EVIL, "three_fails")
        elif self._any_quest() and not self.assassin_struck:
            self.phase = "assassination"
            self._set_decision()
        elif self.quest_results.count(True) == WINS_NEEDED:
            if self._any_quest():  # the one attempt was spent and missed
                self._finish(GOOD, "assassin_missed")
            else:
                self.phase = "assassination"
                self._set_decision()
        else:
            self._next_quest()

    def _next_quest(self) -> None:
        self.quest += 1
        self.attempt = 1
        self._start_discussion()

    def _finish(self, winner: str, reason: str) -> None:
        self.winner, self.reason = winner, reason
        self.phase = "over"
        self._decision = None

    # ---- queries ----------------------------------------------------------------------------
    def result(self) -> dict[str, Any]:
        if self.winner is None:
            raise GameError("avalon: the game is not finished; result() is only defined at the end")
        return {
            "winner": self.winner,
            "winners": [p.id for p in self.players if p.team == self.winner],
            "reason": self.reason,
        }

    def next_speaker(self) -> int | None:
        if self.phase != "discussion" or self._decision is None:
            return None
        nxt = self._idx + 1
        return self._order[nxt] if nxt < len(self._order) else None

    def private_knowledge(self, player: int) -> dict[str, Any]:
        me = self.players[player]
        out: dict[str, Any] = {"role": me.role, "team": me.team}
        if player in self.sees:
            out["sees"] = list(self.sees[player])
        if self.played.get(player):
            out["cards_played"] = [list(x) for x in self.played[player]]
        return out

    def public_state(self) -> dict[str, Any]:
        return {
            "quest": self.quest,
            "attempt": self.attempt,
            "leader": self.leader,
            "team_sizes": list(self.team_sizes) if self.players else [],
            "fails_needed": fails_needed(self.config.n_players, self.quest),
            "quest_results": list(self.quest_results),
            "successes": self.quest_results.count(True),
            "failures": self.quest_results.count(False),
            "team": list(self.team) if self.phase in ("vote", "quest") else None,
        }


def _names(ids: list[int] | tuple[int, ...]) -> str:
    return ", ".join(player_name(p) for p in ids)
