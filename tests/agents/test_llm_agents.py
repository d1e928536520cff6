"""LLM players with the embedded model: a whole game with legal moves only, and option
choice by scoring."""

from __future__ import annotations

import json
import re

import pytest

from stackelberg.agents import make_agent
from stackelberg.agents.llm_agents import FALLBACK_SPEECH, attempt_seed
from stackelberg.agents.prompting import clean_speech, option_label, spoken
from stackelberg.agents.runner import Table, agent_rng, play_tables
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


class _Echoing(_Counter):
    """A pretend backend whose first ``junk`` samples of each speech prompt echo a heading
    of the prompt, and later ones are a speech; it keeps each speech request's seat,
    prompt and seed, and scores the first option highest."""

    def __init__(self, junk: int) -> None:
        self.junk = junk
        self.asked: list[tuple[str, str, int]] = []  # (seat's name, prompt, seed)

    def run_batch(self, requests):
        out = []
        for r in requests:
            if not isinstance(r, GenerateRequest):
                out.append([[-float(i)] for i in range(len(r.continuations))])
                continue
            prompt = json.dumps(r.prompt)
            before = sum(p == prompt for _, p, _ in self.asked)
            seat = re.search(r"You are (Player \d+)", r.prompt[0]["content"]).group(1)
            self.asked.append((seat, prompt, r.seed))
            out.append(["The game so far:" if before < self.junk else "I trust Player 2."])
        return out


def _echoed_game(junk: int, **options):
    """One Avalon game of six direct players on ``_Echoing``: its record and the backend."""
    llm = _Echoing(junk)
    agents = [
        make_agent("direct", "avalon", llm=llm, max_prompt_tokens=900, **options) for _ in range(6)
    ]
    [record] = play_tables([Table(make_game("avalon", {}), agents, seed=0)], llm)
    return record, llm


def _speeches(record) -> list[str]:
    return [e["data"]["text"] for e in record["events"] if e["type"] == "speech"]


def _attempts(llm: _Echoing, seat: str) -> list[list[tuple[str, int]]]:
    """A seat's speech requests grouped by prompt, in order: each speech's attempts."""
    groups: list[list[tuple[str, int]]] = []
    for who, prompt, seed in llm.asked:
        if who == seat:
            if groups and groups[-1][0][0] == prompt:
                groups[-1].append((prompt, seed))
            else:
                groups.append([(prompt, seed)])
    return groups


def test_an_echoed_speech_is_sampled_again_with_derived_seeds_and_counted():
    record, llm = _echoed_game(junk=2)  # two echoes, then a speech: within the bound of 3
    speeches = _speeches(record)
    assert speeches and set(speeches) == {"I trust Player 2."}
    for seat in record["players"]:
        attempts = _attempts(llm, seat["name"])
        said = sum(e["type"] == "speech" and e["player"] == seat["id"] for e in record["events"])
        assert len(attempts) == said > 0 and all(len(a) == 3 for a in attempts)
        counts = (seat["speech_asks"], seat["speech_reasks"], seat["fallback_speeches"])
        assert counts == (3 * said, 2 * said, 0)
        for speech in attempts:
            first = speech[0][1]
            seeds = [seed for _, seed in speech]
            assert seeds == [attempt_seed(first, i) for i in range(3)] and len(set(seeds)) == 3
        # the first attempts draw the seeds a player without re-asks draws: the seat's stream
        rng = agent_rng(0, seat["id"])
        assert [a[0][1] for a in attempts] == [rng.randrange(2**31) for _ in attempts]
    assert llm.asked == _echoed_game(junk=2)[1].asked  # the same seeds again: reproducible


@pytest.mark.parametrize("bound", [1, 2, 3])
def test_a_speech_that_stays_an_echo_falls_back_after_exactly_the_bound(bound):
    record, llm = _echoed_game(junk=99, max_speech_attempts=bound)
    speeches = _speeches(record)
    assert speeches and set(speeches) == {FALLBACK_SPEECH}
    for seat in record["players"]:
        attempts = _attempts(llm, seat["name"])
        assert attempts and all(len(a) == bound for a in attempts)
        n = len(attempts)
        counts = (seat["speech_asks"], seat["speech_reasks"], seat["fallback_speeches"])
        assert counts == (bound * n, (bound - 1) * n, n)


def test_attempt_seeds_keep_the_first_and_are_the_same_in_every_process():
    assert attempt_seed(12345, 0) == 12345
    seeds = [attempt_seed(12345, i) for i in range(1, 6)]
    assert len(set(seeds)) == 5 and all(0 <= s < 2**31 for s in seeds)
    # pinned: the response cache keys on the seed, so another derivation would miss every
    # cached re-ask (and a per-process one, such as Python's ``hash`` of a str, would too)
    assert seeds[0] == 751600639


def test_the_speech_attempts_are_at_least_one():
    with pytest.raises(ConfigError, match="max_speech_attempts must be at least 1, got 0"):
        make_agent("direct", "avalon", llm=_Echoing(0), max_speech_attempts=0)


def test_a_speech_prompt_starts_with_the_history_and_other_prompts_with_its_heading():
    """The embedded model copies a heading that opens the user turn as its speech."""
    from stackelberg.agents.prompting import build_messages, player_spec, speech_style

    game = make_game("werewolf").reset(0)
    speech = player_spec(game, 0, "Day 1: your speech.", speech_style(game))
    vote = player_spec(game, 0, "Vote for a player.")
    lines = ["Night 1: Player 3 died."]
    assert build_messages(speech, lines)[1]["content"].startswith("Night 1: Player 3 died.\n\n")
    assert build_messages(vote, lines)[1]["content"].startswith(
        "The game so far:\nNight 1: Player 3 died.\n\n"
    )
    _, llm = _echoed_game(junk=0)  # every speech request of a game: none opens with it
    users = [json.loads(prompt)[1]["content"] for _, prompt, _ in llm.asked]
    assert users and not any(u.startswith("The game so far:") for u in users)
