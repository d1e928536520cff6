"""The paper's baseline players (recon, lasi, belief, llm_ins, rl_ins, metamind): whole games in both choice
modes on the loopback server (scored options and answers in words), their private
reasoning in the record, their LLM calls per decision, ``refiner+X`` around each, and a
game on the embedded model."""

from __future__ import annotations

import functools

import pytest
from llm.counting import Counting
from record_checks import check_record, rule_check

from stackelberg.agents import AGENT_KINDS, check_kind, make_agent
from stackelberg.agents.prompting import transcript_line
from stackelberg.agents.prompts import describe_event
from stackelberg.agents.runner import Table, play_tables
from stackelberg.evaluation.tournament import build_agent
from stackelberg.games import GAMES, ConfigError, make_game
from stackelberg.games.base import SPEAK
from stackelberg.viewer import event_line

#: each baseline and the games it plays
BASELINES = {
    "recon": tuple(GAMES),
    "lasi": tuple(GAMES),
    "belief": ("onuw",),
    "llm_ins": ("onuw",),
    "rl_ins": ("onuw",),
    "metamind": ("sotopia",),
}
#: the steps of each, as the record names them
STEPS = {
    "recon": {"first_order", "draft"},
    "lasi": {"analysis", "strategy", "action"},
    "belief": {"belief"},
    "llm_ins": {"belief", "tactic"},
    "rl_ins": {"belief", "tactic"},
    "metamind": {"social_memory", "mental_state", "social_strategy"},
}
#: steps noted without an LLM call (rl_ins: its policy picks the tactic)
NO_CALL = {"rl_ins": {"tactic"}}
#: short games: fewer rounds, small budgets
OPTIONS = {"onuw": {"discussion_rounds": 1}, "sotopia": {"max_turns": 3}}
SMALL = {"speech_tokens": 12, "reasoning_tokens": 12, "max_prompt_tokens": 640}


def expected_calls(kind: str, decision, history: bool) -> int:
    """LLM calls of one decision, as docs/agents.md's agents table states them (re-asks of a
    generated choice aside); a decision with one legal option takes none."""
    if decision.options is not None and len(decision.options) == 1:
        return 0
    speech = decision.kind == SPEAK
    if kind == "recon":  # first-order view, draft, refined act
        return 3
    if kind == "lasi":  # analysis (once there is history), strategy, action (speech), act
        return history + 1 + speech + 1
    if kind == "metamind":  # social memory (once there is history), mental state, approach, act
        return history + 3
    day = decision.kind in (SPEAK, "vote")
    if kind in ("belief", "rl_ins"):  # belief, act (rl_ins: its tactic is no call); night: act
        return 2 if day else 1
    return 3 if speech else 2 if day else 1  # llm_ins: belief, tactic (speech), act


def play(kind: str, game_name: str, llm, choice: str, seed: int = 1):
    """One game, ``kind`` on the even seats and scripted players on the others; the record
    and, per decision of a ``kind`` seat, (decision, whether it had seen anything, calls)."""
    counting = Counting(llm)
    game = make_game(game_name, OPTIONS.get(game_name))
    n = make_game(game_name).reset(seed).n_players
    agents = [
        make_agent(kind, game_name, llm=counting, choice=choice, **SMALL)
        if i % 2 == 0
        else make_agent("scripted", game_name)
        for i in range(n)
    ]
    log: list[list] = []

    def counted(agent):
        act = agent.act

        def wrapped(decision):
            seen = [
                describe_event(agent.game, e, agent.player)
                for e in agent.game.visible_events(agent.player)
            ]
            reasks = sum(getattr(a, "choice_reasks", 0) for a in agents)
            log.append([decision, any(seen), counting.calls, reasks])
            return act(decision)

        return wrapped

    for agent in agents[::2]:
        agent.act = counted(agent)
    table = Table(game, agents, seed)
    record = play_tables([table], counting)[0]
    log.append([None, None, counting.calls, sum(a.choice_reasks for a in agents[::2])])
    calls = [
        (d, seen, after - before - (reasks_after - reasks))
        for (d, seen, before, reasks), (_, _, after, reasks_after) in zip(
            log, log[1:], strict=False
        )
    ]
    return record, table, calls


CASES = [(kind, game) for kind, games in BASELINES.items() for game in games]


@pytest.fixture(scope="module")
def game_of(api):
    """``play``'s game of (kind, game, choice) on seed 1, played once for every test that
    reads it (each only reads the record, the table and the calls)."""
    return functools.cache(lambda kind, game_name, choice: play(kind, game_name, api, choice))


def home(kind: str) -> str:
    """The game a kind's single-game tests play: ONUW where it plays it, else its own."""
    return "onuw" if "onuw" in BASELINES[kind] else BASELINES[kind][0]


@pytest.mark.parametrize("choice", ["generate", "score"])
@pytest.mark.parametrize(("kind", "game_name"), CASES)
def test_a_game_is_legal_and_each_decision_takes_its_steps(game_of, kind, game_name, choice):
    record, _, calls = game_of(kind, game_name, choice)
    check_record(record, game_name)
    rule_check(record)
    assert {p["agent"] for p in record["players"][::2]} == {kind}
    assert all(p["choice"] == choice for p in record["players"][::2])
    assert calls and all(n == expected_calls(kind, d, seen) for d, seen, n in calls)
    reasoning = [e for e in record["events"] if e["type"] == "reasoning"]
    assert {e["data"]["step"] for e in reasoning} == STEPS[kind]
    # one note per step: calls are the notes of LLM steps, the acts (one per decision with
    # a choice to make) and nothing else
    acts = sum(n > 0 for _, _, n in calls)
    called = [e for e in reasoning if e["data"]["step"] not in NO_CALL.get(kind, ())]
    assert sum(n for _, _, n in calls) == len(called) + acts


@pytest.mark.parametrize("kind", list(BASELINES))
def test_scored_options_play_a_legal_game_with_the_same_steps(game_of, kind):
    game_name = home(kind)
    record, _, calls = game_of(kind, game_name, "score")
    check_record(record, game_name)
    rule_check(record)
    assert all(p["choice"] == "score" for p in record["players"][::2])
    assert all(n == expected_calls(kind, d, seen) for d, seen, n in calls)
    if kind in ("llm_ins", "rl_ins"):  # one of the six tactics (llm_ins: scored as an option)
        tactics = [e["data"]["text"] for e in record["events"] if e["data"].get("step") == "tactic"]
        assert tactics and all(
            t.split(":")[0].split()[0] in ("honest", "deceptive") for t in tactics
        )


@pytest.mark.parametrize("kind", list(BASELINES))
def test_reasoning_is_private_to_its_player_and_read_by_no_prompt(game_of, kind):
    record, table, _ = game_of(kind, home(kind), "generate")
    game = table.game
    notes = [e for e in game.events if e.type == "reasoning"]
    assert notes
    for ev in notes:
        assert ev.visible_to == (ev.player,) and ev.player % 2 == 0  # the kind's seats only
        for viewer in range(game.n_players):
            assert (ev in game.visible_events(viewer)) == (viewer == ev.player)
            assert describe_event(game, ev, viewer) is None  # so no prompt ever reads it
        line = transcript_line(game, ev)
        assert (
            line
            == f"(Player {ev.player + 1} only) {ev.data['step'].replace('_', ' ')}: {ev.data['text']}"
        )
        assert event_line(game, ev) == line  # the viewer's line (folded: a private event)


@pytest.mark.parametrize("kind", list(BASELINES))
def test_refiner_wraps_it_and_keeps_its_reasoning(api, kind):
    name = home(kind)
    agent = build_agent(f"refiner+{kind}", name, {"default": api, "refiner": api}, SMALL)
    assert agent.kind == f"refiner+{kind}" and agent.inner.kind == kind
    game = make_game(name, OPTIONS[name])
    n = make_game(name).reset(4).n_players
    agents = [agent] + [make_agent("scripted", name) for _ in range(n - 1)]
    record = play_tables([Table(game, agents, 4)], {"default": api, "refiner": api})[0]
    check_record(record, name)
    speeches = [e for e in record["events"] if e["type"] == "speech" and e["player"] == 0]
    assert speeches and all(e["data"]["base_utterance"] for e in speeches)
    steps = {e["data"]["step"] for e in record["events"] if e["type"] == "reasoning"}
    assert steps and steps <= STEPS[kind]  # X's reasoning, recorded through the wrapper


def test_one_game_kinds_are_refused_elsewhere_in_one_line():
    assert set(BASELINES) <= set(AGENT_KINDS)
    for kind in ("belief", "llm_ins", "rl_ins", "metamind"):
        (own,) = BASELINES[kind]
        for game in GAMES:
            if game == own:
                check_kind(kind, game)
                continue
            with pytest.raises(ConfigError, match=rf"agent '{kind}' plays {own} only, not {game}$"):
                make_agent(kind, game, llm=object())
    with pytest.raises(ConfigError, match="unknown agent 'recon2'"):
        check_kind("recon2", "onuw")


def test_lasi_keeps_its_strategy_and_skips_analysis_before_any_history(api):
    record, table, calls = play("lasi", "onuw", api, "generate", seed=5)
    first = next(n for d, seen, n in calls if d.kind == SPEAK)
    assert first in (3, 4)  # no analysis while nothing has happened to it
    agent = table.agents[0]
    assert agent.strategy and any(
        e["data"]["text"] == agent.strategy
        for e in record["events"]
        if e["type"] == "reasoning" and e["player"] == 0
    )


def test_metamind_keeps_its_notes_of_the_other_across_turns(api):
    record, table, calls = play("metamind", "sotopia", api, "generate", seed=5)
    agent = table.agents[0]
    notes = [
        e["data"]["text"]
        for e in record["events"]
        if e["type"] == "reasoning" and e["player"] == 0 and e["data"]["step"] == "social_memory"
    ]
    assert len(calls) >= 2 and notes and agent.notes == notes[-1]  # the last update is kept
    # the next update, and the reading of the other, start from the notes kept before
    assert agent.step_context("social_memory").endswith(agent.notes)
    assert agent.step_context("mental_state").endswith(agent.notes)
    assert agent.step_context("social_strategy") == ""


#: the embedded-model games: every baseline in every game it plays
EMBEDDED_GAMES = (
    ("onuw", ["recon", "lasi", "belief", "llm_ins", "rl_ins"]),
    ("werewolf", ["recon", "lasi"] + ["scripted"] * 5),
    ("avalon", ["recon", "lasi"] + ["scripted"] * 3),
    ("sotopia", ["metamind", "scripted"]),
    ("sotopia", ["recon", "lasi"]),
)
#: Avalon on the embedded model: 5 seats, a tied team vote approves (fewer rounds), and the
#: table talks before a quest's first team only (as the default run's Avalon)
EMBEDDED_OPTIONS = {
    **OPTIONS,
    "avalon": {"n_players": 5, "tied_team_vote": "approved", "discussion": "first_attempt"},
}


def test_the_baselines_finish_games_on_the_embedded_model(local_int8_llm):
    """Every baseline in every game it plays, two LLM seats at most in the long ones (rl_ins
    with no trained policy: its tactics drawn uniformly; Sotopia 3 turns a character), on
    the int8 model the default's tournaments play with."""
    assert {k for _, kinds in EMBEDDED_GAMES for k in kinds} - {"scripted"} == set(BASELINES)
    assert {(k, g) for g, kinds in EMBEDDED_GAMES for k in kinds if k in BASELINES} == {
        (k, g) for k, games in BASELINES.items() for g in games
    }
    tiny = {"speech_tokens": 6, "reasoning_tokens": 6, "max_prompt_tokens": 512}
    tables = []
    for name, kinds in EMBEDDED_GAMES:
        game = make_game(name, EMBEDDED_OPTIONS.get(name))
        assert game.reset(3).n_players == len(kinds)
        agents = [
            make_agent(k, name, llm=local_int8_llm, **tiny)
            if k != "scripted"
            else make_agent(k, name)
            for k in kinds
        ]
        tables.append(Table(game, agents, 3))
    # all games at once, as a tournament plays them: their requests go in shared batches
    records = play_tables(tables, local_int8_llm)
    for (name, kinds), record in zip(EMBEDDED_GAMES, records, strict=True):
        check_record(record, name)
        rule_check(record)
        thinkers = {e["player"] for e in record["events"] if e["type"] == "reasoning"}
        assert thinkers == {i for i, k in enumerate(kinds) if k != "scripted"}
