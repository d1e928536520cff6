"""The rules of Werewolf as LLM players read them (docs/games.md has them in full)."""

from __future__ import annotations

from typing import Any

from stackelberg.games.base import Event, Game, player_name

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


def event_line(game: Game, event: Event, viewer: int) -> str | None:
    """An event's words (``prompts.describe_event``), dated by night or day."""
    t, d = event.type, event.data
    when = f"{'Night' if event.phase == 'night' else 'Day'} {event.round}"
    actor = None if event.player is None else player_name(event.player)
    tgt = d.get("target")
    tname = "nobody" if tgt is None else player_name(tgt)
    if t == "werewolves":
        return "The werewolves are " + " and ".join(player_name(w) for w in d["werewolves"]) + "."
    if t == "wolf_choice":
        return f"{when}: {actor} wants to kill {tname}."
    if t == "kill":
        return f"{when}: the werewolves attack {tname}."
    if t == "protect":
        return f"{when}: {'you' if event.player == viewer else actor} protected {tname}."
    if t == "save":
        return f"{when}: you used your save potion on {tname}."
    if t == "poison":
        return f"{when}: you poisoned {tname}."
    if t == "inspect":
        what = "a werewolf" if d["is_werewolf"] else "not a werewolf"
        return f"{when}: you inspected {tname}: {what}."
    if t == "death":
        if not d["players"]:
            return f"{when}: nobody died during the night."
        return (
            f"{when}: "
            + ", ".join(player_name(p) for p in d["players"])
            + " died during the night."
        )
    if t == "role_reveal":
        return f"{player_name(d['player'])} was a {d['role']}."
    if t == "vote":
        return f"{actor} abstains." if tgt is None else f"{actor} votes for {tname}."
    if t == "eliminate":
        if d["player"] is None:
            return f"{when}: nobody is eliminated."
        return f"{when}: {player_name(d['player'])} is eliminated by vote."
    return None
