"""The self-play tables of the models trained without an LLM: one learner seat drawn from
the seed among scripted players, and held-out seeds apart from the training games'."""

from __future__ import annotations

from types import SimpleNamespace

from stackelberg.agents import make_agent
from stackelberg.agents.scripted import scripted_agent
from stackelberg.training.learner import (
    EVAL_SEEDS,
    eval_seeds,
    learner_seat,
    learner_table,
    play_learner_games,
)


def test_held_out_seeds_start_apart_from_the_training_seeds():
    assert eval_seeds(SimpleNamespace(seed=3, eval_games=4)) == range(
        EVAL_SEEDS + 3, EVAL_SEEDS + 7
    )
    assert len(eval_seeds(SimpleNamespace(seed=0, eval_games=0))) == 0


def test_the_learner_sits_at_the_seat_its_seed_draws_among_scripted_players():
    seats = set()
    for seed in range(12):
        table, seat = learner_table("werewolf", seed, {}, lambda: make_agent("random", "werewolf"))
        n = table.game.n_players
        assert seat == learner_seat(seed, n)
        kinds = [type(a) for a in table.agents]
        assert [i for i, a in enumerate(table.agents) if a.kind == "random"] == [seat]
        assert kinds.count(type(scripted_agent("werewolf"))) == n - 1
        seats.add(seat)
    assert len(seats) > 1  # drawn per seed, not one fixed seat
    table, seat = learner_table("avalon", 0)
    assert seat is None and {a.kind for a in table.agents} == {"scripted"}


def test_learner_games_give_each_games_seat_record_and_table():
    games = play_learner_games("werewolf", [4, 5], None, lambda: make_agent("random", "werewolf"))
    assert [rec["seed"] for _, rec, _ in games] == [4, 5]
    for seat, rec, table in games:
        assert rec["players"][seat]["agent"] == "random" and table.agents[seat].kind == "random"
