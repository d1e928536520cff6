"""Rule-of-thumb Werewolf players: fast, no LLM, using only what their seat may know.

Speech is templated ("I am the Seer. Player 3 is a werewolf.", "I suspect Player 4.",
"I trust Player 2.") and listeners parse everyone's speech with the small regexes below
(they also catch free text such as "Player 2 is a wolf"), so what is said changes votes.

- Village: suspicion per player from credible Seer claims (one claimer is believed, two
  split the belief and fall under suspicion; a claimer who accuses me or who died at night
  settles the question), plain accusations, and votes cast against confirmed-good players.
  Everyone votes for the top suspect.
- Seer: inspects players it has not inspected (most suspected first) and reveals every
  finding each day. Guardian/doctor: protect a credible Seer claimer, else vary among the
  legal targets (so the guardian repeats a target only under ``guardian_may_repeat``). Witch: saves the first victim, poisons a player a credible Seer
  named as a werewolf.
- Werewolves: follow the first wolf's choice at night (so they agree whatever the
  ``wolf_victim`` rule, and never target each other; the first wolf picks the claimed Seer, else the villager who accused wolves most);
  by day they accuse villagers, counter-claim Seer against a real Seer who exposed a wolf,
  and sometimes fake-claim Seer; they vote together for the claimed Seer, else the most
  accused villager (lowest seat on a tie).
"""

from __future__ import annotations

import re
from typing import Any

from stackelberg.agents.base import Agent
from stackelberg.agents.scripted.opinion import Listening, sentence_logits, with_claims
from stackelberg.agents.scripted.phrases import (
    not_werewolf,
    seer_claim,
    suspect,
    trust,
    vote_for,
    werewolf,
    werewolf_verdict,
)
from stackelberg.games.base import SPEAK, Decision, Event, Game

_SEER_CLAIM = re.compile(r"\bI\s+am\s+the\s+seer\b", re.I)
_VERDICT = re.compile(
    r"\bplayer\s+(\d+)\s+is\s+(not\s+)?(?:a|the|one\s+of\s+the)\s+(?:were)?wol(?:f|ves)\b", re.I
)
_SUSPECT = re.compile(r"\b(?:I\s+suspect|vote\s+(?:for|against)|eliminate)\s+player\s+(\d+)", re.I)
_TRUST = re.compile(r"\bI\s+trust\s+player\s+(\d+)", re.I)

#: weights of the suspicion score
SEER_WORD = 3.0  # a credible Seer's verdict
KNOWN = 10.0  # what I know for sure (my inspection, a revealed role)
ACCUSE = 0.5  # a plain accusation or "I suspect"
DENY = 0.3  # "Player N is not a werewolf" from a non-claimer, or "I trust Player N"
BAD_VOTE = 1.0  # voted against a confirmed-good player
RIVAL_CLAIM = 1.0  # one of several Seer claimers
LIAR = 5.0  # a claimer caught lying
FIRST_CLAIM, LATER_CLAIM = 0.6, 0.4  # belief split between rival Seer claimers
#: a werewolf's stance (opinion): every villager at least this accusable, partners shielded
WOLF_BLAME, WOLF_SHIELD = 1.0, 1.0
NO_INFO = "I have no information yet."


def _pid(num: str, n: int) -> int | None:
    pid = int(num) - 1
    return pid if 0 <= pid < n else None


def parse_claims_seer(text: str) -> bool:
    """'I am the Seer' anywhere in the text."""
    return _SEER_CLAIM.search(text) is not None


def parse_verdicts(text: str, n: int) -> list[tuple[int, bool]]:
    """[(player, is_werewolf)] from 'Player N is (not) a werewolf' (0-based ids)."""
    out = []
    for m in _VERDICT.finditer(text):
        pid = _pid(m.group(1), n)
        if pid is not None:
            out.append((pid, m.group(2) is None))
    return out


def parse_suspects(text: str, n: int) -> list[int]:
    """Players named in 'I suspect Player N' / 'vote for Player N' / 'eliminate Player N'."""
    return [p for m in _SUSPECT.finditer(text) if (p := _pid(m.group(1), n)) is not None]


def parse_trusts(text: str, n: int) -> list[int]:
    """Players named in 'I trust Player N'."""
    return [p for m in _TRUST.finditer(text) if (p := _pid(m.group(1), n)) is not None]


class WerewolfScripted(Listening, Agent):
    kind = "scripted"

    def setup(self, game: Game, player: int, rng: Any) -> None:
        super().setup(game, player, rng)
        n = game.n_players
        self.n = n
        self.my_role = game.players[player].role
        self.has_witch = "witch" in game.config.roles
        self.alive = [True] * n
        self.wolves: set[int] = set()
        self.known: dict[int, bool] = {}  # player -> is werewolf, for sure
        self.inspected: dict[int, bool] = {}
        self.claims: dict[int, dict[int, bool]] = {}  # Seer claimer -> verdicts
        self.accusations: list[tuple[int, int, float]] = []  # speaker, target, signed weight
        self.votes: list[tuple[int, int]] = []  # voter, target
        self.today: list[int] = []  # targets accused in speeches today
        self.night_dead: set[int] = set()
        self.wolf_picks: dict[int, int] = {}  # this night: wolf -> target
        self.fake_claimed = False
        self.fake_verdicts: dict[int, bool] = {}
        self.last_protect: int | None = None
        self.day = 0
        if self.my_role != "werewolf":
            self.known[player] = False

    # ---- what I have seen ----------------------------------------------------------------
    def _observe(self, events: list[Event]) -> None:
        for e in events:
            t, d = e.type, e.data
            if t == "werewolves":
                self.wolves = set(d["werewolves"])
                for p in range(self.n):
                    self.known[p] = p in self.wolves
            elif t == "wolf_choice":
                if e.round != self.day:
                    self.day, self.wolf_picks = e.round, {}
                self.wolf_picks[e.player] = d["target"]
            elif t == "inspect":
                self.inspected[d["target"]] = d["is_werewolf"]
                self.known[d["target"]] = d["is_werewolf"]
            elif t == "death":
                self.day = e.round
                self.today = []
                for p in d["players"]:
                    self.alive[p] = False
                    self.night_dead.add(p)
                    if not self.has_witch:
                        self.known.setdefault(p, False)
            elif t == "eliminate":
                if d["player"] is not None:
                    self.alive[d["player"]] = False
            elif t == "role_reveal":
                self.known[d["player"]] = d["role"] == "werewolf"
            elif t == "vote":
                if d["target"] is not None:
                    self.votes.append((e.player, d["target"]))
            elif t == "speech" and e.player != self.player:
                self._hear(e.player, d["text"])

    def listen(self) -> None:
        self._observe(self.new_events())

    def _hear(self, speaker: int, text: str) -> None:
        """A speech's verdicts, accusations and trust: one word per player and side (said
        twice, or in two phrasings of one side, it counts once), and none about the speaker
        itself: a player's word on its own innocence is worth nothing."""
        verdicts = [v for v in dict.fromkeys(parse_verdicts(text, self.n)) if v[0] != speaker]
        suspects = [t for t in dict.fromkeys(parse_suspects(text, self.n)) if t != speaker]
        trusts = [t for t in dict.fromkeys(parse_trusts(text, self.n)) if t != speaker]
        said: dict[tuple[int, float], None] = {}  # (player, weight), in the order first said
        if parse_claims_seer(text):
            self.claims.setdefault(speaker, {}).update(verdicts)
        else:
            said |= dict.fromkeys((t, ACCUSE if wolf else -DENY) for t, wolf in verdicts)
        said |= dict.fromkeys((t, ACCUSE) for t in suspects)
        said |= dict.fromkeys((t, -DENY) for t in trusts)
        self.accusations += [(speaker, t, w) for t, w in said]
        self.today += dict.fromkeys([t for t, wolf in verdicts if wolf] + suspects)

    # ---- village reasoning -----------------------------------------------------------------
    def _credible_claimers(self) -> list[int]:
        """Seer claimers I do not know to be lying."""
        out = []
        for c, verdicts in self.claims.items():
            if self.my_role == "seer" or self.known.get(c):
                continue
            if any(self.known.get(t, wolf) != wolf for t, wolf in verdicts.items()):
                continue  # contradicts what I know (e.g. calls me a werewolf)
            out.append(c)
        return out

    def suspicion(self) -> list[float]:
        """A village player's suspicion of every player (higher = more likely a werewolf)."""
        score = [0.0] * self.n
        credible = self._credible_claimers()
        settled = [c for c in credible if self.known.get(c) is False]
        believed = settled[:1] or credible
        good = {p for p, w in self.known.items() if not w} | {self.player}
        for c in self.claims:
            if c not in believed:
                score[c] += LIAR
            elif len(believed) > 1:
                score[c] += RIVAL_CLAIM
        for i, c in enumerate(believed):
            # one claimer is believed; rival claimers split, the earliest a little ahead
            weight = 1.0 if len(believed) == 1 else FIRST_CLAIM if i == 0 else LATER_CLAIM
            for t, wolf in self.claims[c].items():
                score[t] += SEER_WORD * weight if wolf else -SEER_WORD * weight
                if not wolf and weight == 1.0:
                    good.add(t)
            if weight == 1.0:
                good.add(c)
        for s, t, w in self.accusations:
            score[t] += w
            if t in good and w > 0:
                score[s] += ACCUSE
        for voter, t in self.votes:
            if t in good:
                score[voter] += BAD_VOTE
        for p, wolf in self.known.items():
            score[p] += KNOWN if wolf else -KNOWN
        return score

    def _top(self, options: list[int], score: list[float]) -> int:
        best = max(score[p] for p in options)
        tied = [p for p in options if score[p] == best]
        return tied[self.rng.randrange(len(tied))] if len(tied) > 1 else tied[0]

    # ---- werewolf reasoning ----------------------------------------------------------------
    def _threat(self) -> list[float]:
        """How dangerous each non-wolf is to the werewolves (deterministic, so wolves agree)."""
        score = [0.0] * self.n
        for c in self.claims:
            if c not in self.wolves:
                score[c] += 10.0
        for s, t, w in self.accusations:
            if t in self.wolves and w > 0 and s not in self.wolves:
                score[s] += 2.0
        for voter, t in self.votes:
            if t in self.wolves and voter not in self.wolves:
                score[voter] += 1.0
        return score

    def _wolf_vote_target(self, options: list[int]) -> int:
        cands = [p for p in options if p is not None and p not in self.wolves]
        if not cands:
            return next(p for p in options if p is not None)
        threat = self._threat()
        accused = [self.today.count(p) for p in range(self.n)]
        return max(cands, key=lambda p: (threat[p] >= 10.0, accused[p], threat[p], -p))

    def _wolf_claim(self, living: list[int], threat: list[float]) -> str | None:
        """A fake Seer claim, if this werewolf makes (or keeps up) one."""
        mate_claimed = any(c in self.wolves and c != self.player for c in self.claims)
        real = [c for c in self.claims if c not in self.wolves and self.alive[c]]
        exposed = any(
            t in self.wolves and w for c in real for t, w in self.claims[c].items() if self.alive[t]
        )
        if not self.fake_claimed and not mate_claimed:
            chance = 0.5 if exposed else 0.15
            self.fake_claimed = self.rng.random() < chance
        if self.fake_claimed:
            fresh = [p for p in living if p not in self.fake_verdicts]
            if real and real[0] not in self.fake_verdicts:
                target = real[0]
            else:
                target = self._top(fresh or living, threat)
            self.fake_verdicts[target] = True
            return seer_claim([werewolf_verdict(p, w) for p, w in self.fake_verdicts.items()])
        return None

    def _wolf_speech(self) -> str:
        living = [p for p in range(self.n) if self.alive[p] and p not in self.wolves]
        if not living:
            return "I have nothing to add."
        threat = self._threat()
        claim = self._wolf_claim(living, threat)
        if claim is not None:
            return claim
        target = self._top(living, threat)
        if self.rng.random() < 0.2 and max(threat[p] for p in living) == 0:
            return NO_INFO
        return suspect(target)

    # ---- acting ----------------------------------------------------------------------------
    def act(self, decision: Decision) -> Any:
        self._observe(self.new_events())
        kind, opts = decision.kind, decision.options
        wolf = self.my_role == "werewolf"
        if kind == SPEAK:
            if self.speech_mode == "sampled":
                return self._sampled_speech()
            return self._wolf_speech() if wolf else self._village_speech()
        if kind == "vote":
            if wolf:
                return self._wolf_vote_target(list(opts))
            return self._top([p for p in opts if p is not None], self.suspicion())
        if kind == "wolf_kill":
            picks = [t for w, t in sorted(self.wolf_picks.items()) if w != self.player]
            if picks and picks[0] in opts:
                return picks[0]
            return self._top(list(opts), self._threat())
        if kind == "protect":
            credible = [c for c in self._credible_claimers() if c in opts and self.alive[c]]
            if credible:
                return credible[0]
            return opts[self.rng.randrange(len(opts))]
        if kind == "inspect":
            fresh = [p for p in opts if p not in self.inspected]
            return self._top(fresh or list(opts), self.suspicion())
        if kind == "save":
            return True
        if kind == "poison":
            score = self.suspicion()
            cands = [p for p in opts if p is not None]
            best = max(cands, key=lambda p: (score[p], -p))
            return best if score[best] >= SEER_WORD else None
        return opts[self.rng.randrange(len(opts))]

    def _seer_reveal(self) -> str:
        return seer_claim([werewolf_verdict(p, w) for p, w in self.inspected.items()])

    def _village_speech(self) -> str:
        if self.my_role == "seer":
            return self._seer_reveal()
        living = [p for p in range(self.n) if self.alive[p] and p != self.player]
        score = self.suspicion()
        parts = []
        credible = [c for c in self._credible_claimers() if self.alive[c]]
        if len(credible) == 1:
            parts.append(trust(credible[0]))
        top = self._top(living, score)
        if score[top] >= ACCUSE:
            parts.append(suspect(top))
        return " ".join(parts) or NO_INFO

    # ---- speaking by opinion (``opinion``) -------------------------------------------------
    def opinion_logits(self) -> dict[str, float]:
        """Its stance on each living other player: a village player's suspicion; a
        werewolf's wish to see villagers accused (the threat they pose and today's
        accusations), its partners shielded."""
        living = [p for p in range(self.n) if self.alive[p] and p != self.player]
        if self.my_role == "werewolf":
            threat = self._threat()
            stance = {
                p: -WOLF_SHIELD
                if p in self.wolves
                else WOLF_BLAME + threat[p] + ACCUSE * self.today.count(p)
                for p in living
            }
        else:
            score = self.suspicion()
            stance = {p: score[p] for p in living}
        return sentence_logits(SAYINGS, stance, {NO_INFO: 0.0})

    def _sampled_speech(self) -> str:
        """The role's claims (a Seer's findings, a werewolf's fake claim), then one sentence
        drawn from its opinion."""
        claims = ""
        if self.my_role == "seer":
            claims = self._seer_reveal()
        elif self.my_role == "werewolf":
            living = [p for p in range(self.n) if self.alive[p] and p not in self.wolves]
            if living:
                claims = self._wolf_claim(living, self._threat()) or ""
        return with_claims(claims, self.said_opinion(), NO_INFO)


__all__ = [
    "WerewolfScripted",
    "parse_claims_seer",
    "parse_suspects",
    "parse_trusts",
    "parse_verdicts",
]


#: side -> the sentences a listener of this game says to take that side on one player (+1
#: vouches, -1 accuses): its opinion's vocabulary and the scripted labeler's responses
SAYINGS = {1: (trust, not_werewolf), -1: (suspect, vote_for, werewolf)}

#: the scripted agent of this game (``scripted_agent`` finds it by the module's name)
AGENT = WerewolfScripted
