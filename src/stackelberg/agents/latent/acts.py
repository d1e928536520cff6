"""What a Werewolf speech does in the abstract game: its speech act, as the scripted
listeners hear it, and how the scripted player says a given act.

A speech is reduced to one of ``SPEECH_ACTS`` with the scripted listeners' own parsers
(``scripted.werewolf``), so two speeches with the same act move scripted votes the same
way. ``LatentSpeaker`` says an act with targets from what its seat knows (the village: its
top suspect and the player it trusts most; a werewolf: the villager most dangerous to its
camp and a partner), and names the coarse information set of its next speech.
"""

from __future__ import annotations

import re

from stackelberg.agents.scripted.phrases import suspect, trust, werewolf_verdict
from stackelberg.agents.scripted.werewolf import (
    WerewolfScripted,
    parse_claims_seer,
    parse_suspects,
    parse_trusts,
    parse_verdicts,
)

#: the speech acts of the abstract game -> what a player doing it says, for prompts
SPEECH_ACTS: dict[str, str] = {
    "claim_accuse": "claim to be the Seer and name a player as a werewolf",
    "claim_clear": "claim to be the Seer and name a player as not a werewolf",
    "accuse": "accuse one player, without claiming a role",
    "trust": "vouch for one player, accusing nobody",
    "trust_accuse": "vouch for one player and accuse another",
    "silent": "say you have no information and commit to nothing",
}
ACT_NAMES: tuple[str, ...] = tuple(SPEECH_ACTS)
_PLAYER = re.compile(r"\bplayer\s+\d+\b", re.I)


def speech_act(text: str, n_players: int) -> str:
    """The act of ``text`` as a scripted listener hears it (one of ``ACT_NAMES``)."""
    verdicts = parse_verdicts(text, n_players)
    if parse_claims_seer(text):
        return "claim_accuse" if any(wolf for _, wolf in verdicts) else "claim_clear"
    accuses = any(wolf for _, wolf in verdicts) or bool(parse_suspects(text, n_players))
    vouches = any(not wolf for _, wolf in verdicts) or bool(parse_trusts(text, n_players))
    if accuses:
        return "trust_accuse" if vouches else "accuse"
    return "trust" if vouches else "silent"


def anonymous(text: str) -> str:
    """``text`` with every player's name as "Player N": the embedding sees what is said,
    not of whom."""
    return _PLAYER.sub("Player N", text)


def bucket(count: int, top: int) -> str:
    return str(count) if count < top else f"{top}+"


class LatentSpeaker(WerewolfScripted):
    """The scripted Werewolf player (night actions, votes) that speaks in the act given."""

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self.claimed = False  # it has claimed to be the Seer

    def observe(self) -> None:
        """Read what happened since the last look."""
        self._observe(self.new_events())

    def _living(self) -> list[int]:
        return [p for p in range(self.n) if self.alive[p] and p != self.player]

    def enemy(self) -> int | None:
        """Whom its camp wants voted out."""
        if self.my_role == "werewolf":
            outsiders = [p for p in self._living() if p not in self.wolves]
            return self._top(outsiders, self._threat()) if outsiders else None
        living = self._living()
        return self._top(living, self.suspicion()) if living else None

    def friend(self, enemy: int | None) -> int | None:
        """Whom it vouches for: a werewolf its partner, the village its least suspected."""
        if self.my_role == "werewolf":
            partners = [p for p in self._living() if p in self.wolves]
            return partners[0] if partners else None
        score = self.suspicion()
        others = [p for p in self._living() if p != enemy]
        return min(others, key=lambda p: (score[p], p)) if others else None

    def speech(self, act: str) -> str:
        """The speech of ``act`` (``realise``), noting a Seer claim for the information set."""
        text = self.realise(act)
        self.claimed = self.claimed or act.startswith("claim")
        return text

    def realise(self, act: str) -> str:
        """The speech of ``act`` (one of ``ACT_NAMES``). The targets are its own: the
        Seer's suspicion puts what it found first, so its claims state a finding where it
        has one, and bluff where it has none."""
        if act not in SPEECH_ACTS:
            raise ValueError(f"unknown speech act {act!r}; choose one of: {', '.join(ACT_NAMES)}")
        self.observe()
        enemy = self.enemy()
        friend = self.friend(enemy)
        accuse = suspect(enemy) if enemy is not None else ""
        vouch = trust(friend) if friend is not None else ""
        if act.startswith("claim"):
            target = enemy if act == "claim_accuse" else friend
            if target is None:
                return "I am the Seer."
            return f"I am the Seer. {werewolf_verdict(target, act == 'claim_accuse')}"
        parts = {
            "accuse": [accuse],
            "trust": [vouch],
            "trust_accuse": [vouch, accuse],
            "silent": [],
        }[act]
        return " ".join(p for p in parts if p) or "I have no information yet."

    def info_set(self) -> str:
        """The coarse information set of the speech about to be made: role, day, players
        and werewolves alive (the latter known to werewolves only), Seer claims heard,
        whether it was accused, whether it has claimed; the Seer also whether a werewolf it
        found is alive."""
        self.observe()
        wolves = str(sum(self.alive[p] for p in self.wolves)) if self.my_role == "werewolf" else "-"
        accused = any(t == self.player and w > 0 for _, t, w in self.accusations) or any(
            v.get(self.player) for c, v in self.claims.items() if c != self.player
        )
        claims = len([c for c in self.claims if c != self.player])
        found = any(w and self.alive[p] for p, w in self.inspected.items())
        parts = (
            self.my_role,
            bucket(max(self.day, 1), 3),
            str(sum(self.alive)),
            wolves,
            bucket(claims, 2),
            str(int(accused)),
            str(int(self.claimed)),
            str(int(found)) if self.my_role == "seer" else "-",
        )
        return "|".join(parts)


__all__ = ["ACT_NAMES", "SPEECH_ACTS", "LatentSpeaker", "anonymous", "speech_act"]
