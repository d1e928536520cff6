"""The rules of Werewolf as LLM players read them (docs/games.md has them in full)."""

from __future__ import annotations

from typing import Any

#: the rules at the default options
RULES = (
    "Werewolf. Teams: werewolves (they know each other) and the village (seer, guardian, "
    "villagers; optionally witch, doctor).\n"
    "Each night the werewolves pick a victim; the guardian protects one player (not the "
    "same one two nights in a row); the seer learns whether one player is a werewolf; a "
    "witch has one save and one poison potion; a doctor protects anyone.\n"
    "At dawn the night's deaths are announced. Then every living player speaks once, in a "
    "random order, and everyone votes to eliminate one living player (you may abstain); "
    "most votes is eliminated (no self-votes). Dead players' roles stay secret by default.\n"
    "The village wins when all werewolves are dead; the werewolves win when they are at "
    "least as many as the others alive. After the day limit (10 by default) it is a draw."
)
#: (option, value, the words of RULES, the words with the option at that value)
RULE_CHANGES: tuple[tuple[str, Any, str, str], ...] = (
    (
        "guardian_may_repeat",
        True,
        "the guardian protects one player (not the same one two nights in a row)",
        "the guardian protects one player (any living player)",
    ),
    (
        "wolf_victim",
        "last_wolf",
        "Each night the werewolves pick a victim;",
        "Each night the werewolves pick a victim (each wolf in seat order names one; the "
        "last wolf's choice counts);",
    ),
)
