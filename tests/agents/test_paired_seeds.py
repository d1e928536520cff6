"""Seeds are truly paired: a wrapper (``refiner+X``, ``bestN+X``) draws from a stream of its
own, so X makes the very draws it makes unwrapped, and with a Refiner that says X's speech
unchanged, every game of the wrapped kind is X's game on the same seed."""

from __future__ import annotations

import json
import re

import pytest

from stackelberg.agents.runner import agent_rng, derived_rng
from stackelberg.evaluation.tournament import parse_condition, play_matrix
from stackelberg.games import GAME_NAMES, game_spec
from stackelberg.persuasion.best_of import MEASURER_ROUTE, REFINER_BASE_ROUTE

#: the planned speech, last in the Refiner's prompt
PLANNED = re.compile(r'Your planned speech: "(.*)"\Z', re.S)


class Identity:
    """A Refiner that says the planned speech unchanged (every sample is X's speech), and a
    Measurer to which every candidate is alike."""

    context_window = 100_000

    def count_tokens(self, text) -> int:
        return len(str(text)) // 4 + 1

    def run_batch(self, requests):
        return [[PLANNED.search(r.prompt[-1]["content"]).group(1)] * r.n for r in requests]

    def render_chat(self, messages, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def score_nested(self, context, candidates, responses, joiner=""):
        return [[[-1.0] for _ in responses] for _ in candidates]


def as_unwrapped(record: dict) -> str:
    """A wrapped kind's game record as X's would read, as JSON: the seats' kind X, and no
    speech data of the Refiner's (the speech it rewrote, here the one said)."""
    record = json.loads(json.dumps(record))
    for player in record["players"]:
        player["agent"] = parse_condition(player["agent"]).kind
    for event in record["events"]:
        if event["type"] == "speech" and "base_utterance" in event["data"]:
            assert event["data"].pop("base_utterance") == event["data"]["text"]
    return json.dumps(record)


class Recording:
    """A backend that keeps the requests it answers (their prompts and seeds) and passes
    them on to ``llm``."""

    def __init__(self, llm) -> None:
        self.llm = llm
        self.requests: list[str] = []

    def __getattr__(self, name):
        return getattr(self.llm, name)

    def run_batch(self, requests):
        self.requests += map(repr, requests)
        return self.llm.run_batch(requests)


def assert_paired(game: str, kind: str, seeds: range, player=None, **options) -> None:
    """X, refiner+X and best2+X on ``seeds``, in both camps: every wrapped game is X's game,
    and X's LLM seats (``player``: their backend) ask the very same requests, seeds
    included (a real model's samples follow the seeds)."""
    identity = Identity()
    wrappers = {"refiner": identity, REFINER_BASE_ROUTE: identity, MEASURER_ROUTE: identity}
    played: dict[str, tuple[dict, list[str]]] = {}
    for condition in (kind, f"refiner+{kind}", f"best2+{kind}"):
        asked = Recording(player)
        routes = wrappers | ({"default": asked} if player is not None else {})
        records = play_matrix(
            game,
            [condition],
            seeds,
            opponent="scripted",
            llm_routes=routes,
            keep_games=True,
            **options,
        )
        games = {(r["camp"], r["seed"]): r["game_record"] for r in records}
        played[condition] = games, sorted(asked.requests)
        rewritten = sum(r.get("refined", 0) + r.get("best_of_speeches", 0) for r in records)
        assert condition == kind or rewritten > 0  # the wrapper was at work
    games, requests = played.pop(kind)
    assert {camp for camp, _ in games} == set(game_spec(game).tested_camps)
    assert requests or player is None
    for condition, (wrapped, asked) in played.items():
        assert wrapped.keys() == games.keys()
        for key, record in wrapped.items():
            assert as_unwrapped(record) == json.dumps(games[key]), (condition, key)
        assert asked == requests, condition


@pytest.mark.parametrize("game", GAME_NAMES)
def test_wrapped_scripted_seats_play_the_scripted_games_of_their_seeds(game):
    assert_paired(game, "scripted", range(10))


@pytest.mark.parametrize("game", GAME_NAMES)
def test_wrapped_llm_players_play_the_llm_players_games_of_their_seeds(game, api):
    """``direct`` on the pretend chat model, choosing in words: its speeches' seeds and the
    random option a choice it cannot answer falls back to come from the seat's stream, which
    the Refiner must not touch."""
    options = {"choice": "generate", "speech_tokens": 16}
    assert_paired(game, "direct", range(3), api, agent_options=options)


def test_a_derived_stream_leaves_its_source_alone_and_is_the_same_in_every_process():
    rng = agent_rng(7, 2)
    state = rng.getstate()
    own = derived_rng(rng, "refiner")
    assert rng.getstate() == state  # nothing drawn from the seat's stream
    draws = [own.randrange(2**31) for _ in range(3)]
    again = derived_rng(agent_rng(7, 2), "refiner")
    assert [again.randrange(2**31) for _ in range(3)] == draws
    assert derived_rng(agent_rng(7, 2), "other").randrange(2**31) != draws[0]
    assert agent_rng(7, 2).randrange(2**31) != draws[0]  # not the seat's stream itself
    # pinned: a digest of the state, not Python's per-process ``hash`` of a str
    assert draws[0] == 1717817035
