"""The human seat driven by scripted input: numbered options, free speech, re-asking, quitting."""

from __future__ import annotations

import io
import random

import pytest

from stackelberg.agents import make_agent
from stackelberg.agents.human import HumanAgent, HumanQuit
from stackelberg.agents.prompts import rules_text
from stackelberg.agents.runner import Table, play_tables
from stackelberg.games import make_game
from stackelberg.games.base import Decision


def seated(answers: str, game_name: str = "werewolf") -> tuple[HumanAgent, io.StringIO]:
    out = io.StringIO()
    human = HumanAgent(io.StringIO(answers), out)
    game = make_game(game_name)
    game.reset(0)
    human.setup(game, 0, random.Random(0))
    return human, out


def test_choice_is_numbered_and_bad_input_is_asked_again():
    human, out = seated("zero\n0\n4\n 2 \n")
    decision = Decision(0, "vote", (1, 2, None), "Vote: whom to eliminate?")
    assert human.act(decision) == 2
    text = out.getvalue()
    assert "Your secret role:" in text and "Now: Vote: whom to eliminate?" in text
    assert "  1) Player 2\n  2) Player 3\n  3) nobody (abstain)\n" in text
    assert text.count("Please type a number from 1 to 3.") == 3


def test_speech_is_free_text_and_empty_lines_are_asked_again():
    human, out = seated("\n   \nI am the seer. Player 4 is a wolf.\n")
    assert human.act(Decision(0, "speak", None, "Speak.")) == "I am the seer. Player 4 is a wolf."
    assert out.getvalue().count("Please say something") == 2


def test_single_option_is_taken_without_asking():
    human, out = seated("")
    assert human.act(Decision(0, "vote", (3,), "Vote.")) == 3
    assert "Only one option: Player 4." in out.getvalue()


def test_end_of_input_and_ctrl_c_quit():
    human, _ = seated("1\n")
    decision = Decision(0, "vote", (1, 2), "Vote.")
    assert human.act(decision) == 1
    with pytest.raises(HumanQuit) as quit:
        human.act(decision)
    assert quit.value.status == 1 and str(quit.value) == "end of input"

    class Interrupting(io.StringIO):
        def readline(self, *args):
            raise KeyboardInterrupt

    human.stdin = Interrupting()
    with pytest.raises(HumanQuit) as quit:
        human.act(decision)
    assert quit.value.status == 130


@pytest.mark.parametrize("game_name", ["werewolf", "avalon", "onuw"])
def test_a_whole_game_with_a_human_seat(game_name):
    answers = "oops\n" + "1\n" * 200  # "1" is a legal choice and a speech
    out = io.StringIO()
    game = make_game(game_name)
    game.reset(3)
    agents = [make_agent("scripted", game_name) for _ in range(game.n_players)]
    agents[1] = HumanAgent(io.StringIO(answers), out)
    record = play_tables([Table(game, agents, 3)])[0]
    assert record["players"][1]["agent"] == "human"
    text = out.getvalue()
    assert "You are Player 2." in text and "Choose 1-" in text and "Your speech" in text
    assert rules_text(game).splitlines()[0] in text
