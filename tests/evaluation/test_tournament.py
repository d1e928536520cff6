"""Camp seating, paired deals across conditions, refiner+X routing, and one real-model game."""

from __future__ import annotations

import pytest

from stackelberg.agents.refiner import RefinerProfile, RefinerStyle
from stackelberg.evaluation.tournament import (
    build_agent,
    camp_seats,
    parse_condition,
    play_matrix,
    play_tournament,
)
from stackelberg.games import ConfigError, make_game


def dealt(game_name: str, seed: int) -> list[tuple[str, str]]:
    game = make_game(game_name)
    game.reset(seed)
    return [(p.role, p.team) for p in game.players]


@pytest.mark.parametrize(
    "game_name, camp, size",
    [
        ("werewolf", "werewolf", 2),
        ("werewolf", "village", 5),
        ("avalon", "evil", 2),
        ("avalon", "good", 4),
    ],
)
def test_camp_seats_follow_the_deal_of_the_seed(game_name, camp, size):
    for seed in range(5):
        seats = camp_seats(game_name, seed, camp)
        assert len(seats) == size
        assert seats == [i for i, (_, team) in enumerate(dealt(game_name, seed)) if team == camp]
    assert len({tuple(camp_seats(game_name, s, camp)) for s in range(10)}) > 1  # seats vary


def test_onuw_camp_is_the_dealt_team_and_may_be_empty():
    wolves = {s: camp_seats("onuw", s, "werewolf") for s in range(30)}
    assert any(not seats for seats in wolves.values())  # no werewolf card among the players
    for seed, seats in wolves.items():
        assert seats == [i for i, (role, _) in enumerate(dealt("onuw", seed)) if role == "werewolf"]


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: camp_seats("werewolf", 0, "good"), "unknown camp 'good'"),
        (lambda: camp_seats("chess", 0, "white"), "unknown game 'chess'"),
        (lambda: parse_condition("refiner+"), "bad condition"),
        (lambda: build_agent("refiner+random", "werewolf"), "needs a Refiner backend"),
        (lambda: build_agent("genius", "werewolf"), "unknown agent 'genius'"),
        (lambda: play_matrix("avalon", ["random"], [0], opponent="refiner+random"), "opponent"),
    ],
)
def test_bad_names_raise_one_clear_error(call, words):
    with pytest.raises(ConfigError, match=words):
        call()


def test_conditions_meet_identical_deals_and_seats_are_by_camp():
    seeds = range(8)
    records = play_matrix(
        "werewolf", ["scripted", "random"], seeds, opponent="random", keep_games=True
    )
    assert len(records) == 2 * 2 * 8  # conditions x camps x seeds
    by_key: dict = {}
    for r in records:
        by_key.setdefault((r["camp"], r["seed"]), []).append(r)
        agents = [p["agent"] for p in r["game_record"]["players"]]
        for p in r["players"]:
            assert p["tested"] == (p["team"] == r["camp"]) == (p["id"] in r["seats"])
            assert agents[p["id"]] == (r["condition"] if p["tested"] else "random")
        assert r["win"] == (r["winner"] == r["camp"])
    for pair in by_key.values():
        assert sorted(r["condition"] for r in pair) == ["random", "scripted"]
        roles = [[(p["role"], p["team"]) for p in r["players"]] for r in pair]
        assert roles[0] == roles[1] == dealt("werewolf", pair[0]["seed"])


def test_same_seeds_replay_the_same_games():
    a = play_tournament("avalon", "scripted", "evil", opponent="random", seeds=range(4))
    b = play_tournament("avalon", "scripted", "evil", opponent="random", seeds=range(4))
    assert a == b and [r["seed"] for r in a] == [0, 1, 2, 3]


def test_onuw_skips_seeds_without_the_camp_for_every_condition():
    seeds = range(12)
    records = play_matrix(
        "onuw", ["random", "scripted"], seeds, camps=["werewolf"], opponent="scripted"
    )
    played = sorted(s for s in seeds if camp_seats("onuw", s, "werewolf"))
    for condition in ("random", "scripted"):
        assert sorted(r["seed"] for r in records if r["condition"] == condition) == played
    assert all("final_role" in p for r in records for p in r["players"])


def test_refiner_seats_route_generations_to_the_refiner(fake_llm, make_fake_llm):
    refiner = make_fake_llm("Analysis: firm.\nResponse: Player 3 is lying, vote Player 3.")
    records = play_matrix(
        "werewolf",
        ["direct", "refiner+direct"],
        seeds=[0, 1],
        camps=["werewolf"],
        llm_routes={"default": fake_llm, "refiner": refiner},
        agent_options={"speech_tokens": 8},
        keep_games=True,
        batch_games=4,
    )
    refined = [r for r in records if r["condition"] == "refiner+direct"]
    assert refiner.batches and all(r["refined"] >= 1 for r in refined)
    assert all(r["refined"] == r["refiner_parsed"] for r in refined)
    for r in records:
        speeches = {
            e["data"]["text"]
            for e in r["game_record"]["events"]
            if e["type"] == "speech" and e["player"] in r["seats"]
        }
        if r["condition"] == "refiner+direct":
            assert speeches == {"Player 3 is lying, vote Player 3."}
        else:
            assert "Player 3 is lying, vote Player 3." not in speeches
    # all four tables were in flight together: the first batch holds requests of each
    assert max(fake_llm.batches) >= 4


@pytest.mark.slow
def test_real_model_plays_a_paired_onuw_game(local_llm):
    seed = next(s for s in range(10) if camp_seats("onuw", s, "werewolf"))
    records = play_matrix(
        "onuw",
        ["direct", "refiner+direct"],
        seeds=[seed],
        camps=["werewolf"],
        opponent="scripted",
        options={"discussion_rounds": 1},
        llm_routes={"default": local_llm, "refiner": local_llm},
        agent_options={"speech_tokens": 8, "max_prompt_tokens": 640},
        refiner=RefinerProfile(RefinerStyle(max_new_tokens=12), 640, 0.7, 0.9),
    )
    assert [r["condition"] for r in records] == ["direct", "refiner+direct"]
    assert records[0]["players"][0]["role"] == records[1]["players"][0]["role"]
    assert records[1]["refined"] == 1


def test_the_llm_seats_speech_counts_reach_the_records_metrics_and_mlflow(make_fake_llm):
    from stackelberg.evaluation.metrics import game_metrics, mlflow_metrics

    echo = make_fake_llm("The game so far:")  # every sample an echoed heading: all fall back
    records = play_matrix(
        "werewolf",
        ["direct"],
        seeds=[0, 1],
        camps=["werewolf"],
        opponent="scripted",
        llm_routes=echo,
        agent_options={"max_speech_attempts": 2},
        keep_games=True,
    )
    total = 0
    for r in records:
        said = sum(
            e["type"] == "speech" and e["player"] in r["seats"] for e in r["game_record"]["events"]
        )
        assert said > 0
        assert (r["speech_asks"], r["speech_reasks"], r["fallback_speeches"]) == (
            2 * said,
            said,
            said,
        )
        total += said
    metrics = game_metrics(records, resamples=100)
    counts = {"speech_asks": 2 * total, "speech_reasks": total, "fallback_speeches": total}
    assert metrics["speeches"] == {"direct": {"games": 2, **counts}}
    flat = mlflow_metrics(metrics)
    assert {k: flat[f"speeches/werewolf/direct/{k}"] for k in counts} == counts


def test_llm_players_play_their_own_few_seeds_and_pairs_stay_paired():
    from stackelberg.evaluation.tournament import matrix_games
    from stackelberg.params import Params

    conditions = ["direct", "refiner+direct", "scripted", "refiner+scripted"]
    p = Params(evaluate={"conditions": conditions, "tournament_games": 5, "llm_games": 1}).evaluate
    assert [p.games_of(c) for c in conditions] == [1, 1, 5, 5]
    assert Params(evaluate={"tournament_games": 5}).evaluate.games_of("refiner+direct") == 5
    seeds = {c: range(10, 10 + p.games_of(c)) for c in conditions}
    jobs = matrix_games("werewolf", conditions, seeds, ["werewolf"])
    played = {c: [seed for cond, _, seed, _ in jobs if cond == c] for c in conditions}
    assert played["direct"] == played["refiner+direct"] == [10]
    assert played["scripted"] == played["refiner+scripted"] == list(range(10, 15))
    # LLM players' seeds take the camps in turn: 3 games in all, camps alternating
    assert p.camps_in_turn() == ["direct", "refiner+direct"]
    seeds = {c: range(20, 23) for c in conditions}
    jobs = matrix_games("werewolf", conditions, seeds, ["village", "werewolf"], None, ["direct"])
    direct = [(camp, seed) for cond, camp, seed, _ in jobs if cond == "direct"]
    assert sorted(direct, key=lambda x: x[1]) == [
        ("village", 20),
        ("werewolf", 21),
        ("village", 22),
    ]
    assert len([j for j in jobs if j[0] == "scripted"]) == 6  # every seed in both camps
    assert Params(evaluate={"conditions": conditions}).evaluate.camps_in_turn() == []
    # a seed whose deal gives its turn's camp no seat plays in the next camp it seats
    onuw = next(s for s in range(100) if not camp_seats("onuw", s, "werewolf"))
    [job] = matrix_games("onuw", ["direct"], [onuw], ["werewolf", "village"], None, ["direct"])
    assert job[:3] == ("direct", "village", onuw)
    # one set of seeds for every condition, as before
    assert matrix_games("werewolf", conditions, range(10, 12), ["werewolf"]) == [
        (c, "werewolf", s, seats)
        for c in conditions
        for (_, _, s, seats) in matrix_games("werewolf", ["direct"], range(10, 12), ["werewolf"])
    ]
