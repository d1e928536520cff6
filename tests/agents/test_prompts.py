"""The rules text players read: the stated rules at the defaults, adapted by each option
that changes a stated rule (and only by it)."""

from __future__ import annotations

import pytest

from stackelberg.agents.prompting import player_spec
from stackelberg.agents.prompts import prompts_of, rules_text
from stackelberg.games import GAME_NAMES, make_game

#: game -> (options, words that must appear, words that must not)
CHANGED = {
    "werewolf": (
        {"guardian_may_repeat": True, "wolf_victim": "last_wolf"},
        ["any living player", "the last wolf's choice counts"],
        ["not the same one two nights in a row"],
    ),
    "avalon": (
        {
            "tied_team_vote": "approved",
            "fifth_rejection": "quest_goes_anyway",
            "assassin_timing": "once_after_any_quest",
        },
        [
            "half the votes or more approve",
            "the fifth team goes on the quest anyway",
            "Once in the game, after any quest, the Assassin may name one player",
        ],
        ["a strict majority approves"],
    ),
    "onuw": (
        {
            "speaking_order": "shuffled_once",
            "lone_wolf_peek": False,
            "no_werewolf_result": "draw",
            "deal_werewolf_to_player": True,
        },
        [
            "(at least one player is dealt a werewolf)",
            "a lone werewolf learns it is alone",
            "one speaking order, drawn at random, for every round",
            "nobody dying is a draw",
        ],
        ["may look at a centre"],
    ),
    "sotopia": (
        {"farewell_leaves": True},
        ["a goodbye ends the conversation"],
        ["then a farewell if you like"],
    ),
}


def test_every_game_has_rules_and_a_case_here():
    assert set(CHANGED) == set(GAME_NAMES)


@pytest.mark.parametrize("name", GAME_NAMES)
def test_rules_text_follows_the_options(name):
    assert rules_text(make_game(name)) == prompts_of(name).RULES
    options, present, absent = CHANGED[name]
    text = rules_text(make_game(name, options))
    assert all(words in text for words in present)
    assert not any(words in text for words in absent)


@pytest.mark.parametrize("name", GAME_NAMES)
def test_each_option_changes_only_its_own_words(name):
    """One option at its other value replaces exactly its own words of the default text."""
    default = prompts_of(name).RULES
    for option, value, old, new in prompts_of(name).RULE_CHANGES:
        assert rules_text(make_game(name, {option: value})) == default.replace(old, new)


def test_a_player_prompt_starts_with_the_rules():
    game = make_game("werewolf").reset(0)
    assert player_spec(game, 0, "Vote.").system.startswith(prompts_of("werewolf").RULES + "\n\n")
