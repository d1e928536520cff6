"""Players that choose by answering in words: parsing, re-asks, the fallback and its count,
and whole games with every seat on the Anthropic protocol against the loopback server."""

from __future__ import annotations

import pytest
from llm.fake_server import FakeServer
from llm.game_policy import play_answer
from record_checks import check_record, rule_check

from stackelberg.agents import make_agent
from stackelberg.agents.choice import choice_question, parse_choice
from stackelberg.agents.runner import Table, play_tables
from stackelberg.games import GAMES, ConfigError, make_game

LABELS = ["Player 2", "Player 3", "nobody (abstain)"]


@pytest.mark.parametrize(
    ("answer", "index"),
    [
        ("2", 1),  # the option's number
        ("2.", 1),
        ("Option 3", 2),
        ("**1**", 0),
        ("player 3", 1),  # a player's name, any case
        ("I vote for Player 2!", 0),
        ("Abstain.", 2),  # part of one option's words
        ("nobody (abstain)", 2),  # the label itself
    ],
)
def test_answers_that_name_one_option(answer, index):
    assert parse_choice(answer, LABELS).index == index


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "The answer was empty"),
        ("   ...  ", "The answer was empty"),
        ("I am not sure yet.", "The answer names none of the options"),
        ("7", "There is no option 7; the options are 1 to 3"),
        ("Player 6", "Player 6 is not one of the options"),
        ("Player 2 or Player 3", "The answer names several options (Player 2, Player 3)"),
    ],
)
def test_unusable_answers_come_with_a_one_line_reason(answer, reason):
    parsed = parse_choice(answer, LABELS)
    assert parsed.index is None and parsed.reason == reason and "\n" not in parsed.reason


def test_teams_parse_by_their_players_in_any_order():
    teams = ["Player 1 and Player 3", "Player 1 and Player 4"]
    assert parse_choice("Player 4 & Player 1", teams).index == 1
    assert parse_choice("Player 1 and Player 3", teams).index == 0
    assert parse_choice("Player 1", teams).index is None  # part of both teams


def test_the_question_numbers_the_options():
    q = choice_question("Vote for a player to eliminate.", LABELS)
    assert "1. Player 2\n2. Player 3\n3. nobody (abstain)" in q and "number" in q


class ScriptedChat:
    """A backend without scoring that answers generations from a list, in order."""

    name, model, can_score, context_window = "scripted-chat", "chat-1", False, 100_000

    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)
        self.prompts: list[list[dict]] = []

    def count_tokens(self, prompt) -> int:
        return sum(len(m["content"]) for m in prompt) // 3 + 1

    def run_batch(self, requests):
        out = []
        for r in requests:
            self.prompts.append(r.prompt)
            out.append([self.answers.pop(0)])
        return out


def _vote(agent_answers: list[str], max_attempts: int = 3):
    """One ONUW vote by an LLM seat (every other seat scripted); the chosen target."""
    game = make_game("onuw", {"discussion_rounds": 1})
    llm = ScriptedChat(["I trust Player 2."] + agent_answers)
    agents = [make_agent("direct", "onuw", llm=llm, max_choice_attempts=max_attempts)] + [
        make_agent("scripted", "onuw") for _ in range(4)
    ]
    table = Table(game, agents, seed=2)  # seat 0 is a villager: its only choice is the vote
    record = play_tables([table], llm)[0]
    vote = next(e for e in record["events"] if e["type"] == "vote" and e["player"] == 0)
    return record, vote["data"]["target"], llm


def test_generated_choice_is_reasked_with_the_reason_then_taken():
    record, target, llm = _vote(["I have no idea.", "Player 3"])
    seat = record["players"][0]
    assert target == 2  # Player 3
    assert seat["choice"] == "generate" and seat["model"] == "chat-1"
    assert (seat["choice_asks"], seat["choice_reasks"], seat["invalid_choices"]) == (2, 1, 0)
    reasked = llm.prompts[-1]
    assert reasked[-2] == {"role": "assistant", "content": "I have no idea."}
    assert reasked[-1]["content"].startswith("The answer names none of the options.")
    check_record(record, "onuw")


def test_after_the_last_attempt_a_seeded_random_legal_option_is_taken_and_counted():
    record, target, _ = _vote(["no", "Player 9", "still no"])
    again, target_again, _ = _vote(["no", "Player 9", "still no"])
    seat = record["players"][0]
    assert (seat["choice_asks"], seat["choice_reasks"], seat["invalid_choices"]) == (3, 2, 1)
    assert target == target_again and target in range(1, 5)  # legal (no self-vote), seeded
    check_record(record, "onuw")


def test_score_mode_is_refused_on_a_backend_that_cannot_score():
    with pytest.raises(ConfigError, match="choice: score needs log-probabilities"):
        make_agent("direct", "onuw", llm=ScriptedChat([]), choice="score")
    with pytest.raises(ConfigError, match="choice: 'guess'"):
        make_agent("direct", "onuw", llm=ScriptedChat([]), choice="guess")


@pytest.fixture(scope="module")
def claude(monkeypatch_module):
    from stackelberg.llm import make_llm

    with FakeServer() as server:
        server.answer = play_answer
        server.models = {"claude-3-5-haiku-latest"}
        monkeypatch_module.setenv("ANTHROPIC_API_KEY", "test-key")
        llm = make_llm(
            backend="anthropic",
            model="claude-3-5-haiku-latest",
            base_url=server.url,
            cache="off",
            max_concurrency=16,
        )
        yield llm, server
        llm.close()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.mark.parametrize("name", list(GAMES))
def test_a_full_game_on_the_anthropic_protocol_is_legal(claude, name):
    llm, server = claude
    before = server.count("/v1/messages")
    game = make_game(name)
    n = make_game(name).reset(0).n_players
    agents = [make_agent("direct" if i % 2 else "react", name, llm=llm) for i in range(n)]
    record = play_tables([Table(game, agents, seed=0)], llm)[0]
    check_record(record, name)
    rule_check(record)
    seats = record["players"]
    assert all(s["choice"] == "generate" and s["model"] == "claude-3-5-haiku-latest" for s in seats)
    asks = sum(s["choice_asks"] for s in seats)
    reasks = sum(s["choice_reasks"] for s in seats)
    if GAMES[name].dimensions:  # Sotopia: every turn is free text, there is no choice
        assert asks == 0 and all(e["type"] != "vote" for e in record["events"])
    else:
        assert asks > 0 and reasks > 0  # the pretend model's unusable answers were asked again
    assert server.count("/v1/messages") - before >= asks
    speeches = [e for e in record["events"] if e["type"] == "speech"]
    assert speeches and all(e["data"]["text"] for e in speeches)
