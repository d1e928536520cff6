"""Sotopia as LLM players (and the LLM evaluator) read it (docs/games.md: in full).

Beside ``RULES`` and ``RULE_CHANGES``, this module states what differs from the social
deduction games: a player's identity is its character, the setting and its own goal and
secret (``identity``), its speech is asked for in character (``SPEECH_STYLE``,
``speech_example``), and the evaluator's instructions (``JUDGE``).
"""

from __future__ import annotations

from typing import Any

from stackelberg.games.base import Event, Game, player_name

RULES = (
    "Sotopia: a social scenario. Two characters talk, each with a private goal the other "
    "does not know, and sometimes a secret to keep.\n"
    "Turns alternate; on your turn you do one thing: say something, do something without "
    "words (write it between asterisks, e.g. *hands over the keys*), wait (write [none]) "
    "or leave (write [leave], then a farewell if you like).\n"
    "The conversation ends when someone leaves, when the turns run out, or when both wait "
    "for 2 rounds in a row. Afterwards each character is scored on reaching their goal, "
    "believability, knowledge, keeping secrets, the relationship, social rules and "
    "material benefits."
)
#: (option, value, the words of RULES, the words with the option at that value)
RULE_CHANGES: tuple[tuple[str, Any, str, str], ...] = (
    (
        "farewell_leaves",
        True,
        "or leave (write [leave], then a farewell if you like).",
        "or leave (write [leave], or say goodbye: a goodbye ends the conversation).",
    ),
)

#: why the conversation ended (an ``end`` event's reason), as players read it
END_WORDS = {
    "left": "a character left",
    "max_turns": "the turns ran out",
    "stale": "nobody did anything for a while",
}

SPEECH_STYLE = (
    "Speak as your character in one or two short sentences, working towards your goal. "
    "Do not reveal your secret."
)


def identity(game: Game, player: int) -> str:
    """Who the player is: the setting, its character and the other's public profile, its
    own goal and secret (never the other's)."""
    public = game.public_state()
    own = game.private_knowledge(player)
    other = 1 - player
    lines = [
        f"Setting: {public['setting']}",
        f"You are {player_name(player)}: {public['profiles'][player]}",
        f"{player_name(other)} is: {public['profiles'][other]}",
        f"You are {public['relationship']}.",
        f"Your private goal: {own['goal']}",
    ]
    if own["secret"]:
        lines.append(f"Your secret (keep it): {own['secret']}")
    return "\n".join(lines)


def event_line(game: Game, event: Event, viewer: int) -> str | None:
    """An event's words (``prompts.describe_event``); the scenario and the characters' goals
    only for the game master (-1): a player reads its own in its identity."""
    t, d, who = event.type, event.data, event.player
    if t == "act":
        return f"{player_name(who)} [action]: {d['text']}"
    if t == "none":
        return f"{player_name(who)} does nothing."
    if t == "leave":
        said = f' saying: "{d["text"]}"' if d["text"] else ""
        return f"{player_name(who)} leaves the conversation{said}."
    if t == "end":
        return f"The conversation ends: {END_WORDS[d['reason']]}."
    if viewer >= 0:
        return None
    if t == "scenario":
        people = " ".join(f"{player_name(i)}: {p}" for i, p in enumerate(d["profiles"]))
        return f"Scenario {d['id']} ({d['category']}): {d['setting']} {people}"
    if t == "character":
        secret = f" Secret: {d['secret']}" if d["secret"] else ""
        return f"{player_name(who)}'s goal: {d['goal']}{secret}"
    return None


def speech_example(game: Game, player: int) -> str:
    return '"I see your point, but could we meet halfway?" or *nods and smiles*'


#: the LLM evaluator's instructions (stackelberg.evaluation.judge fills in the episode)
JUDGE = (
    "You evaluate one character of a social conversation. Score them on each dimension, "
    "within its range, with a short reason:\n{dimensions}\n"
    "Answer with JSON only, one key per dimension: "
    '{{"goal": {{"score": 7, "reason": "..."}}, ...}}'
)
DIMENSION_WORDS = {
    "goal": "how far the character reached their private goal",
    "believability": "how natural and consistent the character was",
    "knowledge": "how much new, useful information the character gained",
    "secret": "how much of their secret the character revealed (0: kept it)",
    "relationship": "how the character changed the relationship (negative: harmed it)",
    "social_rules": "how far the character broke social or legal norms (0: none)",
    "financial_and_material_benefits": "the material gain or loss for the character",
}
