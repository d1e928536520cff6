"""The strategist's belief over the hidden roles: logits per player for evil and for Merlin.

The role assignments a seat considers are those its own knowledge allows (the engine deals
each candidate and shows the seat what it would see; the ones that match are kept) and the
quest results allow (a quest cannot show more Fail cards than it had evil members; a
missed assassination names someone who is not Merlin). Each assignment is weighted by the
players' logits: for evil, the scripted player's suspicion (its posterior as a logit plus
its other suspicion terms); for Merlin, its "looks like Merlin" score. Strategist's belief
step adds the LLM's ratings after each discussion round: -2..+2 per player for evil and for
Merlin, ``RATING_LOGIT`` each, kept for the rest of the game.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Sequence

from stackelberg.agents.lookahead.value import my_p_evil
from stackelberg.agents.scripted.avalon import AvalonScripted
from stackelberg.games.avalon import EVIL, ROLE_TEAM, Avalon
from stackelberg.games.base import ALL, Game

#: the logit one point of an LLM rating adds (the ratings run from -2 to +2)
RATING_LOGIT = 0.5
MAX_RATING = 2
#: the scripted posterior is clipped before it becomes a logit: never certain from votes
CLIP = 0.03

Roles = tuple[str, ...]


def consistent_assignments(game: Game, me: int) -> list[Roles]:
    """Every deal of the game's deck that gives ``me`` its role and what it saw."""
    mine = game.players[me].role
    sees = tuple(getattr(game, "sees", {}).get(me, ()))
    deck = list(game.config.deck())
    deck.remove(mine)
    probe = Avalon(game.config)
    out = []
    for rest in sorted(set(itertools.permutations(deck))):
        roles = [*rest[:me], mine, *rest[me:]]
        probe.reset(game.seed or 0, roles)
        if tuple(probe.sees.get(me, ())) == sees:
            out.append(tuple(roles))
    return out


def public_results(game: Game) -> tuple[list[tuple[list[int], int]], list[tuple[int, int]]]:
    """(team, fails) of every quest, and (assassin, target) of every missed assassination."""
    quests = [(e.data["team"], e.data["fails"]) for e in game.events if e.type == "quest"]
    missed = [
        (e.player, e.data["target"])
        for e in game.events
        if e.type == "assassinate" and e.visible_to == ALL and e.data["target"] is not None
    ]  # a named Merlin ends the game: while it goes on, every public guess missed
    return quests, missed


def fits_public(
    roles: Roles, quests: list[tuple[list[int], int]], missed: list[tuple[int, int]]
) -> bool:
    """Whether an assignment fits the public results: no quest shows more Fail cards than it
    had evil members, and a public guess came from the Assassin and named no Merlin."""
    for team, fails in quests:
        if fails > sum(ROLE_TEAM[roles[p]] == EVIL for p in team):
            return False
    return all(roles[a] == "assassin" and roles[t] != "merlin" for a, t in missed)


def logit(p: float) -> float:
    p = min(max(p, CLIP), 1 - CLIP)
    return math.log(p / (1 - p))


class RoleBelief:
    """One seat's belief: its consistent assignments and the LLM's ratings so far."""

    def __init__(self, view: AvalonScripted) -> None:
        self.view = view
        self.assignments = consistent_assignments(view.game, view.player)
        self.evil_shift = [0.0] * view.n
        self.merlin_shift = [0.0] * view.n

    def rate(self, ratings: dict[int, tuple[int, int]]) -> None:
        """Add a round's ratings, (evil, Merlin) per player, as logits."""
        for p, (evil, merlin) in ratings.items():
            self.evil_shift[p] += RATING_LOGIT * evil
            self.merlin_shift[p] += RATING_LOGIT * merlin

    def evil_logits(self) -> list[float]:
        view = self.view
        p_evil = my_p_evil(view)
        extra = not (view.evil or view.my_role == "merlin")  # the others' suspicion terms
        return [
            logit(p_evil[p]) + (view.risk(p) - p_evil[p] if extra else 0.0) + self.evil_shift[p]
            for p in range(view.n)
        ]

    def merlin_logits(self) -> list[float]:
        return [m + s for m, s in zip(self.view.merlinish, self.merlin_shift, strict=True)]

    def weighted(self) -> list[tuple[Roles, float]]:
        """The assignments that fit the public results, with their weights (summing to 1)."""
        me = self.view.player
        evil, merlin = self.evil_logits(), self.merlin_logits()
        quests, missed = public_results(self.view.game)
        fitting = [a for a in self.assignments if fits_public(a, quests, missed)]
        fitting = fitting or self.assignments  # the results contradict every one: ignore them
        out = []
        for roles in fitting:
            score = 0.0
            for p, role in enumerate(roles):
                if p == me:
                    continue
                sign = 1.0 if ROLE_TEAM[role] == EVIL else -1.0
                score -= math.log1p(math.exp(-sign * evil[p]))
                if role == "merlin":
                    score += merlin[p]
            out.append((roles, score))
        peak = max(s for _, s in out)
        weights = [math.exp(s - peak) for _, s in out]
        total = sum(weights)
        return [(roles, w / total) for (roles, _), w in zip(out, weights, strict=True)]

    def sample(self, k: int, rng: random.Random) -> list[Roles]:
        weighted = self.weighted()
        return rng.choices([r for r, _ in weighted], weights=[w for _, w in weighted], k=k)

    def marginals(self) -> tuple[list[float], list[float]]:
        """Each player's probability of being evil and of being Merlin."""
        n = self.view.n
        evil, merlin = [0.0] * n, [0.0] * n
        for roles, w in self.weighted():
            for p, role in enumerate(roles):
                evil[p] += w * (ROLE_TEAM[role] == EVIL)
                merlin[p] += w * (role == "merlin")
        return evil, merlin


_MENTION = re.compile(r"\bplayer\s*#?(\d+)", re.I)
_NUMBER = r"([+-]?\s*\d)"
_EVIL = re.compile(r"evil[^\w+-]{0,3}" + _NUMBER, re.I)
_MERLIN = re.compile(r"merlin[^\w+-]{0,3}" + _NUMBER, re.I)
_ANY = re.compile(_NUMBER)


def parse_ratings(text: str, n_players: int, me: int) -> dict[int, tuple[int, int]]:
    """(evil, Merlin) ratings per player (0-based) from an answer such as
    "Player 2: evil +1, Merlin 0; Player 3: evil -2, Merlin +1"; each rating is clamped to
    -2..+2, a missing one is 0, players that are not at the table or are ``me`` are left
    out. Empty when the answer rates nobody.

    >>> parse_ratings("Player 2: evil +1, Merlin 0; Player 3 evil -3", 6, 0)
    {1: (1, 0), 2: (-2, 0)}
    """
    mentions = list(_MENTION.finditer(text))
    out: dict[int, tuple[int, int]] = {}
    for i, m in enumerate(mentions):
        p = int(m.group(1)) - 1
        end = mentions[i + 1].start() if i + 1 < len(mentions) else len(text)
        segment = text[m.end() : end]
        evil, merlin = _EVIL.search(segment), _MERLIN.search(segment)
        if evil is None and merlin is None:
            numbers = _ANY.findall(segment)[:2]
            if not numbers:
                continue
            values = [*numbers, "0"][:2]
        else:
            values = [x.group(1) if x else "0" for x in (evil, merlin)]
        if 0 <= p < n_players and p != me:
            clamp = [max(-MAX_RATING, min(MAX_RATING, int(v.replace(" ", "")))) for v in values]
            out[p] = (clamp[0], clamp[1])
    return out


def rating_summary(ratings: dict[int, tuple[int, int]]) -> str:
    """The ratings as the record keeps them: "Player 2: evil +1, Merlin 0; ..."."""
    return "; ".join(
        f"Player {p + 1}: evil {e:+d}, Merlin {m:+d}" for p, (e, m) in sorted(ratings.items())
    )


def belief_summary(evil: Sequence[float], merlin: Sequence[float], me: int) -> str:
    """The belief in words, for the guide: each other player's chance of evil and of Merlin."""
    return "; ".join(
        f"Player {p + 1}: evil {evil[p]:.0%}, Merlin {merlin[p]:.0%}"
        for p in range(len(evil))
        if p != me
    )


__all__ = [
    "RATING_LOGIT",
    "RoleBelief",
    "belief_summary",
    "consistent_assignments",
    "parse_ratings",
    "rating_summary",
]
