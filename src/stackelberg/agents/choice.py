"""Choosing a legal option by answering in words, for models that cannot score text.

A player on an API chat model (GPT-4o, Gemini, Claude) sees the legal options as a
numbered list and answers in words. ``parse_choice`` reads the answer against the options:
the option's number, a player's name, or an option's label, ignoring case and punctuation.
An answer that names no option, several options, or an option that is not legal comes back
with a one-line reason, which the player is asked again with (see ``llm_agents``).

>>> parse_choice("I vote for Player 3!", ["Player 2", "Player 3"]).index
1
>>> parse_choice("2", ["approve", "reject"]).index
1
>>> parse_choice("Player 5", ["Player 2", "Player 3"]).reason
'Player 5 is not one of the options'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

CHOICE_MODES = ("auto", "score", "generate")
_NOT_WORD = re.compile(r"[^a-z0-9]+")
_OPTION_NUMBER = re.compile(r"^(?:option|number|no)?\s*(\d+)$")
_PLAYER = re.compile(r"\bplayer (\d+)\b")
_NUMBER = re.compile(r"(?<!player )\b(\d+)\b")


@dataclass(frozen=True)
class ParsedChoice:
    """The option an answer names (its index), or why none could be taken."""

    index: int | None
    reason: str = ""


def normalize(text: str) -> str:
    """Lower case, punctuation as spaces, single spaces."""
    return " ".join(_NOT_WORD.sub(" ", text.lower()).split())


def numbered_options(labels: Sequence[str]) -> str:
    """The options as the numbered list a player reads."""
    return "\n".join(f"{i}. {label}" for i, label in enumerate(labels, 1))


def choice_question(prompt: str, labels: Sequence[str]) -> str:
    return (
        f"{prompt}\nOptions:\n{numbered_options(labels)}\n"
        "Answer with the number of one option only."
    )


def reask(reason: str, n_options: int) -> str:
    """The one-line message that asks again after an unusable answer."""
    return f"{reason}. Answer again with one number from 1 to {n_options}."


def parse_choice(answer: str, labels: Sequence[str]) -> ParsedChoice:
    """Which of ``labels`` an answer names (see the module docstring for the rules)."""
    text = normalize(answer)
    if not text:
        return ParsedChoice(None, "The answer was empty")
    norms = [normalize(label) for label in labels]
    if text in norms:
        return ParsedChoice(norms.index(text))
    if m := _OPTION_NUMBER.match(text):
        k = int(m.group(1))
        if 1 <= k <= len(labels):
            return ParsedChoice(k - 1)
        return ParsedChoice(None, f"There is no option {k}; the options are 1 to {len(labels)}")
    named = [i for i, n in enumerate(norms) if n and re.search(rf"\b{re.escape(n)}\b", text)]
    # "Player 1" inside "Player 1 and Player 3" is part of the longer option, not its own.
    named = [i for i in named if not any(j != i and norms[i] in norms[j] for j in named)]
    if len(named) == 1:
        return ParsedChoice(named[0])
    if len(named) > 1:
        both = ", ".join(labels[i] for i in named)
        return ParsedChoice(None, f"The answer names several options ({both})")
    if not text.isdigit():  # an answer that is part of one option's words ("abstain")
        within = [i for i, n in enumerate(norms) if re.search(rf"\b{re.escape(text)}\b", n)]
        if len(within) == 1:
            return ParsedChoice(within[0])
    said = {int(x) for x in _PLAYER.findall(text)}
    teams = [{int(x) for x in _PLAYER.findall(n)} for n in norms]
    if said and (same := [i for i, team in enumerate(teams) if team == said]):
        return ParsedChoice(same[0])  # a team in other words ("Player 1, Player 4")
    if outside := sorted(said - set().union(*teams)):
        return ParsedChoice(None, f"Player {outside[0]} is not one of the options")
    if said:
        return ParsedChoice(None, "The answer names no option exactly")
    numbers = {int(x) for x in _NUMBER.findall(text)}
    if len(numbers) == 1 and 1 <= (k := numbers.pop()) <= len(labels):
        return ParsedChoice(k - 1)
    return ParsedChoice(None, "The answer names none of the options")


__all__ = [
    "CHOICE_MODES",
    "ParsedChoice",
    "choice_question",
    "normalize",
    "numbered_options",
    "parse_choice",
    "reask",
]
