"""``bestN+X``: the Measurer's best of N untrained Refiner samples said in play; its
condition's grammar, its routes, its counts, its pairing with X, and its params."""

from __future__ import annotations

import pytest
from record_checks import check_record

from stackelberg.agents.base import Agent
from stackelberg.agents.refiner import RefinerProfile, RefinerStyle
from stackelberg.agents.runner import play_game
from stackelberg.agents.scripted import scripted_agent
from stackelberg.evaluation.metrics import default_pairs, game_metrics, mlflow_metrics
from stackelberg.evaluation.report import report_tables
from stackelberg.evaluation.tournament import (
    Condition,
    build_agent,
    parse_condition,
    play_matrix,
)
from stackelberg.games import GAME_NAMES, ConfigError, make_game
from stackelberg.llm import GenerateRequest
from stackelberg.params import ParamsError, load_params
from stackelberg.persuasion.best_of import MEASURER_ROUTE, REFINER_BASE_ROUTE, best_index
from stackelberg.persuasion.intents import LabelSettings
from stackelberg.persuasion.truth import TRUTHS

#: the untrained Refiner's samples, in the order it gives them: the Measurer below likes the
#: second best, so a best-of speaker that said the first would be caught
SAMPLES = ("I am a simple villager, trust me.", "Player 3 is lying, vote Player 3.", "Hello.")
BEST = SAMPLES[1]


class SamplingRefiner:
    """The untrained Refiner: ``SAMPLES`` cycled, n of them per request; keeps the requests."""

    context_window = 4096

    def __init__(self) -> None:
        self.requests: list[GenerateRequest] = []

    def count_tokens(self, prompt) -> int:
        return len(str(prompt)) // 4 + 1

    def run_batch(self, requests):
        self.requests += requests
        return [[SAMPLES[i % len(SAMPLES)] for i in range(r.n)] for r in requests]


class LyingMeasurer:
    """A Measurer whose follower answers as desired after a candidate that calls a player
    a liar, and as undesired otherwise; keeps what it scored."""

    context_window = 100_000

    def __init__(self) -> None:
        self.scored: list[tuple[list[str], list[str]]] = []

    def count_tokens(self, text) -> int:
        return len(str(text)) // 4

    def render_chat(self, messages, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def score_nested(self, context, candidates, responses, joiner=""):
        self.scored.append((list(candidates), list(responses)))
        k = len(responses) // 2  # the desired responses come first
        return [
            [[-1.0] if (j < k) == ("lying" in c) else [-5.0] for j in range(len(responses))]
            for c in candidates
        ]


def routes(default) -> dict:
    return {
        "default": default,
        REFINER_BASE_ROUTE: SamplingRefiner(),
        MEASURER_ROUTE: LyingMeasurer(),
    }


def test_best_index_takes_the_highest_reward_and_the_first_of_a_tie():
    assert best_index([0.5]) == 0
    assert best_index([-1.0, 2.0, 0.0]) == 1
    assert best_index([1.0, 3.0, 3.0]) == 1


@pytest.mark.parametrize(
    "condition, parsed",
    [
        ("direct", Condition("direct")),
        ("refiner+react", Condition("react", refined=True)),
        ("best4+direct", Condition("direct", best_of=4)),
        ("best12+refiner", Condition("refiner", best_of=12)),  # X is any name; make_agent judges
    ],
)
def test_conditions_parse_into_the_kind_and_its_wrapper(condition, parsed):
    assert parse_condition(condition) == parsed


@pytest.mark.parametrize(
    "condition",
    [
        "best0+direct",
        "best+direct",
        "bestx+direct",
        "best04+direct",
        "best4+",
        "best4+refiner+direct",
        "refiner+best4+direct",
        "best2+best4+direct",
        "refiner+",
    ],
)
def test_a_malformed_condition_is_one_clear_error(condition):
    with pytest.raises(ConfigError, match="bad condition .*'bestN\\+X' \\(N >= 1"):
        parse_condition(condition)


def test_a_best_of_speaker_needs_the_untrained_refiner_and_the_measurer():
    with pytest.raises(ConfigError, match="needs the untrained Refiner and the Measurer"):
        build_agent("best4+random", "werewolf", {REFINER_BASE_ROUTE: SamplingRefiner()})
    agent = build_agent("best4+random", "werewolf", routes(None))
    assert agent.kind == "best4+random" and agent.samples == 4 and agent.inner.kind == "random"
    with pytest.raises(ConfigError, match="opponent must be a plain agent kind"):
        play_matrix("werewolf", ["random"], [0], opponent="best2+random", llm_routes=routes(None))


def said_by_tested_seats(record: dict) -> list[str]:
    return [
        e["data"]["text"]
        for e in record["game_record"]["events"]
        if e["type"] == "speech" and e["player"] in record["seats"]
    ]


def test_each_speech_is_the_measurers_best_of_n_samples_asked_in_one_request(fake_llm):
    llm_routes = routes(fake_llm)
    style = RefinerStyle(max_new_tokens=24)
    records = play_matrix(
        "werewolf",
        ["direct", "best3+direct"],
        seeds=[0, 1],
        camps=["werewolf"],
        llm_routes=llm_routes,
        agent_options={"speech_tokens": 8},
        refiner=RefinerProfile(style, 600, 0.5, 0.8),
        best_of_options={"label": LabelSettings(k=2)},
        keep_games=True,
    )
    refiner, measurer = llm_routes[REFINER_BASE_ROUTE], llm_routes[MEASURER_ROUTE]
    searched = [r for r in records if r["condition"] == "best3+direct"]
    speeches = sum(r["best_of_speeches"] for r in searched)
    # one request of 3 samples a speech, sampled as the trained Refiner plays
    assert speeches >= 2 and len(refiner.requests) == speeches
    assert all(
        (r.n, r.temperature, r.top_p, r.max_new_tokens) == (3, 0.5, 0.8, 24)
        for r in refiner.requests
    )
    assert sum(r["best_of_samples"] for r in searched) == 3 * speeches
    # one Measurer call a speech that has a follower, on all 3 samples and the k+k intents
    calls = sum(r["best_of_measurer_calls"] for r in searched)
    assert 0 < calls == len(measurer.scored) <= speeches
    for candidates, responses in measurer.scored:
        assert candidates == [SAMPLES[0], SAMPLES[1], SAMPLES[2]] and len(responses) == 4
        assert all("Player" in r for r in responses)  # the scripted labeler's sentences
    said = [s for r in searched for s in said_by_tested_seats(r)]
    # the Measurer's best where it was called; the first sample where no one follows
    assert said.count(BEST) == calls and said.count(SAMPLES[0]) == speeches - calls
    # the plain condition's records are as they were: no Refiner, no best-of counts
    for r in records:
        if r["condition"] == "direct":
            assert not {"refined", "best_of_speeches"} & set(r)
            assert BEST not in said_by_tested_seats(r)
        else:
            assert "refined" not in r
            speech = next(
                e
                for e in r["game_record"]["events"]
                if e["type"] == "speech" and e["player"] in r["seats"]
            )
            assert set(speech["data"]) == {"text", "base_utterance"}
        check_record(r["game_record"], "werewolf")


@pytest.mark.parametrize("game", GAME_NAMES)
def test_a_best_of_speaker_labels_and_scores_a_live_speech_in_every_game(game):
    """Every game's truth reads the game in play (ONUW: the cards now; Avalon: a leader's
    speech not yet in the events)."""
    llm_routes = routes(None)
    records = play_matrix(
        game,
        ["best2+scripted"],
        seeds=[0, 1, 2],
        opponent="scripted",
        llm_routes=llm_routes,
        best_of_options={"label": LabelSettings(k=1)},
    )
    calls = sum(r["best_of_measurer_calls"] for r in records)
    assert calls == len(llm_routes[MEASURER_ROUTE].scored) > 0


class CardSpy(Agent):
    """A scripted ONUW player that notes, at each of its speeches, the truth's live record."""

    def __init__(self) -> None:
        self.inner = scripted_agent("onuw")
        self.kind = self.inner.kind
        self.seen: list[dict] = []

    def setup(self, game, player, rng) -> None:
        super().setup(game, player, rng)
        self.inner.setup(game, player, rng)

    def act(self, decision):
        if decision.options is None:
            self.seen.append(TRUTHS["onuw"].live_record(self.game))
        return self.inner.act(decision)


def test_onuw_cards_held_at_a_speech_are_the_final_ones():
    for seed in range(6):
        game = make_game("onuw")
        spies = [CardSpy() for _ in range(game.reset(seed).n_players)]
        record = play_game(make_game("onuw"), spies, seed)
        seen = [r for spy in spies for r in spy.seen]
        assert seen and all(
            r["result"]["final_roles"] == record["result"]["final_roles"] for r in seen
        )


def test_best_of_is_paired_with_its_x_in_the_metrics():
    names = ["direct", "best4+direct", "refiner+direct", "best2+react", "react"]
    assert default_pairs(names) == [
        ("direct", "best4+direct"),
        ("direct", "refiner+direct"),
        ("react", "best2+react"),
    ]
    assert default_pairs(["best4+direct"]) == []  # no X: nothing to pair with

    def rec(condition, seed, win, **counts):
        players = [{"id": 0, "role": "werewolf", "team": "werewolf", "tested": True, "won": win}]
        return {
            "game": "werewolf", "seed": seed, "condition": condition, "camp": "werewolf",
            "opponent": "direct", "seats": [0], "players": players, "win": win, **counts,
        }  # fmt: skip

    counts = {"best_of_speeches": 5, "best_of_samples": 20, "best_of_measurer_calls": 4}
    records = [rec("direct", s, False) for s in range(3)]
    records += [rec("best4+direct", s, True, **counts) for s in range(3)]
    metrics = game_metrics(records, resamples=200)
    assert [(t["base"], t["treated"], t["camp"]) for t in metrics["paired"]][0] == (
        "direct",
        "best4+direct",
        "all",
    )
    assert metrics["best_of_calls"] == {
        "best4+direct": {
            "games": 3,
            "best_of_speeches": 15,
            "best_of_samples": 60,
            "best_of_measurer_calls": 12,
        }
    }
    assert mlflow_metrics(metrics)["best_of_calls/werewolf/best4-direct/best_of_samples"] == 60
    assert "best_of_calls" not in game_metrics(records[:3], resamples=200)
    tables = {t.title: t for t in report_tables({"werewolf": metrics})}
    [row] = tables["Best of n in the tournaments: what a speech costs"].rows
    assert row == ["werewolf", "best4+direct", "3", "15", "4.00", "0.80"]
    overall = [r[0] for r in tables["Win rate of the agent under test (all camps)"].rows]
    assert overall == ["direct", "best4+direct", "best4+direct - direct (paired)"]


def test_params_take_a_best_of_condition_only_with_the_scripted_labeler(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("label: {scheme: scripted}\nevaluate: {conditions: [direct, best4+direct]}\n")
    assert load_params(path).evaluate.conditions == ["direct", "best4+direct"]
    for text, words in (
        (
            "label: {scheme: per_response}\nevaluate: {conditions: [best4+direct]}\n",
            "best4+direct labels speeches at play time with label.scheme: scripted",
        ),
        ("label: {scheme: scripted}\nevaluate: {conditions: [best0+direct]}\n", "bad condition"),
        ("label: {scheme: scripted}\nevaluate: {conditions: [best4+robot]}\n", "unknown agent"),
    ):
        path.write_text(text)
        with pytest.raises(ParamsError) as err:
            load_params(path)
        assert words in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow
def test_real_model_plays_a_best_of_onuw_game(local_llm):
    from stackelberg.evaluation.tournament import camp_seats

    seed = next(s for s in range(10) if camp_seats("onuw", s, "werewolf"))
    records = play_matrix(
        "onuw",
        ["best2+direct"],
        seeds=[seed],
        camps=["werewolf"],
        opponent="scripted",
        options={"discussion_rounds": 1},
        llm_routes={"default": local_llm, REFINER_BASE_ROUTE: local_llm, MEASURER_ROUTE: local_llm},
        agent_options={"speech_tokens": 8, "max_prompt_tokens": 640},
        refiner=RefinerProfile(RefinerStyle(max_new_tokens=12), 640, 0.7, 0.9),
        best_of_options={"label": LabelSettings(scheme="scripted")},
    )
    [record] = records
    assert record["best_of_speeches"] >= 1
    assert record["best_of_samples"] == 2 * record["best_of_speeches"]


def test_the_evaluate_stage_plays_best_of_with_the_untrained_refiner_and_the_measurer(
    monkeypatch,
):
    """Kept through the release before the tables (the Measurer then scores the held-out
    candidates after them: the tables call it), and given to the tables' routes."""
    import stages.evaluate as evaluate
    from flows import context
    from stackelberg.params import Params

    params = Params(label={"scheme": "scripted"}, evaluate={"conditions": ["best4+direct"]})
    ctx = context.StageContext("evaluate", "werewolf", params)
    released = []
    monkeypatch.setattr(
        context.StageContext,
        "release_models",
        lambda self, *roles, also=(): released.append((roles, also)),
    )
    monkeypatch.setattr(evaluate, "play_routes", lambda *args, **kwargs: kwargs)
    untrained = evaluate.refiner_profile(ctx, trained=False).model
    given = evaluate.tournament_routes(ctx)
    assert given["untrained_refiner"] == untrained and given["measurer"] == params.models.measurer
    [(roles, also)] = released
    assert "measurer" in roles and untrained in also
    released.clear()
    plain = Params(evaluate={"conditions": ["refiner+direct"]})
    evaluate.tournament_routes(context.StageContext("evaluate", "werewolf", plain))
    [(roles, also)] = released
    assert "measurer" not in roles and untrained not in also
