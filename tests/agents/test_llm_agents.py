"""LLM players with the embedded model: a whole game with legal moves only, and option
choice by scoring."""

from __future__ import annotations

import pytest

from stackelberg.agents import make_agent
from stackelberg.agents.llm_agents import FALLBACK_SPEECH
from stackelberg.agents.prompting import clean_speech, option_label, spoken
from stackelberg.agents.runner import Table, play_tables
from stackelberg.games import ConfigError, make_game
from stackelberg.games.onuw import ROLE_TEAM, TEAM_ORDER
from stackelberg.llm.base import GenerateRequest


def test_option_labels_and_speech_cleaning():
    assert option_label(2) == "Player 3"
    assert option_label(None) == "nobody (abstain)"
    assert option_label(None, "assassinate") == "wait (no guess yet)"
    assert option_label(True, "vote") == "approve" and option_label(False, "quest") == "fail"
    assert option_label((0, 3)) == "Player 1 and Player 4"
    assert option_label("center:0,2") == "centre cards 1 and 3"
    assert clean_speech('Player 4 says: "I trust Player 2. I trust Player 2. Vote 5') == (
        "I trust Player 2."
    )


def test_a_speech_loses_what_the_model_echoes_from_its_prompt():
    assert spoken("Day 1: You are wrong. I am the Seer.\nNight 2: x") == (
        "You are wrong. I am the Seer."
    )
    assert spoken('Player 4 says: "I trust Player 2.') == "I trust Player 2."
    assert spoken("The game so far:") == "" and spoken("  Night 3:  ") == ""
    assert spoken("I vote for Player 3: he lied.") == "I vote for Player 3: he lied."


def test_llm_agents_need_a_backend():
    with pytest.raises(ConfigError, match="needs an LLM backend"):
        make_agent("direct", "werewolf")


@pytest.mark.slow
def test_a_full_game_of_llm_agents_is_legal_and_recorded(local_llm):
    kinds = ["direct", "react", "direct", "react", "scripted"]
    game = make_game("onuw", {"discussion_rounds": 1})
    agents = [
        make_agent(k, "onuw", llm=local_llm, speech_tokens=10, max_prompt_tokens=640)
        if k != "scripted"
        else make_agent(k, "onuw")
        for k in kinds
    ]
    table = Table(game, agents, seed=3)
    record = play_tables([table], local_llm)[0]  # an illegal move would raise here
    assert [p["agent"] for p in record["players"]] == kinds
    speeches = [e for e in record["events"] if e["type"] == "speech"]
    assert len(speeches) == 5 and all(e["data"]["text"] for e in speeches)
    assert sum(e["type"] == "vote" for e in record["events"]) == 5
    result = record["result"]
    winning_teams = {ROLE_TEAM[result["final_roles"][p]] for p in result["winners"]}
    expected = "+".join(t for t in TEAM_ORDER if t in winning_teams) or "draw"
    assert result["winner"] == expected  # the teams of the winners' final cards, or a draw
    assert table.speech_turns[-1][2] is None and table.speech_turns[0][2] == speeches[1]["player"]


class _Counter:
    context_window = 1000

    def count_tokens(self, prompt) -> int:
        return sum(len(m["content"].split()) for m in prompt)


def test_prompt_budget_cuts_oldest_history_and_never_the_fixed_part():
    from stackelberg.agents.prompting import PromptSpec, fitted_messages
    from stackelberg.llm import ContextLengthError

    spec = PromptSpec(system="rules " * 50, question="What now?")
    lines = [f"line {i} " + "word " * 8 for i in range(20)]
    messages, dropped = fitted_messages(_Counter(), spec, lines, reserve=10, limit=120)
    assert 0 < dropped < 20 and f"line {dropped} " in messages[1]["content"]
    assert (
        "line 19" in messages[1]["content"] and f"line {dropped - 1} " not in messages[1]["content"]
    )
    messages, dropped = fitted_messages(_Counter(), spec, lines, reserve=10, limit=40)
    assert dropped == 20 and "nothing has happened yet" in messages[1]["content"]
    with pytest.raises(ContextLengthError):
        fitted_messages(_Counter(), PromptSpec("x " * 2000, "q"), lines, reserve=10, limit=40)


def test_history_start_moves_forward_in_steps_so_consecutive_prompts_share_it():
    from stackelberg.agents.llm_agents import LLMAgent
    from stackelberg.agents.prompting import PromptSpec

    agent = LLMAgent(_Counter(), max_prompt_tokens=160)
    agent.lines, agent.history_cut = [], 0
    spec = PromptSpec(system="rules " * 50, question="What now?")
    starts = []
    for i in range(40):
        agent.lines.append(f"line {i} " + "word " * 8)
        user = agent._messages(spec, reserve=10)[1]["content"]
        first = int(user.split("line ", 1)[1].split()[0])
        assert f"line {i} " in user and first == agent.history_cut  # newest kept, start known
        assert _Counter().count_tokens(agent._messages(spec, 10)) + 10 <= 160
        starts.append(first)
    assert starts == sorted(starts) and starts[-1] > 0  # forward only
    moves = sum(a != b for a, b in zip(starts, starts[1:], strict=False))
    assert moves <= len(starts) // 2  # a cut holds for several prompts, not one line at a time


class _Recorder(_Counter):
    """A pretend backend: a fixed speech, the first option; it keeps each batch's kinds."""

    def __init__(self, speech: str = "I trust Player 2.") -> None:
        self.batches: list[list[str]] = []
        self.speech = speech

    def run_batch(self, requests):
        self.batches.append([type(r).__name__ for r in requests])
        return [
            [self.speech] * r.n
            if isinstance(r, GenerateRequest)
            else [[-float(i)] for i in range(len(r.continuations))]
            for r in requests
        ]


def test_tables_that_generate_wait_for_the_others_one_pass_requests():
    """Decoding is many passes, scoring one: a table that speaks waits until every other
    table speaks too (or is over), so that speeches decode side by side; the games are
    the ones each table plays alone."""

    def tables(llm, seeds):
        return [
            Table(
                make_game("avalon", {}),
                [make_agent("direct", "avalon", llm=llm, max_prompt_tokens=900) for _ in range(6)],
                seed=s,
            )
            for s in seeds
        ]

    together = _Recorder()
    records = play_tables(tables(together, range(4)), together)
    alone = [play_tables(tables(_Recorder(), [s]), _Recorder())[0] for s in range(4)]
    assert records == alone
    kinds = [set(batch) for batch in together.batches]
    assert {"GenerateRequest"} in kinds and {"ScoreRequest"} in kinds
    assert all(len(k) == 1 for k in kinds)  # never a speech beside a one-pass request
    speeches = [len(b) for b in together.batches if b[0] == "GenerateRequest"]
    assert max(speeches) == 4  # all four tables' speeches in one batch


@pytest.mark.parametrize(
    ("generated", "said"),
    [("The game so far:", FALLBACK_SPEECH), ("Day 1: I trust Player 2.", "I trust Player 2.")],
)
def test_a_player_says_no_heading_or_log_label_its_model_echoes(generated, said):
    llm = _Recorder(generated)
    game = make_game("avalon", {})
    agents = [make_agent("direct", "avalon", llm=llm, max_prompt_tokens=900) for _ in range(6)]
    [record] = play_tables([Table(game, agents, seed=0)], llm)
    speeches = [e["data"]["text"] for e in record["events"] if e["type"] == "speech"]
    assert speeches and set(speeches) == {said}
