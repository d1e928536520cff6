"""One Night Ultimate Werewolf (ONUW): one night of hidden actions, one day, one vote.

The rules, options and results: docs/games.md, "One Night Ultimate Werewolf"; the events and
their data: docs/records.md. Sources: the Bezier Games rulebook (One Night Ultimate Werewolf,
2014) for the Doppelganger, the Minion with no werewolf among the players, and the Tanner;
the paper setup of Jin et al. 2024 (5 players, 7 cards: werewolf, villager x2, seer, robber,
troublemaker, insomniac; 2 centre cards; 3 discussion rounds).

``Player.role``/``team`` are the card as DEALT; what counts for winning is the card held at
the end of the night (``final_roles``). ``reset(seed, roles)`` takes the player cards
followed by the centre cards. Choices: a player is its id (int); centre cards are
``"center:i"`` (one card) and ``"center:i,j"`` (two cards, i < j), 0-based; a
troublemaker's choice is a tuple ``(a, b)`` of player ids with a < b.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from stackelberg.games.base import (
    ALL,
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

#: card -> team
ROLE_TEAM: dict[str, str] = {
    "doppelganger": "village",
    "werewolf": "werewolf",
    "minion": "werewolf",
    "mason": "village",
    "seer": "village",
    "robber": "village",
    "troublemaker": "village",
    "drunk": "village",
    "insomniac": "village",
    "villager": "village",
    "tanner": "tanner",
    "hunter": "village",
}
#: the paper deck (5 players, 2 centre cards)
PAPER_ROLES: tuple[str, ...] = (
    "werewolf",
    "villager",
    "villager",
    "seer",
    "robber",
    "troublemaker",
    "insomniac",
)
_BASE = ("werewolf", "seer", "robber", "troublemaker", "villager")
#: number of cards -> default deck when no ``roles`` option is given
DEFAULT_DECKS: dict[int, tuple[str, ...]] = {
    4: ("werewolf", "seer", "robber", "troublemaker"),
    5: _BASE,
    6: ("werewolf", *_BASE),  # rulebook 3-player deck
    7: PAPER_ROLES,
    8: ("werewolf", *PAPER_ROLES),  # rulebook 5-player deck
    9: ("werewolf", *PAPER_ROLES, "drunk"),
    10: ("werewolf", *PAPER_ROLES, "drunk", "hunter"),
    11: ("werewolf", *PAPER_ROLES, "minion", "mason", "mason"),
    12: ("werewolf", *PAPER_ROLES, "minion", "mason", "mason", "drunk"),
    13: ("werewolf", *PAPER_ROLES, "minion", "mason", "mason", "drunk", "hunter"),
}
#: night roles with a decision -> the decision/event kind (also used by a doppelganger copy)
NIGHT_ACTIONS: dict[str, str] = {
    "seer": "seer",
    "robber": "rob",
    "troublemaker": "troublemake",
    "drunk": "drunk",
}
#: night wake order after the doppelganger (group wake-ups and individual actions)
WAKE_ORDER: tuple[str, ...] = (
    "werewolf",
    "minion",
    "mason",
    "seer",
    "robber",
    "troublemaker",
    "drunk",
    "insomniac",
)
#: the most cards of one role in a deck
MAX_COUNT: dict[str, int] = {"doppelganger": 1}
DECISION_KINDS = frozenset(
    {"doppelganger", "werewolf_peek", "seer", "rob", "troublemake", "drunk", SPEAK, "vote"}
)
#: team order in a joint "winner" string
TEAM_ORDER: tuple[str, ...] = ("village", "werewolf", "tanner")
PROMPTS: dict[str, str] = {
    "doppelganger": "Night: you are the Doppelganger; choose another player whose card you look at and copy.",
    "werewolf_peek": "Night: you are the only werewolf; choose a centre card to look at ('center:i').",
    "seer": "Night: look at another player's card (a player id) or two centre cards ('center:i,j').",
    "rob": "Night: choose a player to swap cards with; you then see your new card.",
    "troublemake": "Night: choose two other players (a, b) whose cards you swap without looking.",
    "drunk": "Night: choose a centre card ('center:i') to swap with your card without looking.",
    "vote": "Vote: choose the player to kill; votes are revealed together.",
}


def role_name(role: str) -> str:
    return role.replace("_", " ").title()


def center_option(*indexes: int) -> str:
    return "center:" + ",".join(str(i) for i in indexes)


def parse_center(option: str) -> list[int]:
    return [int(x) for x in option.split(":", 1)[1].split(",")]


class ONUWConfig(GameOptions):
    #: number of players (3..10)
    n_players: Annotated[Count, Field(ge=3, le=10)] = 5
    #: face-down centre cards (1..3; 2 = paper setup, 3 = rulebook)
    center_cards: Annotated[Count, Field(ge=1, le=3)] = 2
    #: explicit card list, n_players + center_cards long (None = DEFAULT_DECKS by card count)
    roles: RoleList = None
    #: discussion rounds before the vote; each player speaks once per round in seat order
    discussion_rounds: Annotated[Count, Field(ge=0, le=10)] = 3
    #: a player may vote for themself
    allow_self_vote: Flag = False
    #: "seat" (seat order every round) or "shuffled_once" (one random order for the day)
    speaking_order: Annotated[Literal["seat", "shuffled_once"], RECORD_IF_SET] = "seat"
    #: a lone werewolf looks at one centre card
    lone_wolf_peek: Annotated[Flag, RECORD_IF_SET] = True
    #: no werewolf among the players: "village_wins_if_nobody_dies" or "draw"
    no_werewolf_result: Annotated[Literal["village_wins_if_nobody_dies", "draw"], RECORD_IF_SET] = (
        "village_wins_if_nobody_dies"
    )
    #: redraw the deal until a player holds a werewolf card
    deal_werewolf_to_player: Annotated[Flag, RECORD_IF_SET] = False

    @model_validator(mode="after")
    def _legal_deck(self) -> ONUWConfig:
        if self.roles is not None:
            self._check_roles()
        if self.deal_werewolf_to_player and "werewolf" not in self.deck:
            raise ConfigError(
                "onuw: deal_werewolf_to_player=true needs a werewolf card in the deck; "
                f"the cards are {', '.join(self.deck)}"
            )
        return self

    def _check_roles(self) -> None:
        n_cards = self.n_players + self.center_cards
        roles = self.roles
        bad = [r for r in roles if r not in ROLE_TEAM]
        if bad:
            raise ConfigError(
                f"onuw: roles contains unknown card(s) {bad}; allowed: {', '.join(ROLE_TEAM)}"
            )
        if len(roles) != n_cards:
            raise ConfigError(
                f"onuw: roles has {len(roles)} cards; need n_players + center_cards = "
                f"{self.n_players} + {self.center_cards} = {n_cards}"
            )
        counts = Counter(roles)
        for r, most in MAX_COUNT.items():
            if counts[r] > most:
                raise ConfigError(f"onuw: roles has {counts[r]} {r} cards; at most {most} allowed")

    @property
    def deck(self) -> tuple[str, ...]:
        """The cards in play (``roles`` or the default deck for the card count)."""
        return (
            self.roles
            if self.roles is not None
            else DEFAULT_DECKS[self.n_players + self.center_cards]
        )


class ONUW(Game):
    """The ONUW engine (see the module docstring for the rules)."""

    spec = GameSpec(
        name="onuw",
        title="One Night Ultimate Werewolf",
        options=ONUWConfig,
        camps=("werewolf", "village", "tanner"),
        tested_camps=("werewolf", "village"),  # the default deck has no tanner
    )

    # ---- setup ---------------------------------------------------------------------------
    def _setup(self, roles: list[str] | None) -> None:
        cfg = self.config
        deck = list(cfg.deck)
        n = cfg.n_players
        if roles is None:
            roles = deck
            self.rng.shuffle(roles)
            while cfg.deal_werewolf_to_player and "werewolf" not in roles[:n]:
                self.rng.shuffle(roles)
        elif sorted(roles) != sorted(deck):
            raise ConfigError(
                f"onuw: roles {roles} are not a permutation of the configured cards {deck} "
                "(player cards first, then the centre cards)"
            )
        self.cards: list[str] = roles[:n]
        self.center: list[str] = roles[n:]
        self.players = [
            Player(i, player_name(i), r, ROLE_TEAM[r]) for i, r in enumerate(self.cards)
        ]
        self.copy: str | None = None  # role copied by the doppelganger
        self.doppel: int | None = None
        self.votes: dict[int, int] = {}
        self.dead: list[int] = []
        self._result: dict[str, Any] | None = None
        self.log("deal", None, {"cards": list(self.cards), "center": list(self.center)}, [])
        self.phase = "night"
        self.round = 1
        dealt = self.cards
        queue: list[tuple[str, int | None, int]] = []
        queue += [("doppelganger", p, 1) for p in range(n) if dealt[p] == "doppelganger"]
        for role in WAKE_ORDER:
            if role in ("werewolf", "minion", "mason"):
                queue.append((role, None, 1))
            else:
                kind = NIGHT_ACTIONS.get(role, role)
                queue += [(kind, p, 1) for p in range(n) if dealt[p] == role]
        queue.append(("doppel_insomniac", None, 1))
        self.speaking_order = list(range(n))
        if cfg.speaking_order == "shuffled_once":
            self.rng.shuffle(self.speaking_order)
            if cfg.discussion_rounds:
                queue.append(("order", None, 1))
        queue += [
            (SPEAK, p, r) for r in range(1, cfg.discussion_rounds + 1) for p in self.speaking_order
        ]
        queue += [("vote", p, 1) for p in range(n)]
        queue.append(("reveal", None, 1))
        self._queue = queue
        self._qi = 0
        self._decision: Decision | None = None
        self._advance()

    # ---- flow ----------------------------------------------------------------------------
    def _advance(self) -> None:
        """Run automatic steps until a decision is pending (cached) or the game is over."""
        queue = self._queue
        while self._qi < len(queue):
            kind, p, rnd = queue[self._qi]
            if kind in DECISION_KINDS:
                self._set_phase(kind, rnd)
                self._decision = self._make_decision(kind, p, rnd)
                return
            self._qi += 1
            self._set_phase(kind, rnd)
            self._auto(kind, p)
        self._decision = None
        self.phase = "end"

    def _set_phase(self, kind: str, rnd: int) -> None:
        if kind in (SPEAK, "order"):
            self.phase, self.round = "day", rnd
        elif kind in ("vote", "reveal"):
            self.phase, self.round = "vote", rnd

    def _make_decision(self, kind: str, p: int, rnd: int) -> Decision:
        n = self.config.n_players
        others = tuple(q for q in range(n) if q != p)
        if kind == SPEAK:
            return Decision(
                p,
                SPEAK,
                None,
                f"Day, discussion round {rnd} of {self.config.discussion_rounds}: speak to the others.",
            )
        if kind in ("doppelganger", "rob"):
            options: tuple[Any, ...] = others
        elif kind == "werewolf_peek" or kind == "drunk":
            options = tuple(center_option(i) for i in range(len(self.center)))
        elif kind == "seer":
            options = others + tuple(
                center_option(i, j) for i, j in combinations(range(len(self.center)), 2)
            )
        elif kind == "troublemake":
            options = tuple(combinations(others, 2))
        else:  # vote
            options = tuple(range(n)) if self.config.allow_self_vote else others
        return Decision(p, kind, options, PROMPTS[kind])

    def decision(self) -> Decision | None:
        return self._decision

    def _apply(self, decision: Decision, action: Any) -> None:
        kind, p = decision.kind, decision.player
        self._qi += 1
        cards, center = self.cards, self.center
        if kind == SPEAK:
            self.log("speech", p, {"text": action})
        elif kind == "vote":
            self.votes[p] = action
        elif kind == "doppelganger":
            self.copy = cards[action]
            self.doppel = p
            self.log("doppelganger", p, {"target": action, "card": self.copy}, [p])
            if self.copy in NIGHT_ACTIONS:
                self._queue.insert(self._qi, (NIGHT_ACTIONS[self.copy], p, 1))
        elif kind == "werewolf_peek":
            (i,) = parse_center(action)
            self.log("werewolf_peek", p, {"center_index": i, "card": center[i]}, [p])
        elif kind == "seer":
            if isinstance(action, int):
                self.log("seer", p, {"target": action, "card": cards[action]}, [p])
            else:
                idx = parse_center(action)
                self.log("seer", p, {"center_indexes": idx, "cards": [center[i] for i in idx]}, [p])
        elif kind == "rob":
            cards[p], cards[action] = cards[action], cards[p]
            self.log("rob", p, {"target": action, "new_card": cards[p]}, [p])
        elif kind == "troublemake":
            a, b = action
            cards[a], cards[b] = cards[b], cards[a]
            self.log("troublemake", p, {"targets": [a, b]}, [p])
        elif kind == "drunk":
            (i,) = parse_center(action)
            cards[p], center[i] = center[i], cards[p]
            self.log("drunk", p, {"center_index": i}, [p])
        self._advance()

    def _woken(self, role: str) -> list[int]:
        """Players who wake as ``role``: dealt it, or a doppelganger who copied it."""
        return [
            p
            for p, r in enumerate(self.players)
            if r.role == role or (p == self.doppel and self.copy == role)
        ]

    def _auto(self, kind: str, p: int | None) -> None:
        if kind == "werewolf":
            wolves = self._woken("werewolf")
            if wolves:
                self.log("werewolves", None, {"werewolves": wolves}, wolves)
            if len(wolves) == 1 and self.config.lone_wolf_peek:
                self._queue.insert(self._qi, ("werewolf_peek", wolves[0], 1))
        elif kind == "minion":
            minions = self._woken("minion")
            if minions:
                self.log("minion", None, {"werewolves": self._woken("werewolf")}, minions)
        elif kind == "mason":
            masons = self._woken("mason")
            if masons:
                self.log("masons", None, {"masons": masons}, masons)
        elif kind == "insomniac":
            self.log("insomniac", p, {"card": self.cards[p]}, [p])
        elif kind == "doppel_insomniac":
            if self.doppel is not None and self.copy == "insomniac":
                d = self.doppel
                self.log("insomniac", d, {"card": self.cards[d]}, [d])
        elif kind == "order":
            self.log("speaking_order", None, {"order": list(self.speaking_order)})
        elif kind == "reveal":
            self._reveal()
        else:  # pragma: no cover - the queue only holds known kinds
            raise GameError(f"onuw: unknown step {kind!r}")

    def _reveal(self) -> None:
        n = self.config.n_players
        for p in range(n):
            self.log("vote", p, {"target": self.votes[p]})
        tally = Counter(self.votes.values())
        top = max(tally.values())
        dead = sorted(q for q, c in tally.items() if c == top) if top > 1 else []
        self.log("death", None, {"players": list(dead)})
        final = self.final_roles()
        queue = list(dead)
        while queue:
            h = queue.pop(0)
            target = self.votes[h]
            if final[h] == "hunter" and target not in dead:
                dead.append(target)
                queue.append(target)
                self.log("death", h, {"players": [target]})
        self.dead = dead
        self._result = self._winner(final, set(dead))

    # ---- results -------------------------------------------------------------------------
    def final_roles(self) -> list[str]:
        """Each player's card now, a doppelganger card counted as the role it copied."""
        copy = self.copy
        return [copy if c == "doppelganger" and copy is not None else c for c in self.cards]

    def _winner(self, final: list[str], dead: set[int]) -> dict[str, Any]:
        wolves = [p for p, r in enumerate(final) if r == "werewolf"]
        tanner_died = any(final[p] == "tanner" for p in dead)
        teams: list[str] = []
        if wolves:
            if any(p in dead for p in wolves):
                teams.append("village")
                reason = "werewolf_died"
            elif tanner_died:
                reason = "tanner_died"
            else:
                teams.append("werewolf")
                reason = "werewolves_survived"
        elif not dead:
            if self.config.no_werewolf_result == "village_wins_if_nobody_dies":
                teams.append("village")
            reason = "nobody_died"
        elif tanner_died:
            reason = "tanner_died"
        elif any(final[p] == "minion" for p in range(len(final))) and any(
            final[p] != "minion" for p in dead
        ):
            teams.append("werewolf")
            reason = "minion_survived"
        else:
            reason = "innocent_died"
        if tanner_died:
            teams.append("tanner")
        winners = [
            p for p, r in enumerate(final) if ROLE_TEAM[r] in teams and (r != "tanner" or p in dead)
        ]
        won = {ROLE_TEAM[final[p]] for p in winners}
        winner = "+".join(t for t in TEAM_ORDER if t in won) or "draw"
        return {"winner": winner, "winners": winners, "reason": reason, "final_roles": final}

    def result(self) -> dict[str, Any]:
        if self._result is None:
            raise GameError("onuw: the game is not finished")
        return self._result

    # ---- views ---------------------------------------------------------------------------
    def next_speaker(self) -> int | None:
        d = self._decision
        if d is None or d.kind != SPEAK:
            return None
        kind, p, rnd = self._queue[self._qi + 1]
        return p if kind == SPEAK and rnd == self._queue[self._qi][2] else None

    def private_knowledge(self, player: int) -> dict[str, Any]:
        """The dealt card and what the night showed this player (cards by position)."""
        seen_players: dict[str, str] = {}
        seen_center: dict[str, str] = {}
        out: dict[str, Any] = {"dealt_role": self.players[player].role}
        for ev in self.events:
            if ev.visible_to == ALL or player not in ev.visible_to:
                continue
            t, d = ev.type, ev.data
            if t in ("werewolves", "minion"):
                out["werewolves"] = d["werewolves"]
            elif t == "masons":
                out["masons"] = d["masons"]
            elif t == "doppelganger":
                seen_players[str(d["target"])] = d["card"]
                out["copied_role"] = d["card"]
            elif t == "werewolf_peek":
                seen_center[str(d["center_index"])] = d["card"]
            elif t == "seer":
                if "target" in d:
                    seen_players[str(d["target"])] = d["card"]
                else:
                    seen_center.update(
                        {str(i): c for i, c in zip(d["center_indexes"], d["cards"], strict=True)}
                    )
            elif t == "rob":
                out["robbed"] = d["target"]
                out["card_now"] = d["new_card"]
            elif t == "troublemake":
                out["swapped"] = d["targets"]
            elif t == "drunk":
                out["swapped_with_center"] = d["center_index"]
            elif t == "insomniac":
                out["card_now"] = d["card"]
        if seen_players:
            out["seen_players"] = seen_players
        if seen_center:
            out["seen_center"] = seen_center
        return out

    def public_state(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "n_players": self.config.n_players,
            "center_cards": self.config.center_cards,
            "cards_in_play": sorted(self.config.deck),
            "discussion_rounds": self.config.discussion_rounds,
        }
        if self.phase == "end":
            out["votes"] = {str(p): t for p, t in sorted(self.votes.items())}
            out["dead"] = sorted(self.dead)
        return out


__all__ = ["DEFAULT_DECKS", "ONUW", "PAPER_ROLES", "ROLE_TEAM", "ONUWConfig"]
