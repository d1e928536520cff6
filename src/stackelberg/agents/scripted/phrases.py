"""The sentences scripted players say, defined once.

The scripted agents speak them and their parsers read them back; the scripted intent
labeler (``stackelberg.persuasion.truth``) writes a follower's desired and undesired
responses with the same sentences, so that what it labels is what the players act on.
Player names come from the games' own ``player_name``.
"""

from __future__ import annotations

from collections.abc import Sequence

from stackelberg.agents.prompts.words import names
from stackelberg.games.base import player_name

# ---- about another player (Werewolf, Avalon, ONUW) -------------------------------------------


def trust(pid: int) -> str:
    return f"I trust {player_name(pid)}."


def suspect(pid: int) -> str:
    return f"I suspect {player_name(pid)}."


def vote_for(pid: int) -> str:
    return f"I will vote for {player_name(pid)}."


def lying(pid: int) -> str:
    return f"{player_name(pid)} is lying."


def werewolf_verdict(pid: int, wolf: bool) -> str:
    """A Seer's finding ("Player 3 is a werewolf."), also said of anyone by anyone."""
    return f"{player_name(pid)} is {'a' if wolf else 'not a'} werewolf."


def seer_claim(findings: Sequence[str]) -> str:
    """A (true or fake) Werewolf Seer's claim and its findings, each a ``werewolf_verdict``."""
    return " ".join(["I am the Seer.", *findings])


def trustworthy(ids: Sequence[int]) -> str:
    return f"{names(ids)} {'looks' if len(ids) == 1 else 'look'} trustworthy."


# ---- Avalon's team -------------------------------------------------------------------------

APPROVE_TEAM = "I will approve this team."
REJECT_TEAM = "I vote to reject this team."


def propose(ids: Sequence[int]) -> str:
    return f"I propose {names(ids)}."


# ---- Sotopia's moves -----------------------------------------------------------------------

LEAVE = "[leave] Thank you for talking this through, goodbye."


def offer(words: str) -> str:
    return f"Hello! Here is what I propose: {words}. Would that work for you?"


def concede(words: str) -> str:
    return f"Alright, {words} is fine with me. Let's do that, thank you."


def ask(words: str) -> str:
    return f"What would you need from me to agree on {words}?"


def insist(words: str) -> str:
    return f"I hear you, but I really need {words}. Could we meet halfway?"


# ---- what a listener may answer about one player -------------------------------------------


def not_werewolf(pid: int) -> str:
    return werewolf_verdict(pid, False)


def werewolf(pid: int) -> str:
    return werewolf_verdict(pid, True)


def trustworthy_one(pid: int) -> str:
    return trustworthy([pid])
