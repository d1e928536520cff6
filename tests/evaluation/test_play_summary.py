"""What `stackelberg play` prints under its games, counted by metrics' own functions: wins by
team and by role dealt, the reasons of the wins, a scored game's dimensions, and the LLM
seats' counts, on hand-made records whose numbers are known."""

from __future__ import annotations

import pytest

from stackelberg.evaluation.play_summary import play_summary, team_records


def player(i, role, team, **facts):
    return {"id": i, "name": f"Player {i + 1}", "role": role, "team": team, **facts}


def werewolf_game(seed, winner, winners, reason):
    players = [
        player(0, "werewolf", "werewolf"),
        player(1, "seer", "village"),
        player(2, "villager", "village"),
        player(3, "villager", "village"),
    ]
    result = {"winner": winner, "winners": winners, "reason": reason}
    return {"game": "werewolf", "seed": seed, "players": players, "result": result}


GAMES = [
    werewolf_game(0, "village", [1, 2, 3], "werewolves_dead"),
    werewolf_game(1, "werewolf", [0], "wolf_parity"),
    werewolf_game(2, "village", [1, 2, 3], "werewolves_dead"),
]


def test_wins_by_team_and_by_role_count_games():
    summary = play_summary(GAMES)
    assert summary["games"] == 3 and summary["scenarios"] == 0
    teams = summary["teams"]
    assert teams["village"]["overall"]["wins"] == 2 and teams["village"]["overall"]["n"] == 3
    assert teams["werewolf"]["overall"]["wins"] == 1 and teams["werewolf"]["overall"]["n"] == 3
    assert teams["village"]["overall"]["rate"] == pytest.approx(2 / 3)
    # a role counts once a game however many hold it (two villagers a game here)
    assert {r: (v["wins"], v["n"]) for r, v in teams["village"]["roles"].items()} == {
        "seer": (2, 3),
        "villager": (2, 3),
    }
    assert teams["werewolf"]["roles"]["werewolf"]["wins"] == 1
    assert summary["reasons"] == {
        "village": {"werewolves_dead": 2},
        "werewolf": {"wolf_parity": 1},
    }
    assert summary["choices"] == {} and summary["speeches"] == {}


def test_a_shared_win_counts_for_both_teams():
    onuw = {
        "game": "onuw",
        "seed": 0,
        "players": [player(0, "tanner", "tanner"), player(1, "seer", "village")],
        "result": {"winner": "village+tanner", "winners": [0, 1], "reason": "tanner_died"},
    }
    teams = play_summary([onuw])["teams"]
    assert teams["tanner"]["overall"]["wins"] == teams["village"]["overall"]["wins"] == 1


def test_the_llm_seats_counts_are_summed_over_every_seat():
    facts = {"speech_asks": 5, "speech_reasks": 1, "fallback_speeches": 1}
    facts |= {"choice_asks": 4, "choice_reasks": 2, "invalid_choices": 1}
    game = werewolf_game(0, "village", [1, 2, 3], "werewolves_dead")
    game["players"][0] |= facts
    game["players"][1] |= facts
    summary = play_summary([game, GAMES[1]])
    assert summary["speeches"] == {"speech_asks": 10, "speech_reasks": 2, "fallback_speeches": 2}
    assert summary["choices"] == {"choice_asks": 8, "choice_reasks": 4, "invalid_choices": 2}


def test_a_scored_game_reports_its_dimensions_by_team_and_no_win_rates():
    def game(seed, scenario, first_goal, second_goal):
        scores = [{"scores": {"goal": first_goal}}, {"scores": {"goal": second_goal}}]
        return {
            "game": "sotopia",
            "seed": seed,
            "players": [player(0, "first", "first"), player(1, "second", "second")],
            "result": {
                "winner": "draw",
                "winners": [],
                "reason": "left",
                "scenario": scenario,
                "scores": scores,
            },
        }

    summary = play_summary([game(0, "a", 8.0, 2.0), game(1, "b", 6.0, 4.0), game(2, "a", 7.0, 3.0)])
    assert summary["scenarios"] == 2 and "teams" not in summary
    assert summary["scores"]["first"]["goal"]["estimate"] == pytest.approx(7.0)
    assert summary["scores"]["second"]["goal"]["estimate"] == pytest.approx(3.0)
    assert summary["scores"]["first"]["goal"]["n"] == 3


def test_each_game_is_one_record_per_team_with_that_teams_seats_under_test():
    records = team_records(GAMES[:1])
    assert [(r["condition"], r["win"]) for r in records] == [("werewolf", False), ("village", True)]
    village = records[1]
    assert [p["id"] for p in village["players"] if p["tested"]] == [1, 2, 3]
    assert [p["won"] for p in village["players"]] == [False, True, True, True]
