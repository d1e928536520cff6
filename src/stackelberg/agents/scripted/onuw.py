"""Scripted ONUW player: honest night actions and claims for the village, fake claims for
the werewolf team, a suspicion model fed by the claims it hears.

Night: the seer looks at an unknown player (or, 30% of the time, two centre cards), the
robber robs a random other player, the troublemaker swaps two random others, the drunk and a
lone werewolf pick a random centre card, the doppelganger copies a random player.

Speech (templated, parsed back by ``parse_speech``):
- round 1, village: the true claim, e.g. "I am the Seer. I saw Player 3 is a werewolf.",
  "I am the Robber. I swapped with Player 2 and became the Villager.", "I am the
  Troublemaker. I swapped Player 1 and Player 4.". Werewolf team (a werewolf, the minion, a
  robber or insomniac that ended with a werewolf card): a plausible fake claim (a centre card
  the werewolf saw, else villager; a minion poses as a seer and accuses a non-werewolf).
  Tanner: "I would rather not say my role." (then "Maybe I am a werewolf.").
- later rounds: answer a false accusation ("Player 2 is lying."), name the main suspect
  ("I suspect Player 4."); the last round says "I will vote for Player 4.".

Listening: every claim, sighting ("Player N is a werewolf" / "... is the Villager"), swap
("swapped with Player N and became the X", "swapped Player A and Player B"), "I suspect
Player N", "Player N is lying" moves a suspicion score per player. Liars are found from
over-claimed roles, roles seen in the centre, and statements that contradict what this player
knows; a liar's statements weigh less. Evidence about DEALT cards is moved along the claimed
(and known) swaps in night order, so the vote targets whoever most likely holds a werewolf
card at the end of the night. A swap story counts only from a speaker with no evidence
against them. The werewolf team votes for the most suspected non-werewolf; a village player
who finds nobody suspicious (score < CIRCLE_BELOW) votes for the next seat (circle vote).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from stackelberg.agents.base import Agent
from stackelberg.agents.scripted.opinion import Listening, sentence_logits, with_claims
from stackelberg.agents.scripted.phrases import lying, not_werewolf, suspect, vote_for, werewolf
from stackelberg.games.base import SPEAK, Decision
from stackelberg.games.onuw import role_name

_ROLES = "doppelganger|werewolf|minion|mason|seer|robber|troublemaker|drunk|insomniac|villager|tanner|hunter"
_ART = r"(?:the |a |an )?"
CLAIM_RE = re.compile(rf"\bI(?: am|'m| was)(?! still| now| not) {_ART}({_ROLES})s?\b", re.I)
SIGHT_RE = re.compile(rf"\bPlayer (\d+) (?:is|was) {_ART}({_ROLES})s?\b", re.I)
NOT_WOLF_RE = re.compile(r"\bPlayer (\d+) is not (?:a |the )?werewolf", re.I)
ROB_RE = re.compile(
    rf"\bswapped (?:cards )?with Player (\d+) and (?:became|got|am now) {_ART}({_ROLES})\b", re.I
)
TROUBLE_RE = re.compile(r"\bswapped (?:the cards of )?Player (\d+) and Player (\d+)", re.I)
DRUNK_RE = re.compile(r"\bswapped (?:my card )?with (?:the )?cent(?:er|re) card", re.I)
NOW_RE = re.compile(
    rf"\b(?:I am (?:still|now)|my card is (?:now |still )?) ?{_ART}({_ROLES})\b", re.I
)
SUSPECT_RE = re.compile(r"\b(?:suspect|vote for|voting for|vote against|kill)\s+Player (\d+)", re.I)
LIAR_RE = re.compile(r"\bPlayer (\d+) (?:is|must be|seems) (?:lying|suspicious|a liar)", re.I)
HIDE_RE = re.compile(r"\b(?:rather not say|won't say|not telling|keep my role)", re.I)

#: a village player votes in a circle when nobody's suspicion reaches this
CIRCLE_BELOW = 0.5
#: roles that wake with useful information to claim (for fake claims)
FAKEABLE = ("seer", "robber", "troublemaker", "drunk", "insomniac", "villager", "hunter")
#: opinion (``opinion_logits``): the werewolf team's floor of blame on every non-werewolf
WOLF_BLAME = 1.0
UNSURE = "I am not sure who the werewolf is yet."


def _once(items) -> tuple:
    return tuple(dict.fromkeys(items))


@lru_cache(maxsize=4096)
def parse_speech(text: str) -> dict:
    """What a speech states, as data (player ids 0-based). Cached: listeners share texts."""
    claim = CLAIM_RE.search(text)
    out: dict = {"claim": claim.group(1).lower() if claim else None}
    # a statement said twice counts once
    out["sightings"] = _once((int(n) - 1, r.lower()) for n, r in SIGHT_RE.findall(text))
    out["not_wolf"] = _once(int(n) - 1 for n in NOT_WOLF_RE.findall(text))
    rob = ROB_RE.search(text)
    out["rob"] = (int(rob.group(1)) - 1, rob.group(2).lower()) if rob else None
    tm = TROUBLE_RE.search(text)
    out["trouble"] = (int(tm.group(1)) - 1, int(tm.group(2)) - 1) if tm else None
    out["drunk"] = bool(DRUNK_RE.search(text))
    now = NOW_RE.search(text)
    out["now"] = now.group(1).lower() if now else None
    out["suspects"] = _once(int(n) - 1 for n in SUSPECT_RE.findall(text))
    out["liars"] = _once(int(n) - 1 for n in LIAR_RE.findall(text))
    out["hides"] = bool(HIDE_RE.search(text))
    return out


def the(role: str) -> str:
    return "a Werewolf" if role == "werewolf" else f"the {role_name(role)}"


# ---- claims (true or fake), defined once: the players say them, the optimum's grammar too ----
def role_claim(role: str) -> str:
    return f"I am {the(role)}."


def seer_saw(q: int, card: str) -> str:
    return f"I am the Seer. I saw Player {q + 1} is {the(card)}."


def robber_claim(q: int, card: str) -> str:
    return f"I am the Robber. I swapped with Player {q + 1} and became {the(card)}."


def troublemaker_claim(a: int, b: int) -> str:
    return f"I am the Troublemaker. I swapped Player {a + 1} and Player {b + 1}."


class ONUWScripted(Listening, Agent):
    kind = "scripted"

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        pub = game.public_state()
        self.n = pub["n_players"]
        self.deck = Counter(pub["cards_in_play"])
        self.rounds = pub["discussion_rounds"]
        self.dealt = self.role
        self.acting = self.dealt  # the role acted as (a doppelganger's copy)
        self.card_now: str | None = self.dealt  # believed final card (None = unknown)
        self.wolves: list[int] = []
        self.masons: list[int] = []
        self.seen: dict[int, str] = {}  # player -> card seen at night
        self.copied_from: int | None = None
        self.seer_target: int | None = None
        self.center_seen: dict[int, str] = {}
        self.rob: tuple[int, str] | None = None
        self.trouble: tuple[int, int] | None = None
        self.drunk: int | None = None
        self.speeches: list[tuple[int, dict]] = []
        self.spoken = 0
        self.fake: str | None = None

    # ---- knowledge ------------------------------------------------------------------------
    def listen(self) -> None:
        self._read()

    def _read(self) -> None:
        for ev in self.new_events():
            t, d = ev.type, ev.data
            if t == "speech":
                if ev.player != self.player:
                    self.speeches.append((ev.player, parse_speech(d["text"])))
            elif t == "werewolves" or t == "minion":
                self.wolves = list(d["werewolves"])
            elif t == "masons":
                self.masons = list(d["masons"])
            elif t == "doppelganger":
                self.acting = d["card"]
                self.card_now = d["card"]
                self.copied_from = d["target"]
                self.seen[d["target"]] = d["card"]
            elif t == "werewolf_peek":
                self.center_seen[d["center_index"]] = d["card"]
            elif t == "seer":
                if "target" in d:
                    self.seen[d["target"]] = d["card"]
                    self.seer_target = d["target"]
                else:
                    self.center_seen.update(zip(d["center_indexes"], d["cards"], strict=True))
            elif t == "rob":
                self.rob = (d["target"], d["new_card"])
                self.card_now = d["new_card"]
            elif t == "troublemake":
                self.trouble = tuple(d["targets"])
            elif t == "drunk":
                self.drunk = d["center_index"]
                self.card_now = None
            elif t == "insomniac":
                self.card_now = d["card"]

    @property
    def evil(self) -> bool:
        """Believes it holds a werewolf-team card (and so plays for the werewolves)."""
        return self.card_now in ("werewolf", "minion")

    # ---- the suspicion model ----------------------------------------------------------------
    def suspicion(self) -> list[float]:
        """Per player: how likely they hold a werewolf card at the end of the night."""
        n, me = self.n, self.player
        liar = [0.0] * n
        pre = [0.0] * n  # evidence that the DEALT card is a werewolf
        claims: dict[int, str] = {}
        for s, sp in self.speeches:
            if sp["claim"] and s not in claims:
                claims[s] = sp["claim"]
            if sp["hides"]:
                liar[s] += 1.0
        # over-claimed roles, roles not in play, roles seen in the centre
        by_role: dict[str, list[int]] = {}
        for s, r in claims.items():
            by_role.setdefault(r, []).append(s)
        center_count = Counter(self.center_seen.values())
        for r, claimers in by_role.items():
            if r == "werewolf":
                for s in claimers:
                    pre[s] += 3.0
                continue
            free = self.deck[r] - center_count[r] - (1 if self.dealt == r and not self.evil else 0)
            if len(claimers) > free:
                blame = 4.0 if free <= 0 else 1.5
                for s in claimers:
                    liar[s] += blame
        # statements that contradict what I know or what others claim
        for s, sp in self.speeches:
            for q, card in sp["sightings"]:
                if not 0 <= q < n or q == s:
                    continue
                if q == me:
                    wrong = (card == "werewolf") != (
                        self.dealt == "werewolf" or self.acting == "werewolf"
                    )
                    if card != "werewolf" and card != self.dealt and card != self.acting:
                        wrong = True
                    liar[s] += 4.0 if wrong else -1.0
                elif q in self.seen and card != self.seen[q]:
                    liar[s] += 4.0
                elif claims.get(q) and claims[q] != card and card != "werewolf":
                    liar[s] += 1.0
                    liar[q] += 1.0
            if sp["rob"]:
                q, card = sp["rob"]
                if q == me and card != self.dealt:
                    liar[s] += 4.0
                elif 0 <= q < n and claims.get(q) and claims[q] != card:
                    liar[s] += 1.0
                    liar[q] += 1.0
            for q in sp["liars"]:
                if 0 <= q < n and q != s:
                    liar[q] += 0.5
            for q in sp["suspects"]:
                if q == me and not self.evil:
                    liar[s] += 0.5
        trust = [1.0 / (1.0 + max(0.0, x)) for x in liar]
        post = [0.0] * n
        for s, sp in self.speeches:
            w = trust[s]
            seer_like = claims.get(s) in ("seer", "doppelganger")
            for q, card in sp["sightings"]:
                if 0 <= q < n and q != s:
                    if card == "werewolf":
                        (pre if seer_like else post)[q] += (3.0 if seer_like else 2.5) * w
                    else:
                        pre[q] -= (2.0 if seer_like else 1.0) * w
            for q in sp["not_wolf"]:
                if 0 <= q < n and q != s:  # a player's word on its own innocence: nothing
                    post[q] -= 0.5 * w
            if sp["rob"] and 0 <= sp["rob"][0] < n:
                pre[sp["rob"][0]] += (2.0 if sp["rob"][1] == "werewolf" else -1.5) * w
            for q in sp["suspects"]:
                if 0 <= q < n and q != s:
                    post[q] += 0.5 * w
        for q in range(n):
            pre[q] += liar[q]
        # what I know for sure about dealt cards
        for q, card in self.seen.items():
            pre[q] = 10.0 if card == "werewolf" else -10.0
        for q in self.wolves:
            pre[q] = 10.0
        for q in self.masons:
            pre[q] = -10.0
        pre[me] = 10.0 if self.dealt == "werewolf" else -10.0
        # move the evidence along the swaps, in night order: robbers, troublemakers, drunks
        # a swap story counts only from a trusted speaker with no evidence of a werewolf card
        believed = [trust[s] > 0.3 and pre[s] <= 0.5 for s in range(n)]
        val = pre
        for s, sp in self.speeches:
            if sp["rob"] and claims.get(s) == "robber" and believed[s]:
                q = sp["rob"][0]
                if 0 <= q < n and q != me and q != s:
                    val[s], val[q] = val[q], val[s]
        if self.rob is not None:
            q, card = self.rob
            val[q], val[me] = -10.0, (10.0 if card == "werewolf" else -10.0)
        for s, sp in self.speeches:
            tm = sp["trouble"]
            if tm and claims.get(s) == "troublemaker" and believed[s]:
                a, b = tm
                if 0 <= a < n and 0 <= b < n and a != b:
                    val[a], val[b] = val[b], val[a]
        if self.trouble is not None:
            a, b = self.trouble
            val[a], val[b] = val[b], val[a]
        for s, sp in self.speeches:
            if sp["drunk"] and claims.get(s) == "drunk":
                val[s] = 0.0
            if sp["now"] and claims.get(s) == "insomniac":
                val[s] = (3.0 if sp["now"] == "werewolf" else -2.0) * trust[s] + liar[s]
        return [val[q] + post[q] for q in range(n)]

    def _suspect(self, exclude: set[int]) -> tuple[int, float]:
        sus = self.suspicion()
        candidates = [q for q in range(self.n) if q not in exclude]
        if not candidates:  # everyone else is a known werewolf
            candidates = [q for q in range(self.n) if q != self.player]
        best = max(candidates, key=lambda q: (sus[q], self.rng.random()))
        return best, sus[best]

    def _vote_target(self, opts) -> tuple[int, bool]:
        """Whom to vote for, and whether it is the circle vote (nobody suspicious: a village
        player votes for the next seat, so that nobody gets two votes if all do the same)."""
        illegal = {self.player} if opts is None else {q for q in range(self.n) if q not in opts}
        exclude = self._exclude() | illegal
        target, score = self._suspect(exclude if len(exclude) < self.n else illegal)
        if score < CIRCLE_BELOW and not self.evil and self.dealt != "tanner":
            nxt = (self.player + 1) % self.n
            if nxt not in illegal:
                return nxt, True
        return target, False

    def _exclude(self) -> set[int]:
        ex = {self.player}
        if self.evil:
            ex.update(self.wolves)
            if self.rob is not None:  # a robber turned werewolf: the old werewolf is now the robber
                ex.discard(self.rob[0])
        return ex

    # ---- speech ------------------------------------------------------------------------------
    def _claim(self) -> str:
        if self.dealt == "tanner":
            return "I would rather not say my role."
        if self.evil or self.acting in ("werewolf", "minion"):
            return self._fake_claim()
        return self._true_claim()

    def _true_claim(self) -> str:
        """What this player truly was and saw at night (for the werewolf team too)."""
        role, me = self.acting, self.player
        prefix = ""
        if self.dealt == "doppelganger":
            prefix = (
                f"I am the Doppelganger. I copied {the(role)} from Player {self.copied_from + 1}. "
            )
        if role == "seer":
            if self.seer_target is not None:
                q = self.seer_target
                return prefix + seer_saw(q, self.seen[q])
            cards = " and ".join(the(c) for _, c in sorted(self.center_seen.items()))
            return prefix + f"I am the Seer. I saw the center cards: {cards}."
        if role == "robber" and self.rob is not None:
            q, card = self.rob
            return prefix + robber_claim(q, card)
        if role == "troublemaker" and self.trouble is not None:
            a, b = self.trouble
            return prefix + troublemaker_claim(a, b)
        if role == "drunk" and self.drunk is not None:
            return prefix + f"I am the Drunk. I swapped with center card {self.drunk + 1}."
        if role == "insomniac":
            if self.card_now == "insomniac":
                return prefix + "I am the Insomniac. I am still the Insomniac."
            return prefix + f"I am the Insomniac. My card is now {the(self.card_now)}."
        if role == "werewolf":
            others = [q for q in self.wolves if q != me]
            if others:
                return prefix + f"I am a Werewolf. Player {others[0] + 1} is a Werewolf too."
        if role == "mason":
            others = [q for q in self.masons if q != me]
            if others:
                return prefix + f"I am a Mason. Player {others[0] + 1} is the other Mason."
            return prefix + "I am a Mason and I am the only one."
        return prefix + role_claim(role)

    def _fake_claim(self) -> str:
        me, n = self.player, self.n
        innocents = [q for q in range(n) if q != me and q not in self.wolves]
        if self.rob is not None:  # the robber who stole a werewolf keeps the robber story
            return robber_claim(self.rob[0], "villager")
        options = [c for c in self.center_seen.values() if c in FAKEABLE]
        if self.acting == "minion" or (
            not options and len(self.wolves) <= 1 and self.rng.random() < 0.3
        ):
            fake = "seer"
        else:
            fake = options[0] if options else "villager"
        self.fake = fake
        if fake == "seer" and innocents:
            q = self.rng.choice(innocents)
            card = "werewolf" if self.rng.random() < 0.5 else "villager"
            return seer_saw(q, card)
        if fake == "robber" and innocents:
            q = self.rng.choice(innocents)
            return robber_claim(q, "villager")
        if fake == "troublemaker" and len(innocents) >= 2:
            a, b = sorted(self.rng.sample(innocents, 2))
            return troublemaker_claim(a, b)
        if fake == "drunk":
            return "I am the Drunk. I swapped with center card 1."
        if fake == "insomniac":
            return "I am the Insomniac. I am still the Insomniac."
        return role_claim("villager" if fake == "seer" else fake)

    def _later(self, last: bool) -> str:
        me = self.player
        parts = []
        for s, sp in self.speeches:
            accused = any(q == me and c == "werewolf" for q, c in sp["sightings"])
            if accused and self.dealt != "tanner":
                parts.append(f"{lying(s)} I am not a werewolf.")
                break
        if self.dealt == "tanner" and not last:
            parts.append("Maybe I am a werewolf, maybe not.")
        target, score = self._suspect(self._exclude())
        if last:
            target, circle = self._vote_target(None)
            if circle:
                parts.append("I see no werewolf among us; let us each vote for the next player.")
            parts.append(vote_for(target))
        elif score > 0.5 or self.evil:
            parts.append(suspect(target))
        else:
            parts.append(UNSURE)
        return " ".join(parts)

    # ---- speaking by opinion (``opinion``) ----------------------------------------------------
    def opinion_logits(self) -> dict[str, float]:
        """Its stance on each other player: a village player's suspicion; the werewolf
        team's suspicion of non-werewolves lifted by a floor of blame, its partners
        shielded."""
        sus = self.suspicion()
        others = [q for q in range(self.n) if q != self.player]
        if self.evil:
            mates = self._exclude()
            stance = {q: -1.0 if q in mates else WOLF_BLAME + sus[q] for q in others}
        else:
            stance = {q: sus[q] for q in others}
        return sentence_logits(SAYINGS, stance, {UNSURE: 0.0})

    # ---- decisions ----------------------------------------------------------------------------
    def act(self, decision: Decision):
        self._read()
        kind, opts = decision.kind, decision.options
        if kind == SPEAK:
            self.spoken += 1
            if self.speech_mode == "sampled":  # the first speech's role claim, then the opinion
                claims = self._claim() if self.spoken == 1 else ""
                return with_claims(claims, self.said_opinion(), UNSURE)
            if self.spoken == 1:
                return self._claim()
            return self._later(self.spoken >= self.rounds)
        if kind == "vote":
            return self._vote_target(opts)[0]
        if kind == "seer":
            centers = [o for o in opts if isinstance(o, str)]
            unknown = [
                o
                for o in opts
                if isinstance(o, int) and o not in self.seen and o not in self.wolves
            ]
            if centers and (not unknown or self.rng.random() < 0.3):
                return self.rng.choice(centers)
            return self.rng.choice(unknown or [o for o in opts if isinstance(o, int)])
        if kind == "troublemake":
            return self.rng.choice(opts)
        return opts[self.rng.randrange(len(opts))]


__all__ = ["ONUWScripted", "parse_speech"]


#: side -> the sentences a listener of this game says to take that side on one player (+1
#: vouches, -1 accuses): its opinion's vocabulary and the scripted labeler's responses
SAYINGS = {1: (not_werewolf,), -1: (suspect, vote_for, lying, werewolf)}

#: the scripted agent of this game (``scripted_agent`` finds it by the module's name)
AGENT = ONUWScripted
