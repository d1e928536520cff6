"""The scripted ONUW player, asked to speak in one of the six tactics (``prompts.onuw.TACTICS``).

Each tactic is a template over what the scripted player knows (its night, the claims it
heard, its suspicion of each player), written so that ``scripted.onuw.parse_speech`` reads
it back. Honest means consistent with that knowledge, deceptive not; a werewolf's honest
evidence gives it away, a villager's deceptive defense shields its own suspect, so which
tactic helps depends on the seat, and that is what the policy learns.
"""

from __future__ import annotations

from stackelberg.agents.prompts.onuw import TACTICS
from stackelberg.agents.scripted.onuw import ONUWScripted, the

#: the tactics' names, in the policy's output order
TACTIC_NAMES: tuple[str, ...] = tuple(name for name, _ in TACTICS)


def player(q: int) -> str:
    return f"Player {q + 1}"


class TacticSpeaker(ONUWScripted):
    """Night actions and votes as the scripted player; speeches in the tactic it is given."""

    def observe(self) -> None:
        """Read what happened since the last look (the features read the result)."""
        self._read()

    @property
    def holds_werewolf(self) -> bool:
        return self.card_now == "werewolf"

    def accuser(self) -> int | None:
        """The last player who called this one a werewolf, a suspect or a liar."""
        me = self.player
        for s, sp in reversed(self.speeches):
            sighted = any(q == me and c == "werewolf" for q, c in sp["sightings"])
            if sighted or me in sp["suspects"] or me in sp["liars"]:
                return s
        return None

    def suspect(self) -> int:
        """Whom it truly believes holds a werewolf card (its known partners included)."""
        return self._suspect({self.player})[0]

    def enemy(self) -> int:
        """Whom its camp wants voted out: for the werewolf team, the most suspected outsider."""
        return self._suspect(self._exclude())[0]

    def trusted(self) -> int:
        """The other player it least suspects (a werewolf: outside its team)."""
        sus = self.suspicion()
        others = [q for q in range(self.n) if q not in self._exclude()] or [
            q for q in range(self.n) if q != self.player
        ]
        return min(others, key=lambda q: (sus[q], q))

    def speech(self, tactic: str) -> str:
        """The speech in ``tactic`` (one of ``TACTIC_NAMES``)."""
        if tactic not in TACTIC_NAMES:
            raise ValueError(f"unknown tactic {tactic!r}; choose one of: {', '.join(TACTIC_NAMES)}")
        self._read()
        self.spoken += 1
        honest = tactic.startswith("honest")
        kind = tactic.split()[1]
        if kind == "evidence":
            return self._true_claim() if honest else self._fake_claim()
        if kind == "accusation":
            if honest:
                return f"I suspect {player(self.suspect())}."
            target = player(self.enemy())
            claim = "I am the Seer. " if self.spoken == 1 else ""
            return f"{claim}I saw {target} is a Werewolf. I suspect {target}."
        return self._defense(honest)

    def _defense(self, honest: bool) -> str:
        """Itself, restating a role (listeners read the claim, not the denial), or another."""
        accuser = self.accuser()
        answer = f" {player(accuser)} is lying." if accuser is not None else ""
        if honest:
            if not self.holds_werewolf:
                return f"I am not a werewolf. I am {the(self.acting)}.{answer}"
            return f"{player(self.trusted())} is not a werewolf."
        if self.holds_werewolf:
            return f"I am not a werewolf. I am {the(self.fake or 'villager')}.{answer}"
        partners = [q for q in self.wolves if q != self.player]
        shielded = partners[0] if self.evil and partners else self.suspect()
        return f"{player(shielded)} is not a werewolf."


__all__ = ["TACTIC_NAMES", "TacticSpeaker"]
