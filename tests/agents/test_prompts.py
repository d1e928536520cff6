"""The rules text players read: the stated rules at the defaults, adapted by each option
that changes a stated rule (and only by it). The expected words are written here, not read
from the prompts modules' own table, so that a wrong table or a wrong substitution fails."""

from __future__ import annotations

import pytest

from stackelberg.agents.prompting import player_spec
from stackelberg.agents.prompts import prompts_of, rules_text
from stackelberg.games import GAME_NAMES, make_game

#: game -> option -> (its value that changes a stated rule, the words of the default rules it
#: replaces, the words it puts in their place); written here, apart from the prompts modules
CHANGED: dict[str, dict[str, tuple[object, str, str]]] = {
    "werewolf": {
        "guardian_may_repeat": (
            True,
            "(not the same one two nights in a row)",
            "(any living player)",
        ),
        "wolf_victim": (
            "last_wolf",
            "pick a victim;",
            "pick a victim (each wolf in seat order names one; the last wolf's choice counts);",
        ),
    },
    "avalon": {
        "discussion": (
            "first_attempt",
            "Each quest: everyone speaks once, the leader proposes a team,",
            "Each quest: everyone speaks once before its first team only; the leader proposes "
            "a team,",
        ),
        "tied_team_vote": (
            "approved",
            "a strict majority approves",
            "half the votes or more approve",
        ),
        "fifth_rejection": (
            "quest_goes_anyway",
            "Five rejected teams in a row in one quest: evil wins.",
            "After five rejected teams in a row in one quest, the fifth team goes on the quest "
            "anyway.",
        ),
        "assassin_timing": (
            "once_after_any_quest",
            "Three successful quests: the Assassin names one player; if that is Merlin evil wins, "
            "otherwise good wins.",
            "Once in the game, after any quest, the Assassin may name one player as Merlin: if "
            "right, evil wins at once; if wrong, play goes on. Three successful quests: good wins, "
            "unless the Assassin has not tried yet and now names Merlin.",
        ),
    },
    "onuw": {
        "deal_werewolf_to_player": (
            True,
            "gets a secret card;",
            "gets a secret card (at least one player is dealt a werewolf);",
        ),
        "lone_wolf_peek": (
            False,
            "(a lone werewolf may look at a centre card)",
            "(a lone werewolf learns it is alone)",
        ),
        "speaking_order": (
            "shuffled_once",
            "rounds of discussion,",
            "rounds of discussion (one speaking order, drawn at random, for every round),",
        ),
        "no_werewolf_result": (
            "draw",
            "(or, with no werewolf among the players, if nobody dies)",
            "(with no werewolf among the players the village cannot win: nobody dying is a draw)",
        ),
    },
    "sotopia": {
        "farewell_leaves": (
            True,
            "(write [leave], then a farewell if you like).",
            "(write [leave], or say goodbye: a goodbye ends the conversation).",
        ),
    },
}


def rules(name: str, options: dict | None = None) -> str:
    return rules_text(make_game(name, options))


def test_every_game_and_every_rule_changing_option_has_a_case_here():
    assert set(CHANGED) == set(GAME_NAMES)
    for name, cases in CHANGED.items():
        assert {option for option, *_ in prompts_of(name).RULE_CHANGES} == set(cases)
        assert set(cases) <= set(make_game(name).Config.model_fields)


@pytest.mark.parametrize("name", GAME_NAMES)
def test_the_default_rules_state_the_default_rule_of_every_option(name):
    text = rules(name)
    for _, old, new in CHANGED[name].values():
        assert text.count(old) == 1 and new not in text


@pytest.mark.parametrize("name", GAME_NAMES)
def test_each_option_changes_its_own_words_and_nothing_else(name):
    for option, (value, old, new) in CHANGED[name].items():
        assert rules(name, {option: value}) == rules(name).replace(old, new), option


@pytest.mark.parametrize("name", GAME_NAMES)
def test_all_options_together_change_every_rule(name):
    expected = rules(name)
    for _, old, new in CHANGED[name].values():
        expected = expected.replace(old, new)
    assert rules(name, {option: value for option, (value, *_) in CHANGED[name].items()}) == expected


def test_an_option_at_its_default_value_leaves_the_rules_alone():
    """Set explicitly to the default, an option is no change (the rules compare values)."""
    assert rules("onuw", {"lone_wolf_peek": True}) == rules("onuw")
    assert rules("avalon", {"tied_team_vote": "rejected"}) == rules("avalon")


def test_a_player_prompt_starts_with_the_rules():
    game = make_game("werewolf").reset(0)
    assert player_spec(game, 0, "Vote.").system.startswith(prompts_of("werewolf").RULES + "\n\n")
