"""What an ONUW player knows when it is about to speak, as a fixed-size vector.

Read from a ``TacticSpeaker`` (the scripted player's bookkeeping of the events it saw),
so the features mean the same whoever speaks. The size does not depend on the number of
players: counts are shares or squashed, players are summarised, never listed.
"""

from __future__ import annotations

import math

from stackelberg.agents.tactics.speech import TacticSpeaker
from stackelberg.games.onuw import ROLE_TEAM

#: the cards, in the order of the role features
ROLES: tuple[str, ...] = tuple(ROLE_TEAM)

#: the name of each feature, in vector order (a saved policy keeps them, to refuse a mismatch)
FEATURES: tuple[str, ...] = (
    *(f"acting:{r}" for r in ROLES),  # the role it woke as (a doppelganger: the copy)
    "doppelganger",
    "card:unknown",  # the drunk: it does not know its card
    "card:werewolf",
    "card:minion",
    "card:moved",  # it knows its card changed at night
    "saw:werewolf",  # it saw a player's werewolf card
    "saw:village",  # it saw a player's other card
    "saw:center",  # centre cards seen, of 2
    "partners",  # other werewolves it knows, of 2
    "masons",
    "lone_werewolf",
    "round",  # its speeches so far, of the rounds
    "first_speech",
    "last_round",
    "heard",  # speeches heard, of one per other player and round
    "claims",  # others who claimed a role, of the others
    "claim:mine",  # someone claimed the role it woke as
    "claim:seer",
    "claim:werewolf",
    "hides",  # someone would not say their role
    "accused:werewolf",  # called a werewolf by someone
    "accused:suspect",  # suspected or voted for by someone
    "accused:liar",
    "accused:partner",  # a werewolf partner called a werewolf or a suspect
    "cleared",  # someone said it is not a werewolf
    "suspicion:top",  # how sure it is of its main suspect (squashed)
    "suspicion:margin",  # top minus second (squashed)
    "suspect:partner",  # its main suspect is a known werewolf
)


def squash(x: float) -> float:
    return math.tanh(x / 4.0)


def features(speaker: TacticSpeaker) -> list[float]:
    """The vector of ``FEATURES`` for the speech ``speaker`` is about to make (it must have
    observed the events before)."""
    me, n = speaker.player, speaker.n
    others = max(n - 1, 1)
    acting = [float(speaker.acting == r) for r in ROLES]
    partners = [q for q in speaker.wolves if q != me]
    speeches = speaker.speeches
    claims = {s: sp["claim"] for s, sp in reversed(speeches) if sp["claim"]}
    accused = {"werewolf": 0, "suspect": 0, "liar": 0, "partner": 0, "cleared": 0}
    for _, sp in speeches:
        accused["werewolf"] += any(q == me and c == "werewolf" for q, c in sp["sightings"])
        accused["suspect"] += me in sp["suspects"]
        accused["liar"] += me in sp["liars"]
        accused["cleared"] += me in sp["not_wolf"]
        accused["partner"] += any(q in partners for q in sp["suspects"]) or any(
            q in partners and c == "werewolf" for q, c in sp["sightings"]
        )
    sus = sorted(((x, q) for q, x in enumerate(speaker.suspicion()) if q != me), reverse=True)
    top = sus[0][0] if sus else 0.0
    second = sus[1][0] if len(sus) > 1 else top
    rounds = max(speaker.rounds, 1)
    vector = [
        *acting,
        float(speaker.dealt == "doppelganger"),
        float(speaker.card_now is None),
        float(speaker.card_now == "werewolf"),
        float(speaker.card_now == "minion"),
        float(speaker.card_now not in (None, speaker.dealt)),
        float(any(c == "werewolf" for c in speaker.seen.values())),
        float(any(c != "werewolf" for c in speaker.seen.values())),
        len(speaker.center_seen) / 2.0,
        min(len(partners), 2) / 2.0,
        float(any(q != me for q in speaker.masons)),
        float(speaker.card_now == "werewolf" and not partners),
        speaker.spoken / rounds,
        float(speaker.spoken == 0),
        float(speaker.spoken + 1 >= rounds),
        min(len(speeches) / (others * rounds), 1.0),
        len(claims) / others,
        float(speaker.acting in claims.values()),
        float("seer" in claims.values()),
        float("werewolf" in claims.values()),
        float(any(sp["hides"] for _, sp in speeches)),
        *(squash(accused[k]) for k in ("werewolf", "suspect", "liar", "partner", "cleared")),
        squash(top),
        squash(top - second),
        float(bool(sus) and sus[0][1] in partners),
    ]
    assert len(vector) == len(FEATURES)
    return vector


__all__ = ["FEATURES", "ROLES", "features"]
