"""The Refiner's prompt options, output formats and parser, and its one style for sampling,
GRPO and play."""

from __future__ import annotations

from pathlib import Path

import pytest

from stackelberg.agents.prompts import rules_text
from stackelberg.agents.refiner import (
    RefinerProfile,
    RefinerStyle,
    ended_before_limit,
    parse_refiner_output,
    refiner_spec,
)
from stackelberg.games import make_game
from stackelberg.params import load_params
from stackelberg.persuasion.candidates import SampleSettings

ROOT = Path(__file__).resolve().parents[2]
BASE = "I suspect Player 4."


@pytest.fixture(scope="module")
def game():
    g = make_game("werewolf")
    g.reset(3)
    return g


# ---- the parser ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I trust Player 2, and so should you.", ("I trust Player 2, and so should you.", True)),
        ("  Player 4 lied. Vote Player 4.\n", ("Player 4 lied. Vote Player 4.", True)),
        ("I trust Player 2.\nAnd a second line.", ("I trust Player 2.", True)),
        ('"Player 4 is a werewolf."', ("Player 4 is a werewolf.", True)),
        ('Your planned speech: "I suspect Player 4."', ("I suspect Player 4.", True)),
        ("Player 3: I trust Player 2.", ("I trust Player 2.", True)),  # speaker tag dropped
        ("Response: Vote Player 4 today.", ("Vote Player 4 today.", True)),
        ("Analysis: be firm.\nResponse: Vote Player 4.", ("Vote Player 4.", True)),
    ],
)
def test_speech_format_parses_one_line_of_speech(text, expected):
    assert parse_refiner_output(text, BASE, "speech") == expected


@pytest.mark.parametrize(
    ("text", "used"),
    [
        ("", BASE),  # nothing written: the planned speech is said
        ("\n", BASE),
        ("Analysis: I want Player 5 to vote with me.", BASE),
        # otherwise the text is used as it is, but it does not count as parsed
        ("The game so far:", "The game so far:"),  # a heading echoed from the prompt
        ("Night 1: Player 3 died.", "Night 1: Player 3 died."),  # a game-log line echoed
        ("Day 2: Player 5 is out.", "Day 2: Player 5 is out."),
        ("(20 words)", "(20 words)"),
        ("...", "..."),
    ],
)
def test_speech_format_rejects_what_is_not_speech(text, used):
    assert parse_refiner_output(text, BASE, "speech") == (used, False)


def test_analysis_format_needs_the_response_line():
    two_lines = "Analysis: I want Player 5 on my side.\nResponse: Player 5, vote with me."
    assert parse_refiner_output(two_lines, BASE, "analysis") == ("Player 5, vote with me.", True)
    # a plain line is a speech in the speech format, but not the two lines asked for
    assert parse_refiner_output("Vote with me.", BASE, "analysis") == ("Vote with me.", False)
    assert parse_refiner_output("Analysis: only this.", BASE, "analysis") == (BASE, False)
    assert parse_refiner_output("Response:", BASE, "analysis") == ("Response:", False)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I trust Player 2.", (f"{BASE} I trust Player 2.", True)),
        ("I trust Player 2.\nAnd a second line.", (f"{BASE} I trust Player 2.", True)),
        ("Response: Vote Player 4 today.", (f"{BASE} Vote Player 4 today.", True)),
        ("Night 1: Player 3 died.", (BASE, False)),  # an output not parsed adds nothing
        ("", (BASE, False)),
    ],
)
def test_addition_format_says_the_base_whole_then_the_sentence(text, expected):
    assert parse_refiner_output(text, BASE, "addition") == expected


# ---- the prompt options --------------------------------------------------------------------


def test_default_prompt_names_the_game_and_asks_for_one_sentence(game):
    spec = refiner_spec(game, 0, 1, BASE)
    assert spec.system.startswith("You play Werewolf. You are Player 1.")
    assert rules_text(game) not in spec.system
    assert "Player 2, who speaks next" in spec.system
    assert "one short sentence of at most 20 words" in spec.question
    assert spec.question.endswith(f'Your planned speech: "{BASE}"')  # right before the answer
    assert "Analysis" not in spec.question and "Response" not in spec.question


def test_addition_prompt_asks_for_one_sentence_after_the_planned_speech(game):
    style = RefinerStyle(output_format="addition", speech_words=12)
    spec = refiner_spec(game, 0, 1, BASE, style)
    assert spec.question.startswith(f'Your planned speech: "{BASE}"')
    assert "Add one short sentence of at most 12 words to say after it" in spec.question
    assert "so that Player 2 responds the way you want" in spec.question
    assert style.stop == ("\n",)  # one line, as the speech format


def test_release_options_carry_the_rules_and_the_two_line_format(game):
    style = RefinerStyle(rules=True, output_format="analysis", speech_words=100)
    spec = refiner_spec(game, 0, 1, BASE, style)
    assert spec.system.startswith(rules_text(game))
    assert "You are Player 1." in spec.system and "You play Werewolf." not in spec.system
    assert spec.question.startswith(f'Your planned speech: "{BASE}"')
    assert "in at most 100 words" in spec.question
    assert "Analysis: <how you want Player 2 to respond" in spec.question
    assert spec.question.endswith("Response: <your new speech>")
    # each option alone
    rules_only = refiner_spec(game, 0, 1, BASE, RefinerStyle(rules=True))
    assert rules_text(game) in rules_only.system and "one short sentence" in rules_only.question
    words = refiner_spec(game, 0, None, BASE, RefinerStyle(speech_words=7))
    assert "at most 7 words" in words.question and "the next speaker" in words.system


def test_the_profile_decides_stop_limit_and_sampling_of_every_request():
    speech, analysis = RefinerStyle(max_new_tokens=40), RefinerStyle(output_format="analysis")
    assert speech.stop == ("\n",) and analysis.stop == ()
    profile = RefinerProfile(speech, 256, 0.6, 0.8)
    r = profile.request([{"role": "user", "content": "x"}], 3, 11)
    assert (r.n, r.max_new_tokens, r.stop, r.seed) == (3, 40, ("\n",), 11)
    assert (r.temperature, r.top_p) == (0.6, 0.8)
    assert RefinerProfile(analysis, 256, 0.6, 0.8).request([], 1, 0).stop == ()
    # a request's own limit and sampling (serve), the rest kept
    own = profile.overridden(token_limit=12, top_p=0.5)
    assert (own.token_limit, own.temperature, own.top_p) == (12, 0.6, 0.5)
    assert own.style.stop == speech.stop and profile.token_limit == 40
    with pytest.raises(ValueError, match="output_format"):
        RefinerStyle(output_format="json")


def test_sample_section_options_build_the_style():
    default = SampleSettings()
    assert default.style == RefinerStyle()  # the embedded default: speech, no rules
    params = load_params(ROOT / "configs/paper.yaml")
    paper = params.sample.style
    assert paper == RefinerStyle(
        rules=True, output_format="analysis", speech_words=100, max_new_tokens=512
    )
    embedded = load_params(ROOT / "params.yaml").sample.style
    assert embedded.output_format == "speech" and embedded.stop == ("\n",)


# ---- ended before the limit ----------------------------------------------------------------


class WordTokens:
    """A tokenizer stand-in: one token per word."""

    def encode(self, text: str, first: bool = True) -> list[int]:
        assert first is False  # a completion's tokens: no special tokens added
        return list(range(len(text.split())))


def test_ended_counts_the_completions_tokens_against_the_limit():
    llm = WordTokens()
    assert ended_before_limit(llm, "one two three", 4)
    assert not ended_before_limit(llm, "one two three four", 4)  # stopped by the limit
    assert ended_before_limit(llm, "", 4)


def test_ended_falls_back_to_the_backends_count():
    class Counting:
        def count_tokens(self, text):
            return len(text)

    assert ended_before_limit(Counting(), "abc", 4) and not ended_before_limit(
        Counting(), "abcd", 4
    )
