"""Rule-of-thumb Avalon player for every role; no LLM.

It knows only what its seat may know: its role, its ``knowledge`` event, the public events
and speech. Every player keeps a suspicion score per other player (quest failures, votes,
what others say) and, for the assassin and Percival, a "looks like Merlin" score.

Per role:
- Loyal servant: suspects the members of failed quests and those who approved them; votes
  against teams holding a suspect (and against teams that must hold an evil player).
- Merlin: rejects teams with known evil most of the time, sometimes approves to stay
  hidden; voices mild suspicion of at most all-but-one of the evil players it sees.
- Percival: sees Merlin and Morgana; believes the candidate whose votes and claims look
  like Merlin's, follows their claims, never names Merlin.
- Evil: approves teams with an evil member, plays Fail when it matters (one evil per team
  fails, the lowest id, so no double fails; always fails when it decides the game), deflects
  suspicion onto good players. The assassin names the player who most looked like Merlin
  (rejected teams with evil, accused evil players correctly); when the rules offer its one
  attempt after every quest (``assassin_timing="once_after_any_quest"``) it waits for the
  last chance, since an early hit wins no more than a late one and a miss gives it away.

The fifth vote of a quest is a must-approve for good (and a must-reject for evil on a clean
team) only when a fifth rejection loses the game for good (``fifth_rejection="evil_wins"``).

Speech is templated ("I propose Player 1 and Player 3.", "I vote to reject this team.",
"I suspect Player 4.", "Player 2 and Player 5 look trustworthy."); listeners parse those
templates and similar free text ("Player 4 is evil", "I trust Player 2") with the small
functions ``parse_claims``, ``parse_proposal`` and ``parse_vote_intent``.
"""

from __future__ import annotations

import itertools
import math
import re
from functools import lru_cache
from typing import Any

from stackelberg.agents.base import Agent
from stackelberg.agents.scripted.opinion import Listening, sentence_logits, with_claims
from stackelberg.agents.scripted.phrases import (
    APPROVE_TEAM,
    REJECT_TEAM,
    propose,
    suspect,
    trust,
    trustworthy,
    trustworthy_one,
)
from stackelberg.games.avalon import (
    EVIL,
    EVIL_COUNT,
    MAX_ATTEMPTS,
    ROLE_TEAM,
    TEAM_SIZES,
    fails_needed,
)
from stackelberg.games.base import SPEAK, Decision

FAIL_RATE = 0.7  # how often good players assume an evil quest member plays Fail
MERLIN_HIDE = 0.3  # how often Merlin approves a team with a known evil player, to stay hidden
#: opinion (``opinion_logits``): risk is a probability-like scale, stances are this many times it
STANCE_SCALE = 3.0
NO_READ = "I have no strong read yet."
#: the logit of saying nothing: as the templated players, silent unless the read is strong
QUIET = 3.5

# ---- parsing of speech ---------------------------------------------------------------------
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n")
_PLAYER = re.compile(r"\bplayer\s*#?(\d+)", re.I)
_NEG_PHRASE = re.compile(
    r"\b(?:do not|don't|dont|cannot|can't|never|wouldn't|would not)\s+trust\b|"
    r"\bnot\s+(?:trustworthy|good|loyal|safe|honest|clean)\b|\buntrustworthy\b|\bdistrust",
    re.I,
)
_NOT_EVIL = re.compile(
    r"\b(?:not|isn't|isnt|never|aren't)\s+(?:an?\s+)?(?:evil|minion|spy|traitor|liar|suspicious)\b",
    re.I,
)
_NEG = re.compile(
    r"\b(?:suspect\w*|suspicious|evil|minions?|morgana|assassin|mordred|oberon|spy|spies|"
    r"traitors?|liars?|lying|sabotag\w*|shady|failed?)\b",
    re.I,
)
_POS = re.compile(
    r"\b(?:trust\w*|good|loyal|innocent|clean|safe|honest|cleared|merlin|percival)\b", re.I
)
_PROPOSE = re.compile(r"\b(?:i\s+)?(?:propose|nominate|pick|choose|take)\b", re.I)
_REJECT = re.compile(r"\b(?:reject|vote (?:no|against)|oppose)\b", re.I)
_APPROVE = re.compile(r"\b(?:approve|vote (?:yes|for)|support)\b", re.I)


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text) if s]


def _players_in(sentence: str) -> list[int]:
    """0-based ids of the players named in a sentence ("Player 3" -> 2)."""
    return [int(m) - 1 for m in _PLAYER.findall(sentence) if int(m) >= 1]


def _polarity(sentence: str) -> int:
    """-1 if a sentence casts doubt on the players it names, +1 if it vouches, 0 otherwise."""
    if _NEG_PHRASE.search(sentence):
        return -1
    if _NOT_EVIL.search(sentence):
        return 1
    if _NEG.search(sentence):
        return -1
    if _POS.search(sentence):
        return 1
    return 0


@lru_cache(maxsize=4096)
def parse_claims(text: str) -> tuple[tuple[int, int], ...]:
    """(player id, +1 vouched / -1 accused) for every player a speech judges.

    >>> parse_claims("I suspect Player 4. Player 2 and Player 5 look trustworthy.")
    ((3, -1), (1, 1), (4, 1))
    """
    out: list[tuple[int, int]] = []
    for sentence in _sentences(text):
        if _PROPOSE.search(sentence) and not _NEG.search(sentence):
            continue
        players = _players_in(sentence)
        if not players:
            continue
        pol = _polarity(sentence)
        if pol:
            out.extend((p, pol) for p in players)
    return tuple(out)


@lru_cache(maxsize=4096)
def parse_proposal(text: str) -> tuple[int, ...] | None:
    """The team a speaker says they propose ("I propose Player 1 and Player 3." -> (0, 2))."""
    for sentence in _sentences(text):
        if _PROPOSE.search(sentence):
            players = _players_in(sentence)
            if players:
                return tuple(sorted(set(players)))
    return None


@lru_cache(maxsize=4096)
def parse_vote_intent(text: str) -> bool | None:
    """True/False if a speech announces approving/rejecting the team, None otherwise."""
    for sentence in _sentences(text):
        if _PLAYER.search(sentence):
            continue
        if _REJECT.search(sentence):
            return False
        if _APPROVE.search(sentence):
            return True
    return None


def fails_likelihood(evil_on_team: int, fails: int) -> float:
    """How likely a quest shows ``fails`` Fail cards when ``evil_on_team`` evil players are on
    it, each failing with probability ``FAIL_RATE`` (0 when there are more fails than evil)."""
    if fails > evil_on_team:
        return 0.0
    k = evil_on_team
    return math.comb(k, fails) * FAIL_RATE**fails * (1 - FAIL_RATE) ** (k - fails)


# ---- the agent -----------------------------------------------------------------------------
class AvalonScripted(Listening, Agent):
    """Fast heuristic Avalon player (see the module docstring)."""

    kind = "scripted"

    def setup(self, game: Any, player: int, rng: Any) -> None:
        super().setup(game, player, rng)
        n = game.config.n_players
        self.n = n
        self.n_evil = EVIL_COUNT[n]
        self.sizes = TEAM_SIZES[n]
        self.my_role = self.role
        self.evil = ROLE_TEAM[self.my_role] == EVIL
        self.known_evil: set[int] = {player} if self.evil else set()  # evil I know of
        self.candidates: tuple[int, ...] = ()  # Percival: Merlin and Morgana
        self.susp = [0.0] * n  # evidence that a player is evil (for evil: as the good side sees it)
        self.stance = [[0] * n for _ in range(n)]  # stance[s][p]: +1 s vouched for p, -1 accused
        self.merlinish = [0.0] * n  # how much each player behaves like Merlin
        self.successes = 0
        self.failures = 0
        self.attempt_speeches = 0
        self.plan: tuple[int, ...] | None = None  # the team I announced as leader
        self.leader_plan: tuple[int, ...] | None = None  # the team the leader announced
        self.cur_team: tuple[int, ...] = ()
        self.attempt = 1
        self.votes: dict[int, bool] = {}
        self.last_approved: tuple[tuple[int, ...], dict[int, bool]] | None = None
        self.on_failed: set[int] = set()  # players seen on a failed quest
        self.accusers: list[int] = []  # players who accused a known evil player lately
        # the fifth vote of a quest decides the game only if a fifth rejection is a loss
        self.last_vote_decides = game.config.fifth_rejection == "evil_wins"
        self.hyps: list[set[int]] = []  # good players: the possible evil sets
        self.weights: list[float] = []  # their likelihoods
        self.p_evil = [0.0] * n  # good players: probability that each player is evil
        self.speakers: list[int] = []  # who made claims, in order
        self._risks: list[float] | None = None  # caches, reset whenever I see an event
        self._talks: list[float] | None = None

    # ---- what I learn -----------------------------------------------------------------------
    def listen(self) -> None:
        self.observe()

    def observe(self) -> None:
        """Read the events since the last look (a searching player reads the result too)."""
        for ev in self.new_events():
            t = ev.type
            if t == "speech":
                self.attempt_speeches += 1
                if ev.player != self.player:
                    self._hear(ev.player, ev.data["text"])
            elif t == "propose":
                self.cur_team = tuple(ev.data["team"])
                self.attempt = ev.data["attempt"]
                self.votes = {}
                if ev.player != self.player:
                    self._judge_proposal(ev.player, self.cur_team)
            elif t == "vote":
                self.votes[ev.player] = ev.data["approve"]
            elif t == "team_result":
                self._judge_votes()
                if ev.data["approved"]:
                    self.last_approved = (self.cur_team, dict(self.votes))
                self.attempt_speeches = 0
                self.plan = self.leader_plan = None
            elif t == "forced_team":  # the rejected fifth team goes on the quest anyway
                self.last_approved = (self.cur_team, dict(self.votes))
            elif t == "quest":
                self._judge_quest(tuple(ev.data["team"]), ev.data["fails"])
                if ev.data["success"]:
                    self.successes += 1
                else:
                    self.failures += 1
            elif t == "knowledge" and ev.player == self.player:
                self._learn(ev.data["sees"])
            self._risks = self._talks = None

    def _learn(self, sees: list[int]) -> None:
        if self.my_role == "percival":
            self.candidates = tuple(sees)
        else:
            self.known_evil.update(sees)
        if not self.evil:
            self._hypotheses()

    def _hypotheses(self) -> None:
        """Good players: every evil set consistent with what I saw, equally likely a priori."""
        others = [p for p in range(self.n) if p != self.player]
        seen = self.known_evil
        cands = self.candidates
        hyps = []
        for h in itertools.combinations(others, self.n_evil):
            hs = set(h)
            if not seen <= hs:
                continue
            if cands and len(hs.intersection(cands)) != (1 if len(cands) == 2 else 0):
                continue
            hyps.append(hs)
        self.hyps = hyps
        self.weights = [1.0] * len(hyps)
        self._update_posterior()

    def _update_posterior(self) -> None:
        total = sum(self.weights) or 1.0
        p_evil = [0.0] * self.n
        for hs, w in zip(self.hyps, self.weights, strict=True):
            if w:
                for p in hs:
                    p_evil[p] += w
        self.p_evil = [x / total for x in p_evil]

    def _weight(self, speaker: int) -> float:
        """How much I believe what ``speaker`` says."""
        if self.evil:
            return 0.3  # my model of how much the good side believes anyone
        if speaker in self.candidates and speaker == self._believed_merlin():
            return 0.8
        return 0.1 if self.susp[speaker] > 0.75 else 0.3

    def _talk(self, p: int) -> float:
        """What the table says about ``p``: believed vouches minus believed accusations."""
        talk = self._talks
        if talk is None:
            talk = [0.0] * self.n
            for s in self.speakers:
                if s != self.player:
                    w = self._weight(s)
                    for q, pol in enumerate(self.stance[s]):
                        if pol:
                            talk[q] += w * pol
            self._talks = talk
        return talk[p]

    def _hear(self, speaker: int, text: str) -> None:
        if self.attempt_speeches == 1:
            self.leader_plan = parse_proposal(text)
        n = self.n
        for target, pol in parse_claims(text):
            if target >= n or target == speaker:
                continue
            self.stance[speaker][target] = pol  # a speaker's latest word on a player counts
            if speaker not in self.speakers:
                self.speakers.append(speaker)
            if self.evil:
                known = target in self.known_evil
                if pol < 0:
                    self.merlinish[speaker] += 1.0 if known else -0.5
                    if known:
                        self.accusers.append(speaker)
                else:
                    self.merlinish[speaker] += -1.0 if known else 0.2
            elif self.my_role == "percival" and speaker in self.candidates and pol < 0:
                # a Merlin candidate accusing someone already on a failed quest looks like Merlin
                self.merlinish[speaker] += 0.5 if self.susp[target] > 1.0 else 0.0

    def _judge_proposal(self, leader: int, team: tuple[int, ...]) -> None:
        if self.evil:
            has_evil = any(p in self.known_evil for p in team)
            self.merlinish[leader] += -0.5 if has_evil else 0.3

    def _judge_votes(self) -> None:
        team, votes = self.cur_team, self.votes
        if self.evil:
            has_evil = any(p in self.known_evil for p in team)
            for voter, approve in votes.items():
                if voter in self.known_evil:
                    continue
                if has_evil:
                    self.merlinish[voter] += -0.5 if approve else 1.0
                else:
                    self.merlinish[voter] += 0.1 if approve else -0.3
        elif self.my_role == "merlin":
            return
        else:
            risky = max(self.risk(p) for p in team) > 0.6
            for voter, approve in votes.items():
                if voter != self.player and risky and approve:
                    self.susp[voter] += 0.05

    def _judge_quest(self, team: tuple[int, ...], fails: int) -> None:
        votes = self.last_approved[1] if self.last_approved else {}
        if fails:
            self.on_failed.update(team)
        if not self.evil:
            # Bayes over the evil sets: evil members fail with probability FAIL_RATE each
            members = set(team)
            weights = self.weights
            for i, hs in enumerate(self.hyps):
                weights[i] *= fails_likelihood(len(hs & members), fails)
            if not any(weights):  # evidence against every hypothesis: start over, keep quests
                self.weights = [1.0] * len(self.hyps)
            self._update_posterior()
        else:
            others = [p for p in team if p not in self.known_evil]
            for p in others:
                self.susp[p] += 3.0 * fails / max(1, len(others)) if fails else -0.3
        if fails:
            for voter, approve in votes.items():
                if voter != self.player:
                    self.susp[voter] += 0.1 if approve else -0.05
            if self.my_role == "percival":
                for c in self.candidates:
                    if c in team:
                        self.merlinish[c] -= 2.0
                    elif votes.get(c) is False:
                        self.merlinish[c] += 1.0
                    elif votes.get(c):
                        self.merlinish[c] -= 0.5
        else:
            if self.my_role == "percival":
                for c in self.candidates:
                    if votes.get(c) is False:
                        self.merlinish[c] -= 0.3

    # ---- my view ----------------------------------------------------------------------------
    def _believed_merlin(self) -> int | None:
        if len(self.candidates) < 2:
            return self.candidates[0] if self.candidates else None
        a, b = self.candidates
        diff = self.merlinish[a] - self.merlinish[b]
        if abs(diff) < 0.5:
            return None
        return a if diff > 0 else b

    def risk(self, p: int) -> float:
        """How likely ``p`` is evil in my eyes (cached until I see new events)."""
        risks = self._risks
        if risks is None:
            risks = self._risks = [self._compute_risk(q) for q in range(self.n)]
        return risks[p]

    def _compute_risk(self, p: int) -> float:
        if p == self.player:
            return 10.0 if self.evil else -10.0
        if p in self.known_evil:
            return 10.0
        risk = self.p_evil[p] + self.susp[p] - 0.25 * self._talk(p)
        if self.candidates and p in self.candidates and len(self.candidates) > 1:
            believed = self._believed_merlin()
            if believed is not None:
                risk += -0.3 if p == believed else 0.3
        return risk

    def _public(self, p: int) -> float:
        """Evil players' guess of how suspect ``p`` looks to the good side."""
        return self.susp[p] - self._talk(p)

    def _quest(self) -> int:
        return self.successes + self.failures + 1

    def choose_team(self, size: int) -> tuple[int, ...]:
        """The team it would propose as leader: itself and those it trusts most."""
        rand = self.rng.random
        if self.evil:
            # me plus the players the good side trusts most (never an evil teammate)
            others = [p for p in range(self.n) if p not in self.known_evil]
            others.sort(key=lambda p: self._public(p) + 0.3 * rand())
        else:
            others = [p for p in range(self.n) if p != self.player]
            others.sort(key=lambda p: self.risk(p) + 0.3 * rand())
        return tuple(sorted([self.player, *others[: size - 1]]))

    def _must_hold_evil(self, team: tuple[int, ...]) -> bool:
        """A team without me as large as the good players other than me must hold an evil."""
        return self.player not in team and len(team) > self.n - self.n_evil - 1

    def approves(self, team: tuple[int, ...], attempt_last: bool) -> bool:
        """Whether it would approve ``team`` (``attempt_last``: the fifth vote decides)."""
        rand = self.rng.random
        if self.evil:
            has_evil = any(p in self.known_evil for p in team)
            if has_evil:
                return self.failures == 2 or rand() < 0.95
            if attempt_last or self.successes == 2:
                return False
            return rand() < 0.2
        if attempt_last:
            return True
        if team == self.plan:
            return True
        if self.my_role == "merlin":
            if any(p in self.known_evil for p in team):
                return self.failures < 2 and self.successes < 2 and rand() < MERLIN_HIDE
            return True
        if self._must_hold_evil(team):
            return False
        me = self.player
        members = [p for p in team if p != me]
        if not members:
            return True
        bar = self._risk_bar(len(members))
        return all(self.risk(p) <= bar for p in members)

    def _risk_bar(self, members: int) -> float:
        """The most risk a member of a team it approves may carry: that of the riskiest
        member of the best team with ``members`` others than itself (a little above)."""
        ranked = sorted(self.risk(p) for p in range(self.n) if p != self.player)
        return ranked[members - 1] + 0.05

    def _card(self) -> bool:
        """True = Success. Only evil players get a choice."""
        quest = self._quest()
        if self.successes == 2 or self.failures == 2:
            return False
        mates = [p for p in self.cur_team if p in self.known_evil]
        if fails_needed(self.n, quest) == 2:
            return len(mates) < 2
        if len(mates) > 1 and self.player != min(mates):
            return True
        return self.rng.random() >= (0.5 if quest == 1 else 0.85)

    def _assassinate(self, options: tuple[int | None, ...]) -> int | None:
        if None in options:  # one attempt offered after every quest: wait for the last chance
            return None
        rand = self.rng.random
        return max(options, key=lambda p: self.merlinish[p] + 0.01 * rand())

    # ---- speech -----------------------------------------------------------------------------
    def _speak(self) -> str:
        leader = self.attempt_speeches == 0
        parts: list[str] = []
        if leader:
            size = self.sizes[self._quest() - 1]
            self.plan = self.choose_team(size)
            parts.append(propose(self.plan))
        if self.speech_mode == "sampled":
            return with_claims(" ".join(parts), self.said_opinion(), NO_READ)
        if (
            not leader
            and self.leader_plan
            and len(self.leader_plan) == self.sizes[self._quest() - 1]
        ):
            if self.approves(self.leader_plan, False):
                parts.append(APPROVE_TEAM)
            else:
                parts.append(REJECT_TEAM)
        opinion = self.templated_opinion()
        if opinion:
            parts.append(opinion)
        return " ".join(parts) if parts else NO_READ

    def templated_opinion(self) -> str | None:
        """A sentence on whom it suspects or trusts, or None."""
        rand = self.rng.random
        me = self.player
        if self.my_role == "merlin":
            evil = sorted(self.known_evil)
            allowed = evil[: max(0, len(evil) - 1)]  # never name all of them
            exposed = [p for p in allowed if p in self.on_failed]  # suspicion the table shares
            if (exposed and rand() < 0.35) or (allowed and rand() < 0.05):
                pool = exposed or allowed
                target = pool[self.rng.randrange(len(pool))]
                return suspect(target)
            if rand() < 0.3:
                good = [p for p in range(self.n) if p != me and p not in self.known_evil]
                pair = sorted(self.rng.sample(good, 2)) if len(good) >= 2 else good
                if pair:
                    return trustworthy(pair)
            return None
        if self.evil:
            good = [p for p in range(self.n) if p not in self.known_evil]
            if self.accusers and rand() < 0.7:
                target = self.accusers[-1]
                self.accusers.clear()
                return suspect(target)
            if rand() < 0.5 and good:
                target = max(good, key=lambda p: self._public(p) + rand())
                return suspect(target)
            if rand() < 0.3 and good:
                return trustworthy([min(good, key=lambda p: self._public(p) + rand())])
            return None
        others = [p for p in range(self.n) if p != me]
        worst = max(others, key=lambda p: self.risk(p))
        if self.risk(worst) > 0.8 and rand() < 0.8:
            return suspect(worst)
        if rand() < 0.3:
            best = sorted(others, key=lambda p: self.risk(p) + 0.1 * rand())[:2]
            return trustworthy(sorted(best))
        return None

    # ---- speaking by opinion (``opinion``) --------------------------------------------------
    def opinion_logits(self) -> dict[str, float]:
        """Its stance on each other player, and on the team the leader announced.

        A good player's stance is its risk (centred on its mean over the others); Merlin's
        is mild, as it hides: known evil players a little accusable, more once seen on a
        failed quest. An evil player's is how suspect each good player looks to the table,
        its partners shielded. The team's logit leans to approval by the same rules as its
        vote: a good player's riskiest member against the bar, evil's own on the team."""
        others = [p for p in range(self.n) if p != self.player]
        if self.evil:
            stance = {
                p: -1.0 if p in self.known_evil else STANCE_SCALE * (0.5 + self._public(p))
                for p in others
            }
        elif self.my_role == "merlin":
            stance = {
                p: STANCE_SCALE
                * ((0.6 if p in self.on_failed else 0.2) if p in self.known_evil else 0.0)
                for p in others
            }
        else:
            mean = sum(self.risk(p) for p in others) / len(others)
            stance = {p: STANCE_SCALE * (self.risk(p) - mean) for p in others}
        team = self.leader_plan
        lean = 0.0  # no team announced: no lean either way
        if team and len(team) == self.sizes[self._quest() - 1] and max(team) < self.n:
            lean = self._team_lean(team)
        extra = {NO_READ: QUIET, APPROVE_TEAM: lean, REJECT_TEAM: -lean}
        return sentence_logits(SAYINGS, stance, extra)

    def _team_lean(self, team: tuple[int, ...]) -> float:
        """How much it leans to approve ``team`` (negative: to reject)."""
        if self.evil:
            return STANCE_SCALE * (1.0 if any(p in self.known_evil for p in team) else -0.5)
        if self.my_role == "merlin":
            return STANCE_SCALE * (-1.0 if any(p in self.known_evil for p in team) else 1.0)
        if self._must_hold_evil(team):
            return -STANCE_SCALE
        members = [p for p in team if p != self.player]
        if not members:
            return STANCE_SCALE
        bar = self._risk_bar(len(members))
        return STANCE_SCALE * (bar - max(self.risk(p) for p in members))

    # ---- decisions --------------------------------------------------------------------------
    def act(self, decision: Decision) -> Any:
        self.observe()
        kind = decision.kind
        options = decision.options
        if kind == SPEAK:
            return self._speak()
        if kind == "vote":
            return self.approves(
                self.cur_team, self.attempt == MAX_ATTEMPTS and self.last_vote_decides
            )
        if kind == "quest":
            return True if len(options) == 1 else self._card()
        if kind == "propose":
            size = len(options[0])
            team = self.plan if self.plan and len(self.plan) == size else self.choose_team(size)
            return team if team in options else options[0]
        if kind == "assassinate":
            return self._assassinate(options)
        return options[self.rng.randrange(len(options))]


#: side -> the sentences a listener of this game says to take that side on one player (+1
#: vouches, -1 accuses): its opinion's vocabulary and the scripted labeler's responses
SAYINGS = {1: (trustworthy_one, trust), -1: (suspect,)}

#: the scripted agent of this game (``scripted_agent`` finds it by the module's name)
AGENT = AvalonScripted
