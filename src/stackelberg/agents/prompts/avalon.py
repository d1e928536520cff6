"""The rules of Avalon as LLM players read them (docs/games.md has them in full)."""

from __future__ import annotations

from typing import Any

#: the rules at the default options
RULES = (
    "Avalon: good (Merlin, Percival, Loyal Servants) against evil (Morgana, Assassin, ...).\n"
    "Evil players know each other; Merlin knows the evil players; Percival sees Merlin and "
    "Morgana but not which is which.\n"
    "Each quest: everyone speaks once, the leader proposes a team, then all vote at once; "
    "a strict majority approves, and the leader passes to the next seat after every vote.\n"
    "Five rejected teams in a row in one quest: evil wins.\n"
    "Team members secretly play Success or Fail (good must play Success); one Fail fails "
    "the quest (quest 4 with 7+ players needs two).\n"
    "Three failed quests: evil wins. Three successful quests: the Assassin names one "
    "player; if that is Merlin evil wins, otherwise good wins."
)
#: (option, value, the words of RULES, the words with the option at that value)
RULE_CHANGES: tuple[tuple[str, Any, str, str], ...] = (
    ("tied_team_vote", "approved", "a strict majority approves", "half the votes or more approve"),
    (
        "fifth_rejection",
        "quest_goes_anyway",
        "Five rejected teams in a row in one quest: evil wins.",
        "After five rejected teams in a row in one quest, the fifth team goes on the quest anyway.",
    ),
    (
        "assassin_timing",
        "once_after_any_quest",
        "Three successful quests: the Assassin names one player; if that is Merlin evil "
        "wins, otherwise good wins.",
        "Once in the game, after any quest, the Assassin may name one player as Merlin: "
        "if right, evil wins at once; if wrong, play goes on. Three successful quests: "
        "good wins, unless the Assassin has not tried yet and now names Merlin.",
    ),
)
