"""The rules of One Night Ultimate Werewolf as LLM players read them (docs/games.md: in full)."""

from __future__ import annotations

from typing import Any

from stackelberg.agents.prompts.words import names
from stackelberg.games.base import Event, Game, player_name
from stackelberg.games.onuw import role_name

#: the rules at the default options
RULES = (
    "One Night Ultimate Werewolf. Each player gets a secret card; the rest lie face down in "
    "the centre.\n"
    "At night, in order: the werewolves see each other (a lone werewolf may look at a centre "
    "card); the minion sees the werewolves; masons see each other; the seer looks at one "
    "player's card or two centre cards; the robber swaps cards with a player and sees the "
    "new card; the troublemaker swaps two other players' cards; the drunk swaps with a "
    "centre card unseen; the insomniac sees their final card. The doppelganger copies "
    "another player's card first.\n"
    "Your team is the card you hold at the END of the night, which may have been moved.\n"
    "Day: a few rounds of discussion, then everyone votes at once. The most voted player(s) "
    "die (nobody if no one gets 2+ votes); a dead hunter also kills whom they voted for.\n"
    "The village wins if a werewolf dies (or, with no werewolf among the players, if nobody "
    "dies); the werewolves and minion win if a werewolf is among the players and none "
    "dies; the tanner wins only if he dies, and then the werewolves cannot win."
)
#: (option, value, the words of RULES, the words with the option at that value)
RULE_CHANGES: tuple[tuple[str, Any, str, str], ...] = (
    (
        "deal_werewolf_to_player",
        True,
        "Each player gets a secret card;",
        "Each player gets a secret card (at least one player is dealt a werewolf);",
    ),
    (
        "lone_wolf_peek",
        False,
        "(a lone werewolf may look at a centre card)",
        "(a lone werewolf learns it is alone)",
    ),
    (
        "speaking_order",
        "shuffled_once",
        "Day: a few rounds of discussion,",
        "Day: a few rounds of discussion (one speaking order, drawn at random, for every round),",
    ),
    (
        "no_werewolf_result",
        "draw",
        "(or, with no werewolf among the players, if nobody dies)",
        "(with no werewolf among the players the village cannot win: nobody dying is a draw)",
    ),
)

#: The speaking tactics an ``llm_ins`` (or ``rl_ins``) player picks from before it speaks ("Learning to
#: Discuss Strategically", Jin et al. 2024): honest (consistent with what the player knows
#: and believes) or deceptive (not), each as evidence, accusation or defense.
TACTICS: tuple[tuple[str, str], ...] = (
    ("honest evidence", "share what you truly know or saw"),
    ("honest accusation", "accuse the player you truly suspect"),
    ("honest defense", "defend yourself or another player truthfully"),
    ("deceptive evidence", "give false information that helps your team"),
    ("deceptive accusation", "accuse a player you do not truly suspect"),
    ("deceptive defense", "defend yourself or another player with a lie"),
)


def _woken_together(group: list[int], viewer: int, one: str, many: str) -> str:
    """A group woken together (the werewolves, the masons) as one of them reads it."""
    if group == [viewer]:
        return f"Night: you are the only {one}."
    return f"Night: the {many} are {names(group)}."


def event_line(game: Game, event: Event, viewer: int) -> str | None:
    """An event's words (``prompts.describe_event``): a night action only for its actor."""
    t, d, actor = event.type, event.data, event.player
    if t == "vote":
        return f"{player_name(actor)} voted for {player_name(d['target'])}."
    if t == "speaking_order":
        return f"Day: every discussion round goes in this order: {names(d['order'])}."
    if t == "death":
        if actor is not None:
            return f"{player_name(actor)} was the Hunter and takes {player_name(d['players'][0])} down too."
        return f"{names(d['players'])} died." if d["players"] else "Nobody died."
    if t == "werewolves":
        return _woken_together(d["werewolves"], viewer, "werewolf", "werewolves")
    if t == "minion":
        w = d["werewolves"]
        return f"Night: the werewolves are {names(w)}." if w else "Night: no player is a werewolf."
    if t == "masons":
        return _woken_together(d["masons"], viewer, "mason", "masons")
    if actor != viewer:
        return None
    if t == "doppelganger":
        return f"Night: you looked at {player_name(d['target'])}'s card, the {role_name(d['card'])}; you are now a copy of it."
    if t == "werewolf_peek":
        return (
            f"Night: you looked at centre card {d['center_index'] + 1}: the {role_name(d['card'])}."
        )
    if t == "seer":
        if "target" in d:
            return f"Night: you looked at {player_name(d['target'])}'s card: the {role_name(d['card'])}."
        (i, j), (a, b) = d["center_indexes"], d["cards"]
        return f"Night: you looked at centre cards {i + 1} and {j + 1}: the {role_name(a)} and the {role_name(b)}."
    if t == "rob":
        return f"Night: you swapped cards with {player_name(d['target'])}; your new card is the {role_name(d['new_card'])}."
    if t == "troublemake":
        a, b = d["targets"]
        return f"Night: you swapped the cards of {player_name(a)} and {player_name(b)}."
    if t == "drunk":
        return f"Night: you swapped your card with centre card {d['center_index'] + 1} without looking."
    if t == "insomniac":
        return f"Night: at the end of the night your card is the {role_name(d['card'])}."
    return None
