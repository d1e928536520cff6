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

#: strategist's dialogue guide (after Strategist, Light et al. 2024): the questions it
#: answers before a speech, per role, with its intended action and belief given
GUIDE: dict[str, str] = {
    "merlin": "1) Which evil players must stay off the team? 2) How can you steer the team "
    "that way without showing that you know, so the Assassin cannot find you?",
    "percival": "1) Which of the two you see acts like Merlin, and which like Morgana? "
    "2) How can you shield Merlin and back a clean team?",
    "loyal_servant": "1) Who has been on failed quests or backed bad teams? 2) Which team "
    "would you trust, and how will you convince the others?",
    "evil": "1) Which good players suspect you or your partners? 2) How can you look loyal, "
    "get an evil player onto the team, and spot who Merlin is?",
}
#: strategist's belief step, after each discussion round
RATING_QUESTION = (
    "How did this discussion change your view of each other player? For each, rate evil "
    "and Merlin from -2 (much less likely) to +2 (much more likely). Answer in one line, "
    "for example: {example}"
)
RATING_REASK = "That answer rated no player. Answer again in one line, for example: {example}"


def guide_questions(role: str) -> str:
    """The dialogue guide of a role (every evil role shares one)."""
    return GUIDE.get(role, GUIDE["evil"])


def rating_example(others: list[int]) -> str:
    """An answer in the expected form, naming the first two of ``others`` (0-based ids)."""
    a, *rest = others
    b = rest[0] if rest else a
    return f"Player {a + 1}: evil +1, Merlin 0; Player {b + 1}: evil -2, Merlin +1"
