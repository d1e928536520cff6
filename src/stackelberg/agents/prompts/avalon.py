"""The rules of Avalon as LLM players read them (docs/games.md has them in full)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stackelberg.games.base import Event, Game, player_name

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
    (
        "discussion",
        "first_attempt",
        "Each quest: everyone speaks once, the leader proposes a team,",
        "Each quest: everyone speaks once before its first team only; the leader proposes a team,",
    ),
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


def _team(ids: Sequence[int]) -> str:
    return ", ".join(player_name(p) for p in ids)


def event_line(game: Game, event: Event, viewer: int) -> str | None:
    """An event's words (``prompts.describe_event``)."""
    t, d = event.type, event.data
    if t == "propose":
        return (
            f"Quest {d['quest']}, attempt {d['attempt']}: {player_name(event.player)} "
            f"proposes the team {_team(d['team'])}."
        )
    if t == "vote":
        return f"{player_name(event.player)} votes {'approve' if d['approve'] else 'reject'}."
    if t == "team_result":
        verdict = "approved" if d["approved"] else "rejected"
        return f"The team is {verdict} ({d['approvals']} of {game.n_players} approve)."
    if t == "forced_team":
        return (
            f"That was the fifth rejected team in a row: {_team(d['team'])} go on quest "
            f"{d['quest']} anyway."
        )
    if t == "quest":
        verdict = "succeeds" if d["success"] else "fails"
        return (
            f"Quest {d['quest']} ({_team(d['team'])}) {verdict} with {d['fails']} "
            f"Fail card{'s' if d['fails'] != 1 else ''}."
        )
    if t == "assassinate":
        if d["target"] is None:
            return f"After quest {event.round} you keep your assassination attempt for later."
        line = f"The Assassin ({player_name(event.player)}) names {player_name(d['target'])} as Merlin."
        if game.config.assassin_timing == "once_after_any_quest":
            hit = game.players[d["target"]].role == "merlin"
            line += " That is Merlin." if hit else " That is not Merlin."
        return line
    if t == "knowledge":
        role = game.players[event.player].role
        seen = _team(d["sees"]) if d["sees"] else "nobody"
        if role == "merlin":
            return f"You see the evil players: {seen}."
        if role == "percival":
            return f"Merlin is among: {seen} (the other may be Morgana)."
        return f"Your fellow evil players: {seen}."
    return None
