"""Werewolf, the paper setup: 7 players, 2 Werewolf, Seer, Guardian, 3 Villager.

The rules, options and results: docs/games.md, "Werewolf"; the events and their data:
docs/records.md. Sources: the Witch/Guard setup of Xu et al. 2023 ("Exploring Large
Language Models for Communication Games: An Empirical Study on Werewolf": 2 werewolf, seer,
witch, guardian, 2 villager) and the Doctor setup of LSPO (Xu et al. 2023, "Language Agents
with Reinforcement Learning for Strategic Play in the Werewolf Game": 2 werewolf, seer,
doctor, 3 villager) are both reached through the ``roles`` option (their Guard is our
``guardian``).

Night N is followed by day N (``round`` = N, from 1); phases "setup" (round 0), "night",
"day", "vote". Decisions: ``wolf_kill``, ``protect`` (guardian and doctor), ``save``,
``poison`` (None: no poison), ``inspect``, ``speak``, ``vote`` (None: abstain).
``n_players`` is ``len(roles)`` (a Config property).
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

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
    Player,
    RoleList,
    player_name,
)

#: role -> team
ROLE_TEAM: dict[str, str] = {
    "werewolf": "werewolf",
    "seer": "village",
    "guardian": "village",
    "villager": "village",
    "witch": "village",
    "doctor": "village",
}
#: roles with a night action: at most one of each
UNIQUE_ROLES: tuple[str, ...] = ("seer", "guardian", "witch", "doctor")
#: the paper setup (7 players)
PAPER_ROLES: tuple[str, ...] = (
    "werewolf",
    "werewolf",
    "seer",
    "guardian",
    "villager",
    "villager",
    "villager",
)
#: Xu et al. 2023 (Witch/Guard) and LSPO (Doctor) setups, for reference and tests
XU_ROLES: tuple[str, ...] = (
    "werewolf",
    "werewolf",
    "seer",
    "witch",
    "guardian",
    "villager",
    "villager",
)
LSPO_ROLES: tuple[str, ...] = (
    "werewolf",
    "werewolf",
    "seer",
    "doctor",
    "villager",
    "villager",
    "villager",
)
#: protector role -> may protect the same player on two nights in a row (by default; the
#: guardian_may_repeat option lifts the guardian's restriction)
REPEAT_PROTECT: dict[str, bool] = {"guardian": False, "doctor": True}
#: wolf_win option -> result reason of a werewolf win
WOLF_WIN_REASON: dict[str, str] = {"parity": "wolf_parity", "all_villagers_dead": "villagers_dead"}


def _paper_roles_if_none(roles: tuple[str, ...] | None) -> tuple[str, ...]:
    return PAPER_ROLES if roles is None else roles


class WerewolfConfig(GameOptions):
    #: role list (one per player; None = the paper setup of 7)
    roles: Annotated[RoleList, AfterValidator(_paper_roles_if_none)] = PAPER_ROLES
    #: voters may abstain (vote None)
    allow_abstain: Flag = True
    #: a tied vote: "random" (one of the tied players, paper release) or "none" (nobody)
    vote_tie: Literal["random", "none"] = "random"
    #: announce a dead player's role
    reveal_on_death: Flag = False
    #: werewolf win: "parity" (wolves >= others alive) or "all_villagers_dead"
    wolf_win: Literal["parity", "all_villagers_dead"] = "parity"
    #: days before the game ends as a draw
    max_days: Annotated[Count, Field(ge=1)] = 10
    #: the guardian may protect the same player on two nights in a row (paper release: true)
    guardian_may_repeat: Annotated[Flag, RECORD_IF_SET] = False
    #: the victim from the wolves' choices: "plurality_lowest_seat" or "last_wolf" (release)
    wolf_victim: Annotated[Literal["plurality_lowest_seat", "last_wolf"], RECORD_IF_SET] = (
        "plurality_lowest_seat"
    )

    @model_validator(mode="after")
    def _legal_roles(self) -> WerewolfConfig:
        roles = self.roles
        bad = [r for r in roles if r not in ROLE_TEAM]
        if bad:
            raise ConfigError(
                f"werewolf: roles contains unknown role(s) {bad}; allowed: {', '.join(ROLE_TEAM)}"
            )
        counts = Counter(roles)
        for r in UNIQUE_ROLES:
            if counts[r] > 1:
                raise ConfigError(f"werewolf: roles has {counts[r]} {r}; at most one is allowed")
        wolves = counts["werewolf"]
        if wolves < 1 or wolves >= len(roles) - wolves:
            raise ConfigError(
                f"werewolf: roles {list(roles)} has {wolves} werewolves for {len(roles)} players; "
                "need at least one werewolf and fewer werewolves than other players"
            )
        return self

    @property
    def n_players(self) -> int:
        return len(self.roles)


class Werewolf(Game):
    """The Werewolf engine (see the module docstring for the rules)."""

    spec = GameSpec(
        name="werewolf",
        title="Werewolf",
        options=WerewolfConfig,
        camps=("werewolf", "village"),
        tested_camps=("werewolf", "village"),
    )

    # ---- setup ---------------------------------------------------------------------------
    def _setup(self, roles: list[str] | None) -> None:
        cfg = self.config
        if roles is None:
            roles = list(cfg.roles)
            self.rng.shuffle(roles)
        elif sorted(roles) != sorted(cfg.roles):
            raise ConfigError(
                f"werewolf: roles {roles} are not a permutation of the configured roles "
                f"{list(cfg.roles)}"
            )
        self.players = [Player(i, player_name(i), r, ROLE_TEAM[r]) for i, r in enumerate(roles)]
        self.alive = [True] * len(roles)
        self.wolves = tuple(i for i, r in enumerate(roles) if r == "werewolf")
        self._role_seat = {r: i for i, r in enumerate(roles) if r in UNIQUE_ROLES}
        self.last_protect: dict[int, int | None] = {}
        self.potions = {"save": True, "poison": True}
        self._winner: str | None = None
        self._reason = ""
        self._queue: list[tuple[str, int]] = []
        self._decision: Decision | None = None
        self._order: list[int] = []
        self.log("werewolves", None, {"werewolves": list(self.wolves)}, self.wolves)
        self._begin_night()
        self._advance()

    # ---- state machine -------------------------------------------------------------------
    def living(self) -> list[int]:
        return [i for i, a in enumerate(self.alive) if a]

    def _seat(self, role: str) -> int | None:
        """The living player of a unique role, or None."""
        pid = self._role_seat.get(role)
        return pid if pid is not None and self.alive[pid] else None

    def _begin_night(self) -> None:
        self.round += 1
        self.phase = "night"
        self._wolf_choices: list[tuple[int, int]] = []
        self._victim: int | None = None
        self._protected: set[int] = set()
        self._saved = False
        self._poisoned: int | None = None
        queue = [("wolf_kill", w) for w in self.wolves if self.alive[w]]
        for role in ("guardian", "doctor"):
            if (pid := self._seat(role)) is not None:
                queue.append(("protect", pid))
        if (pid := self._seat("witch")) is not None:
            queue += [("save", pid), ("poison", pid)]
        if (pid := self._seat("seer")) is not None:
            queue.append(("inspect", pid))
        self._queue = queue

    def _make_decision(self, kind: str, pid: int) -> Decision | None:
        """The decision for a queued (kind, player), or None to skip it."""
        night = f"Night {self.round}"
        if kind == SPEAK:
            return Decision(pid, SPEAK, None, f"Day {self.round}: your speech to everyone.")
        others = tuple(i for i in self.living() if i != pid)
        if kind == "vote":
            opts = others + (None,) if self.config.allow_abstain else others
            return Decision(
                pid,
                "vote",
                opts,
                f"Day {self.round}: vote to eliminate a player"
                + (" (or None to abstain)." if self.config.allow_abstain else "."),
            )
        if kind == "wolf_kill":
            opts = tuple(i for i in others if i not in self.wolves)
            return Decision(
                pid, kind, opts, f"{night}: choose a player for the werewolves to kill."
            )
        if kind == "protect":
            role = self.players[pid].role
            last = self.last_protect.get(pid)
            repeat = REPEAT_PROTECT[role] or self.config.guardian_may_repeat
            opts = tuple(i for i in self.living() if repeat or i != last)
            return Decision(pid, kind, opts, f"{night}: choose a player to protect tonight.")
        if kind == "save":
            if not self.potions["save"] or self._victim is None:
                return None
            return Decision(
                pid,
                kind,
                (True, False),
                f"{night}: the werewolves attack {player_name(self._victim)}; use your save potion?",
            )
        if kind == "poison":
            if not self.potions["poison"] or self._saved:
                return None
            return Decision(
                pid, kind, (None, *others), f"{night}: poison a player (or None to pass)."
            )
        if kind == "inspect":
            return Decision(pid, kind, others, f"{night}: choose a player to inspect.")
        raise AssertionError(kind)

    def _advance(self) -> None:
        """Compute the next decision, running the phase transitions in between."""
        while self._winner is None:
            while self._queue:
                d = self._make_decision(*self._queue[0])
                if d is not None:
                    self._decision = d
                    return
                self._queue.pop(0)
            if self.phase == "night":
                self._dawn()
            elif self.phase == "day":
                self.phase = "vote"
                self._votes: dict[int, int | None] = {}
                self._queue = [("vote", i) for i in self.living()]
            else:
                self._resolve_vote()
        self._decision = None

    def _dawn(self) -> None:
        dead = []
        v = self._victim
        if v is not None and v not in self._protected and not self._saved:
            dead.append(v)
        if self._poisoned is not None and self._poisoned not in dead:
            dead.append(self._poisoned)
        dead.sort()
        self.phase = "day"
        for pid in dead:
            self.alive[pid] = False
        self.log("death", None, {"players": dead})
        self._reveal(dead)
        if self._check_win():
            return
        order = self.living()
        self.rng.shuffle(order)
        self._order = order
        self._queue = [(SPEAK, i) for i in order]

    def _resolve_vote(self) -> None:
        for voter, target in self._votes.items():
            self.log("vote", voter, {"target": target})
        counts = Counter(t for t in self._votes.values() if t is not None)
        out = None
        if counts:
            top = max(counts.values())
            tied = sorted(t for t, c in counts.items() if c == top)
            if len(tied) == 1:
                out = tied[0]
            elif self.config.vote_tie == "random":
                out = self.rng.choice(tied)
        if out is not None:
            self.alive[out] = False
        self.log("eliminate", None, {"player": out})
        if out is not None:
            self._reveal([out])
        if self._check_win():
            return
        if self.round >= self.config.max_days:
            self._end("draw", "day_limit")
            return
        self._begin_night()

    def _reveal(self, dead: list[int]) -> None:
        if self.config.reveal_on_death:
            for pid in dead:
                self.log("role_reveal", None, {"player": pid, "role": self.players[pid].role})

    def _check_win(self) -> bool:
        wolves = sum(1 for w in self.wolves if self.alive[w])
        others = sum(self.alive) - wolves
        if wolves == 0:
            self._end("village", "werewolves_dead")
        elif others == 0 or (self.config.wolf_win == "parity" and wolves >= others):
            self._end("werewolf", WOLF_WIN_REASON[self.config.wolf_win])
        return self._winner is not None

    def _end(self, winner: str, reason: str) -> None:
        self._winner = winner
        self._reason = reason
        self._queue = []
        self.phase = "over"

    # ---- protocol ------------------------------------------------------------------------
    def decision(self) -> Decision | None:
        return self._decision

    def _apply(self, decision: Decision, action: Any) -> None:
        kind, pid = decision.kind, decision.player
        self._queue.pop(0)
        if kind == SPEAK:
            self.log("speech", pid, {"text": action})
        elif kind == "vote":
            self._votes[pid] = action
        elif kind == "wolf_kill":
            self._wolf_choices.append((pid, action))
            self.log("wolf_choice", pid, {"target": action}, self.wolves)
            if not self._queue or self._queue[0][0] != "wolf_kill":
                if self.config.wolf_victim == "last_wolf":
                    self._victim = self._wolf_choices[-1][1]
                else:
                    self._victim = self._wolf_target(self._wolf_choices)
                witch = self._seat("witch")
                seen = self.wolves if witch is None else (*self.wolves, witch)
                self.log("kill", None, {"target": self._victim}, seen)
        elif kind == "protect":
            self._protected.add(action)
            self.last_protect[pid] = action
            self.log("protect", pid, {"target": action}, (pid,))
        elif kind == "save":
            if action:
                self.potions["save"] = False
                self._saved = True
                self.log("save", pid, {"target": self._victim}, (pid,))
        elif kind == "poison":
            if action is not None:
                self.potions["poison"] = False
                self._poisoned = action
                self.log("poison", pid, {"target": action}, (pid,))
        elif kind == "inspect":
            is_wolf = self.players[action].role == "werewolf"
            self.log("inspect", pid, {"target": action, "is_werewolf": is_wolf}, (pid,))
        self._advance()

    @staticmethod
    def _wolf_target(choices: list[tuple[int, int]]) -> int:
        """Most-named target; a tie goes to the lowest-seat wolf naming a tied target."""
        counts = Counter(t for _, t in choices)
        top = max(counts.values())
        return min((w, t) for w, t in choices if counts[t] == top)[1]

    def result(self) -> dict[str, Any]:
        if self._winner is None:
            raise GameError("werewolf: the game is not finished")
        winners = [p.id for p in self.players if p.team == self._winner]
        return {"winner": self._winner, "winners": winners, "reason": self._reason}

    def next_speaker(self) -> int | None:
        d = self._decision
        if d is None or d.kind != SPEAK:
            return None
        if len(self._queue) > 1 and self._queue[1][0] == SPEAK:
            return self._queue[1][1]
        return None

    # ---- views ---------------------------------------------------------------------------
    def private_knowledge(self, player: int) -> dict[str, Any]:
        role = self.players[player].role
        out: dict[str, Any] = {"role": role}
        if role == "werewolf":
            out["werewolves"] = list(self.wolves)
        elif role == "seer":
            out["inspected"] = {
                str(e.data["target"]): e.data["is_werewolf"]
                for e in self.events
                if e.type == "inspect" and e.player == player
            }
        elif role in REPEAT_PROTECT:
            out["last_protected"] = self.last_protect.get(player)
        elif role == "witch":
            out["potions"] = dict(self.potions)
        return out

    def public_state(self) -> dict[str, Any]:
        return {
            "day": self.round,
            "alive": self.living(),
            "dead": [i for i, a in enumerate(self.alive) if not a],
            "max_days": self.config.max_days,
        }


__all__ = ["LSPO_ROLES", "PAPER_ROLES", "ROLE_TEAM", "XU_ROLES", "Werewolf", "WerewolfConfig"]
