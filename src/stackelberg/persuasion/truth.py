"""The game's truth about one speech: which follower responses serve the speaker's side.

One model serves two ends: the scripted labeler (``label.scheme: scripted``) writes the K
desired and K undesired responses from it, and ``judge`` reads any labeler's responses back
with the scripted players' parsers and scores them against the truth, so that the two
labelers are measured alike (``intent_quality``; bench/intent_quality.py).

A response takes sides on *subjects*: a player (trusted +1; suspected, voted for, called a
liar -1), Avalon's team on the table (approved +1, rejected -1), the speaker's Sotopia goal
(agreed to +1, refused -1). Each subject has a *stake* for the speaker's side: +1 if the side
wants it embraced, -1 if rejected. A response serves the side when every side it takes
agrees with the stakes, and hurts it when every one disagrees.

The stakes come from the truth (every role; ONUW: the cards held at the end of the night)
or, without ``full_information``, from what the speaker knows: its own role and what the
game showed it (a werewolf its partners, a Seer its findings, a villager nothing).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from stackelberg.agents.scripted import phrases, sayings
from stackelberg.agents.scripted.avalon import parse_claims, parse_proposal, parse_vote_intent
from stackelberg.agents.scripted.onuw import parse_speech
from stackelberg.agents.scripted.opinion import Sayings
from stackelberg.agents.scripted.sotopia import ASKED
from stackelberg.agents.scripted.werewolf import parse_suspects, parse_trusts, parse_verdicts
from stackelberg.games import check_game_name
from stackelberg.games.avalon import EVIL, GOOD
from stackelberg.games.base import Event
from stackelberg.games.onuw import ROLE_TEAM as ONUW_TEAM
from stackelberg.games.sotopia import parse_action
from stackelberg.games.sotopia_scores import said
from stackelberg.games.werewolf import ROLE_TEAM as WEREWOLF_TEAM
from stackelberg.persuasion.context import InstanceView

#: a subject a response takes a side on: ("player", id), ("team",) or ("goal",)
Subject = tuple
TEAM, GOAL = ("team",), ("goal",)
SERVES, HURTS, NEITHER = 1, -1, 0
#: ONUW cards that hold the werewolf camp, as a sighting names them
_WOLF_CARDS = frozenset(card for card, team in ONUW_TEAM.items() if team == "werewolf")


def player(pid: int) -> Subject:
    return ("player", pid)


def _seen(view: InstanceView) -> list[Event]:
    """The events before the speech that the speaker saw: what it knows."""
    return [e for e in view.game.events[: view.event_index] if e.visible(view.speaker)]


class Truth:
    """One game's reading of a speech; subclasses fill in the game they name."""

    game: ClassVar[str]

    def stakes(
        self, view: InstanceView, full_information: bool, with_speech: bool = True
    ) -> dict[Subject, int]:
        """Every subject whose stake is known: by the truth, or to the speaker;
        ``with_speech``: what the speech itself put on the table counts (Avalon's team)."""
        raise NotImplementedError

    def first(self, view: InstanceView) -> list[Subject]:
        """The subjects a label is about before any other (the speaker: its claim)."""
        return [player(view.speaker)]

    def open(self, view: InstanceView, subject: Subject) -> bool:
        """Whether the follower may sensibly speak of ``subject`` (a living other player)."""
        return True

    def sentences(
        self, view: InstanceView, subject: Subject, sign: int, full_information: bool
    ) -> list[str]:
        """What the follower may say to take side ``sign`` on ``subject``."""
        raise NotImplementedError

    def read(self, view: InstanceView, text: str) -> list[tuple[Subject, int]]:
        """The sides ``text`` takes, as the game's scripted players parse it."""
        raise NotImplementedError

    def live_record(self, game: Any) -> dict[str, Any]:
        """What the truth reads of a finished game's record beyond its events, taken from
        a game still in play (a ``bestN+X`` speaker labels its speech as it speaks)."""
        return {}


class _PlayerTruth(Truth):
    """Games where a response trusts or suspects players of two or more camps."""

    @property
    def sayings(self) -> Sayings:
        """Side -> the scripted sentences that take it on one player."""
        return sayings(self.game)

    def camps(self, view: InstanceView) -> list[str]:
        return [p.team for p in view.game.players]

    def known(self, view: InstanceView) -> dict[int, str]:
        """The camps the speaker knows (itself at least)."""
        raise NotImplementedError

    def side(self, view: InstanceView, camps: dict[int, str]) -> str:
        return camps[view.speaker]

    def stake(self, side: str, camp: str, is_speaker: bool) -> int:
        return 1 if camp == side else -1

    def camps_of(self, view: InstanceView, full_information: bool) -> tuple[str, dict[int, str]]:
        """The speaker's side and the camps known (the speaker's own is its side)."""
        camps = dict(enumerate(self.camps(view))) if full_information else self.known(view)
        side = self.side(view, camps)
        return side, {**camps, view.speaker: side}

    def stakes(self, view, full_information, with_speech=True):
        side, camps = self.camps_of(view, full_information)
        out = {player(p): self.stake(side, c, p == view.speaker) for p, c in camps.items()}
        return {s: v for s, v in out.items() if v}

    def alive(self, view: InstanceView) -> set[int]:
        return set(range(len(view.game.players)))

    def open(self, view: InstanceView, subject: Subject) -> bool:
        if subject[0] != "player":
            return True
        return subject[1] != view.follower and subject[1] in self.alive(view)

    def sentences(self, view, subject, sign, full_information):
        return [say(subject[1]) for say in self.sayings[sign]]

    def _players(self, view: InstanceView, pairs) -> list[tuple[Subject, int]]:
        n = len(view.game.players)
        return [(player(p), s) for p, s in pairs if 0 <= p < n]


class WerewolfTruth(_PlayerTruth):
    game = "werewolf"

    def known(self, view):
        camps = {view.speaker: view.game.players[view.speaker].team}
        n = len(view.game.players)
        for e in _seen(view):
            if e.type == "werewolves":
                camps.update(
                    {p: "werewolf" if p in e.data["werewolves"] else "village" for p in range(n)}
                )
            elif e.type == "inspect":
                camps[e.data["target"]] = "werewolf" if e.data["is_werewolf"] else "village"
            elif e.type == "role_reveal":
                camps[e.data["player"]] = WEREWOLF_TEAM[e.data["role"]]
        return camps

    def alive(self, view):
        dead = set()
        for e in view.game.events[: view.event_index]:
            if e.type == "death":
                dead.update(e.data["players"])
            elif e.type == "eliminate" and e.data["player"] is not None:
                dead.add(e.data["player"])
        return set(range(len(view.game.players))) - dead

    def read(self, view, text):
        n = len(view.game.players)
        return self._players(
            view,
            [(p, 1) for p in parse_trusts(text, n)]
            + [(p, -1) for p in parse_suspects(text, n)]
            + [(p, -1 if wolf else 1) for p, wolf in parse_verdicts(text, n)],
        )


class AvalonTruth(_PlayerTruth):
    game = "avalon"

    def known(self, view):
        game, me = view.game, view.speaker
        camps = {me: game.players[me].team}
        if game.players[me].role != "percival":  # Percival sees Merlin and Morgana, unsorted
            for e in _seen(view):
                if e.type == "knowledge":
                    camps.update({p: EVIL for p in e.data["sees"]})
        n_evil = sum(p.team == EVIL for p in game.players)  # the deck is public
        if sum(c == EVIL for c in camps.values()) == n_evil:
            camps.update({p.id: GOOD for p in game.players if p.id not in camps})
        return camps

    def discussion_start(self, view: InstanceView) -> int:
        """The event index of the discussion's first speech (the leader's): the speech's
        own index when it opens the discussion."""
        events, i = view.game.events, view.event_index
        while i > 0 and events[i - 1].type == "speech" and events[i - 1].phase == "discussion":
            i -= 1
        return i

    def team(self, view: InstanceView, with_speech: bool = True) -> tuple[int, ...] | None:
        """The team on the table: the one the discussion's first speaker (the leader)
        proposed; the speech itself counts only ``with_speech``."""
        events, i = view.game.events, self.discussion_start(view)
        if i == view.event_index and not with_speech:
            return None
        # the speech itself (the leader's) may not be in the events yet: a game in play
        return parse_proposal(
            view.base_utterance if i == view.event_index else events[i].data["text"]
        )

    def first(self, view):
        return [player(view.speaker), TEAM]

    def stakes(self, view, full_information, with_speech=True):
        """The players', and the team's: evil wants a team with an evil member, good one
        without (known only when an evil member is known, or every member)."""
        out = super().stakes(view, full_information)
        side, camps = self.camps_of(view, full_information)
        team = self.team(view, with_speech)
        if not team or max(team) >= len(view.game.players):
            return out
        if any(camps.get(p) == EVIL for p in team):
            out[TEAM] = 1 if side == EVIL else -1
        elif all(p in camps for p in team):
            out[TEAM] = -1 if side == EVIL else 1
        return out

    def sentences(self, view, subject, sign, full_information):
        if subject == TEAM:
            return [phrases.APPROVE_TEAM if sign > 0 else phrases.REJECT_TEAM]
        return super().sentences(view, subject, sign, full_information)

    def read(self, view, text):
        out = self._players(view, parse_claims(text))
        vote = parse_vote_intent(text)
        if vote is not None and self.team(view):
            out.append((TEAM, 1 if vote else -1))
        return out


class ONUWTruth(_PlayerTruth):
    """ONUW's camps are those of the cards held at the end of the night."""

    game = "onuw"

    def camps(self, view):
        return [ONUW_TEAM[card] for card in view.record["result"]["final_roles"]]

    def live_record(self, game):
        # speeches come after the night, and only the night moves cards: those held now
        # are the final ones
        return {"result": {"final_roles": game.final_roles()}}

    def known(self, view):
        """The cards the speaker saw, moved along the swaps it knows of."""
        me = view.speaker
        cards = {me: view.game.players[me].role}
        for e in _seen(view):
            t, d = e.type, e.data
            if t in ("werewolves", "minion"):
                cards.update({p: "werewolf" for p in d["werewolves"]})
            elif t == "masons":
                cards.update({p: "mason" for p in d["masons"]})
            elif t == "doppelganger":
                cards[d["target"]] = cards[me] = d["card"]
            elif t == "seer" and "target" in d:
                cards[d["target"]] = d["card"]
            elif t == "rob":
                cards[d["target"]] = cards.get(me, "robber")
                cards[me] = d["new_card"]
            elif t == "troublemake":
                a, b = d["targets"]
                ca, cb = cards.pop(a, None), cards.pop(b, None)
                cards.update({k: v for k, v in ((a, cb), (b, ca)) if v is not None})
            elif t == "drunk":
                cards.pop(me, None)
            elif t == "insomniac":
                cards[me] = d["card"]
        return {p: ONUW_TEAM[c] for p, c in cards.items()}

    def side(self, view, camps):
        # a drunk does not know its card: it plays for the camp it was dealt
        return camps.get(view.speaker, view.game.players[view.speaker].team)

    def stake(self, side, camp, is_speaker):
        if side == "tanner":  # a tanner wins by dying: it wants the votes on itself alone
            return -1 if is_speaker else 1
        # a tanner's death loses the game for both other camps
        return 1 if camp in (side, "tanner") else -1

    def read(self, view, text):
        said_ = parse_speech(text)
        return self._players(
            view,
            [(p, -1) for p in (*said_["suspects"], *said_["liars"])]
            + [(p, -1 if card in _WOLF_CARDS else 1) for p, card in said_["sightings"]]
            + [(p, 1) for p in said_["not_wolf"]],
        )


class SotopiaTruth(Truth):
    """The speaker's goal counts as reached when the other says its goal keywords (the
    rule-based evaluator); a refusal leaves, or asks for something else."""

    game = "sotopia"

    def keywords(self, view: InstanceView, pid: int) -> list[str]:
        return next(
            e.data["goal_keywords"]
            for e in view.game.events
            if e.type == "character" and e.player == pid
        )

    def first(self, view):
        return [GOAL]

    def stakes(self, view, full_information, with_speech=True):
        return {GOAL: 1}

    def sentences(self, view, subject, sign, full_information):
        if sign > 0:
            mine = self.keywords(view, view.speaker)
            return [phrases.concede(k) for k in mine] + [phrases.ask(k) for k in mine]
        if full_information:
            theirs = self.keywords(view, view.follower)
        else:  # what the follower has asked for so far, in the speaker's hearing
            theirs = [
                m.strip()
                for e in _seen(view)
                if e.player == view.follower and e.type in ("speech", "act")
                for m in ASKED.findall(e.data["text"])
            ]
        theirs = list(dict.fromkeys(theirs))
        return (
            [phrases.insist(k) for k in theirs] + [phrases.ask(k) for k in theirs] + [phrases.LEAVE]
        )

    def read(self, view, text):
        action, words = parse_action(text)
        if any(said(k, words) for k in self.keywords(view, view.speaker)):
            return [(GOAL, 1)]
        if action == "leave" or ASKED.search(words):
            return [(GOAL, -1)]
        return []


#: game name -> its truth (a test keeps it equal to the registry of games)
TRUTHS: dict[str, Truth] = {
    t.game: t for t in (WerewolfTruth(), AvalonTruth(), ONUWTruth(), SotopiaTruth())
}


def truth_of(view: InstanceView) -> Truth:
    return TRUTHS[check_game_name(view.game.name)]


def verdict(claims: Sequence[tuple[Subject, int]], stakes: dict[Subject, int]) -> int | None:
    """SERVES, HURTS or NEITHER (mixed, or about what the side does not care for); None
    when nothing was read."""
    if not claims:
        return None
    effects = {sign * stakes.get(subject, 0) for subject, sign in claims}
    return SERVES if effects == {1} else HURTS if effects == {-1} else NEITHER


def judge(view: InstanceView, text: str) -> int | None:
    """What ``text``, said by the follower, does for the speaker's side by the truth."""
    truth = truth_of(view)
    return verdict(truth.read(view, text), truth.stakes(view, full_information=True))


def scripted_intents(
    view: InstanceView, k: int, full_information: bool, show_base_utterance: bool, seed: int
) -> tuple[list[str], list[str]]:
    """Up to K desired and K undesired responses, in the scripted players' sentences.

    Subjects in order: the speaker (whether its claim is believed), then what its speech
    names (with ``show_base_utterance``), then the rest in a seeded order; the sentences
    go round the subjects, so that K responses name K subjects where there are K. Each is
    read back and kept only if the reading agrees with the stakes it was written from, and
    if it is not the speech itself. Without ``full_information`` a subject the speaker knows nothing of counts as its
    speech judged it, if it did: the speaker wants its claims believed.
    """
    truth = truth_of(view)
    stakes = truth.stakes(view, full_information, with_speech=show_base_utterance)
    claims = truth.read(view, view.base_utterance) if show_base_utterance else []
    if not full_information:  # what the speaker does not know, it wants believed as it said
        for subject, sign in claims:
            stakes.setdefault(subject, sign)
    rng = random.Random(f"intents:{seed}")
    named = [s for s, _ in claims]
    rest = sorted(set(stakes) - set(truth.first(view)) - set(named))
    rng.shuffle(rest)
    order = [
        s
        for s in dict.fromkeys([*truth.first(view), *named, *rest])
        if s in stakes and truth.open(view, s)
    ]
    picked = []
    for polarity in (SERVES, HURTS):
        pools = []
        for subject in order:
            pool = truth.sentences(view, subject, polarity * stakes[subject], full_information)
            rng.shuffle(pool)
            pools.append(pool)
        ranked = [
            pool[r]
            for r in range(max(map(len, pools), default=0))
            for pool in pools
            if r < len(pool)
        ]
        kept: list[str] = []
        for text in dict.fromkeys(ranked):
            if len(kept) == k:
                break
            # the speech said back is no answer (as ``intents.valid_response`` rules)
            if text != view.base_utterance and verdict(truth.read(view, text), stakes) == polarity:
                kept.append(text)
        picked.append(kept)
    return picked[0], picked[1]


@dataclass
class Tally:
    """How one polarity's responses fare against the truth."""

    n: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_NAMES.values(), 0))

    def add(self, outcome: int | None) -> None:
        self.n += 1
        self.counts[_NAMES[outcome]] += 1

    def shares(self) -> dict[str, Any]:
        return {"n": self.n, **{k: v / self.n if self.n else 0.0 for k, v in self.counts.items()}}


_NAMES = {SERVES: "serves", HURTS: "hurts", NEITHER: "neither", None: "unjudged"}


def intent_quality(
    views: Sequence[InstanceView],
    desired: Sequence[Sequence[str]],
    undesired: Sequence[Sequence[str]],
) -> dict[str, dict[str, Any]]:
    """Per polarity, the shares of responses that serve or hurt the speaker's side by the
    truth, that do neither (mixed, indifferent) or that cannot be judged (the scripted
    parsers read no side in them). A good labeler's desired serve, its undesired hurt."""
    tallies = {"desired": Tally(), "undesired": Tally()}
    for view, good, bad in zip(views, desired, undesired, strict=True):
        for name, texts in (("desired", good), ("undesired", bad)):
            for text in texts:
                tallies[name].add(judge(view, text))
    return {name: t.shares() for name, t in tallies.items()}
