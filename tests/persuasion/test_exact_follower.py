"""The exact follower: the scripted listener's next sentence as a distribution, the players
that speak by it, the Measurer built on it and the Stackelberg optimum it implies."""

from __future__ import annotations

import json
import math

import pytest

from stackelberg.agents import make_agent
from stackelberg.agents.runner import Table, play_game, play_tables
from stackelberg.agents.scripted import SAMPLED_KIND, listener_after, sampled_agent
from stackelberg.agents.scripted.opinion import OPINION_TEMPERATURE, Listening, distribution
from stackelberg.games import make_game
from stackelberg.games.base import ALL, ConfigError, Event, GameError
from stackelberg.persuasion.context import instance_view, speech_instances
from stackelberg.persuasion.exact_follower import (
    ExactFollower,
    NotASentence,
    exact_parts,
    grammar_speeches,
    optimum,
)
from stackelberg.persuasion.reward import RewardConfig
from stackelberg.persuasion.truth import scripted_intents

GAMES = ("werewolf", "avalon", "onuw")
T = OPINION_TEMPERATURE


def _first_speech(game_name: str, seed: int, roles=None):
    """A played game's restored log and the index of its first speech."""
    game = make_game(game_name, {})
    game.reset(seed, roles)
    agents = [make_agent(SAMPLED_KIND, game_name) for _ in game.players]
    record = play_game(make_game(game_name, {}), agents, seed, roles)
    restored = make_game(game_name, {}).restore(record)
    first = next(i for i, e in enumerate(restored.events) if e.type == "speech")
    return restored, first


def _speech(game, index: int, speaker: int, text: str) -> Event:
    base = game.events[index]
    return Event("speech", base.phase, base.round, speaker, ALL, {"text": text})


def _hand_case(game_name, seed, roles, follower, speaker, target, neg, pos, quiet_logit, others):
    """Before any speech the follower's stance is 0 on everyone; after "I suspect <target>"
    its accusing sentences about the target have logit ``neg``, the vouching ones ``pos``."""
    game, first = _first_speech(game_name, seed, roles)
    before = listener_after(game, follower, game.events[:first]).opinion()
    assert math.isclose(sum(before.values()), 1.0)
    heard = [*game.events[:first], _speech(game, first, speaker, f"I suspect Player {target + 1}.")]
    after = listener_after(game, follower, heard).opinion()
    assert math.isclose(sum(after.values()), 1.0)
    n_neg, n_pos = neg[0], pos[0]
    z = n_neg * math.exp(neg[1] / T) + n_pos * math.exp(pos[1] / T) + others
    z += math.exp(quiet_logit / T)
    assert after[f"I suspect Player {target + 1}."] == pytest.approx(math.exp(neg[1] / T) / z)
    return before, after


def test_werewolf_hand_computed():
    # wolves 0 and 1, seer 2, guardian 3, villagers 4-6; a villager hears one accusation
    roles = ["werewolf", "werewolf", "seer", "guardian", "villager", "villager", "villager"]
    game, first = _first_speech("werewolf", 3, roles)
    dead = {p for e in game.events[:first] if e.type == "death" for p in e.data["players"]}
    living = [p for p in range(7) if p not in dead]
    follower = next(p for p in (4, 5, 6) if p in living)
    speaker, target = [p for p in living if p != follower][:2]
    m = len(living) - 1  # players the follower may speak of
    before, _ = _hand_case(
        "werewolf", 3, roles, follower, speaker, target,
        neg=(3, 0.5), pos=(2, -0.5), quiet_logit=0.0, others=5 * (m - 1),
    )  # fmt: skip
    assert list(before.values()) == pytest.approx([1 / (5 * m + 1)] * (5 * m + 1))  # uniform


def test_avalon_hand_computed():
    # a loyal servant (seat 4) hears seat 1 accuse seat 2: believed at weight 0.3, a quarter
    # of it in the risk, three times that in the stance
    roles = ["merlin", "loyal_servant", "loyal_servant", "assassin", "morgana", "percival"]
    risk = 0.25 * 0.3  # the others' risks stay 0: stances are centred on their mean
    stance, rest = 3.0 * (risk - risk / 5), 3.0 * (-risk / 5)
    others = 4 * (2 * math.exp(-rest / T) + math.exp(rest / T)) + 2  # + approve, reject at 0
    _hand_case(
        "avalon", 0, roles, follower=1, speaker=0, target=2,
        neg=(1, stance), pos=(2, -stance), quiet_logit=3.5, others=others,
    )  # fmt: skip


def test_onuw_hand_computed():
    game = make_game("onuw", {})
    game.reset(0)
    follower = next(p.id for p in game.players if p.role == "villager")
    speaker, target = [p for p in range(game.n_players) if p != follower][:2]
    m = game.n_players - 1
    _hand_case(
        "onuw", 0, None, follower, speaker, target,
        neg=(4, 0.5), pos=(1, -0.5), quiet_logit=0.0, others=5 * (m - 1),
    )  # fmt: skip


def test_distribution_is_a_softmax():
    dist = distribution({"a": 1.0, "b": 0.0, "c": -1.0}, 0.5)
    assert math.isclose(sum(dist.values()), 1.0)
    assert dist["a"] / dist["b"] == pytest.approx(math.exp(2.0))
    with pytest.raises(ValueError, match="temperature"):
        distribution({"a": 1.0}, 0.0)


def _sampled_games(game_name: str, seeds: range, monkeypatch) -> list:
    """Play seeded ``scripted_sampled`` games, keeping every drawn sentence with the
    distribution it was drawn from and the log it was drawn after."""
    drawn = []
    original = Listening.said_opinion

    def said(self):
        sentence = original(self)
        drawn.append((self.game, len(self.game.events), self.player, self.opinion(), sentence))
        return sentence

    monkeypatch.setattr(Listening, "said_opinion", said)
    for seed in seeds:
        game = make_game(game_name, {})
        game.reset(seed)
        play_game(game, [make_agent(SAMPLED_KIND, game_name) for _ in game.players], seed)
    return drawn


@pytest.mark.parametrize("game_name", GAMES)
def test_sampled_players_say_what_the_distribution_says(game_name, monkeypatch):
    """Over fixed seeds, the drawn sentences fall where the distribution puts them (the
    draws of the most likely sentence within 4 standard deviations of their expectation),
    and the exact follower rebuilt from the game's log is the live player's distribution."""
    drawn = _sampled_games(game_name, range(40), monkeypatch)
    assert len(drawn) > 100
    # the chance of drawing one of the likeliest sentences (ties: all of them)
    modes = [sum(p for p in d.values() if p == max(d.values())) for _, _, _, d, _ in drawn]
    hits = sum(d[s] == max(d.values()) for _, _, _, d, s in drawn)
    expected = sum(modes)
    sd = math.sqrt(sum(p * (1 - p) for p in modes))
    assert abs(hits - expected) < 4 * sd, (hits, expected, sd)
    for game, count, player, dist, sentence in drawn[::7]:
        rebuilt = listener_after(game, player, game.events[:count]).opinion()
        assert rebuilt == pytest.approx(dist)
        assert sentence in rebuilt


@pytest.mark.parametrize("game_name", GAMES)
def test_a_repeated_sentence_counts_once(game_name):
    view, desired, undesired = _instances(game_name)[0]
    follower = ExactFollower()
    sentence = next(s for s in grammar_speeches(view, pairs=False) if "suspect" in s)
    once, twice = follower.logprobs(
        view, [sentence, f"{sentence} {sentence}"], [*desired, *undesired]
    )
    assert once == pytest.approx(twice)


@pytest.mark.parametrize("game_name", ["werewolf", "onuw"])
def test_a_speakers_word_on_itself_changes_nothing(game_name):
    view, desired, undesired = _instances(game_name)[0]
    me = f"Player {view.speaker + 1}"
    silent, denial = ExactFollower().logprobs(
        view, ["Hello.", f"{me} is not a werewolf."], [*desired, *undesired]
    )
    assert silent == pytest.approx(denial)


def test_an_unreadable_speech_changes_nothing_and_a_free_response_is_refused():
    view, desired, undesired = _instances("werewolf")[0]
    follower = ExactFollower()
    a, b = follower.logprobs(view, ["Hello.", "What a lovely morning."], [*desired, *undesired])
    assert a == b
    with pytest.raises(NotASentence, match="label.scheme: scripted"):
        follower.logprobs(view, ["Hello."], ["I think we should all calm down."])


def _instances(game_name: str, seeds: range = range(2)) -> list:
    """(view, desired, undesired) of the speeches of a few sampled games."""
    tables = []
    for seed in seeds:
        game = make_game(game_name, {})
        game.reset(seed)
        agents = [make_agent(SAMPLED_KIND, game_name) for _ in game.players]
        tables.append(Table(make_game(game_name, {}), agents, seed))
    out = []
    for table, record in zip(tables, play_tables(tables), strict=True):
        record_json = json.dumps(record)
        for row in speech_instances(record, table.speech_turns, 3):
            view = instance_view(record_json, row)
            desired, undesired = scripted_intents(view, 3, True, True, 0)
            if desired and undesired:
                out.append((view, desired, undesired))
    assert out
    return out


class _Planted(ExactFollower):
    """A follower that wants one pair of sentences above all: every other speech gets the
    exact follower's log-probabilities, that one the largest possible."""

    def __init__(self, planted: str) -> None:
        super().__init__()
        self.planted = planted

    def logprobs(self, view, candidates, responses):
        rows = super().logprobs(view, candidates, responses)
        pairs = zip(candidates, rows, strict=True)
        return [[0.0] * len(r) if c == self.planted else r for c, r in pairs]


@pytest.mark.parametrize("game_name", GAMES)
def test_the_enumeration_finds_a_planted_best_speech(game_name):
    view, desired, undesired = _instances(game_name)[0]
    speeches = grammar_speeches(view)
    singles = grammar_speeches(view, pairs=False)
    planted = speeches[(len(singles) + len(speeches)) // 2]  # a pair, deep in the order
    assert planted not in singles
    # desired terms alone: the planted speech's 0 is the most any speech can get
    found = optimum(_Planted(planted), view, desired, undesired, RewardConfig(terms="pos_only"))
    assert found.speech == planted
    best = optimum(ExactFollower(), view, desired, undesired, RewardConfig())
    said = [view.base_utterance, *speeches]
    rewards = exact_parts(ExactFollower(), view, said, desired, undesired, RewardConfig())
    assert best.reward == pytest.approx(max(p.clamped for p in rewards))
    assert best.base_reward == pytest.approx(rewards[0].clamped)
    assert best.headroom >= 0  # the base speech is among the speeches it may keep


def test_an_avalon_leader_may_propose_only_its_own_team():
    """The labels' "this team" is the base speech's: a grammar that let the leader propose
    another team would earn reward by changing what the responses are about."""
    leaders = [
        (view, d, u)
        for view, d, u in _instances("avalon", range(4))
        if view.base_utterance.startswith("I propose")
    ]
    assert leaders
    for view, _, _ in leaders:
        proposals = [s for s in grammar_speeches(view, pairs=False) if s.startswith("I propose")]
        assert proposals == [view.base_utterance.split(". ")[0].rstrip(".") + "."]


def test_sampled_players_exist_for_the_opinion_games_only():
    assert sampled_agent("werewolf").kind == SAMPLED_KIND
    with pytest.raises(GameError, match="werewolf, avalon, onuw"):
        sampled_agent("sotopia")
    with pytest.raises(ConfigError, match="not sotopia"):
        make_agent(SAMPLED_KIND, "sotopia")
