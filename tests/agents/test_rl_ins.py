"""rl_ins without an LLM: its features, its tactic templates, the policy file, REINFORCE on
scripted self-play (deterministic, and better than the uniform tactic choice on held-out
seeds), legal games with private tactic notes, and its params. Its games with an LLM (calls
per decision, refiner+rl_ins) are in test_baselines.py with the other baselines."""

from __future__ import annotations

import json
import random

import pytest
import torch
from record_checks import check_record, rule_check

from flows.run import main as run_stage_cli
from stackelberg.agents import make_agent
from stackelberg.agents.runner import Table, play_tables
from stackelberg.agents.scripted.onuw import parse_speech
from stackelberg.agents.tactics.features import FEATURES, features
from stackelberg.agents.tactics.policy import SHAPE, TacticPolicy, load_policy, save_policy
from stackelberg.agents.tactics.speech import TACTIC_NAMES, TacticSpeaker
from stackelberg.evaluation.stats import paired_bootstrap_diff
from stackelberg.evaluation.tournament import build_agent, play_matrix
from stackelberg.games import ConfigError, make_game
from stackelberg.games.base import SPEAK
from stackelberg.params import ParamsError, load_params
from stackelberg.training.tactics import TacticsSettings, play_learner, train_tactics

#: the training of the comparison (about 4 s here) and the held-out seeds it is judged on:
#: trained 41.2% vs uniform 29.8%, gain +0.113 [+0.080, +0.148] when this was written
TRAINING = TacticsSettings(episodes=3000, batch_games=100, seed=0)
HELD_OUT = range(500_000, 500_600)


def at_first_speech(seed: int):
    """An ONUW game after its night (scripted players), at the first speech."""
    game = make_game("onuw")
    game.reset(seed)
    agents = [make_agent("scripted", "onuw") for _ in range(game.n_players)]
    for pid, agent in enumerate(agents):
        agent.setup(game, pid, random.Random(pid))
    while (decision := game.decision()).kind != SPEAK:
        game.step(agents[decision.player].act(decision))
    return game


def speaker(game, player: int) -> TacticSpeaker:
    s = TacticSpeaker()
    s.setup(game, player, random.Random(0))
    s.observe()
    return s


def test_features_have_a_fixed_size_and_follow_what_the_player_heard():
    game = at_first_speech(3)
    first = game.decision().player
    listener = (first + 1) % game.n_players
    s = speaker(game, listener)
    before = features(s)
    assert len(before) == len(FEATURES) and all(-1.0 <= x <= 1.0 for x in before)
    assert before[FEATURES.index(f"acting:{s.acting}")] == 1.0
    assert before[FEATURES.index("claims")] == 0.0 and before[FEATURES.index("first_speech")] == 1
    game.step(f"I am the Seer. I saw Player {listener + 1} is a Werewolf.")
    s.observe()
    after = features(s)
    assert len(after) == len(FEATURES)
    for name in ("claims", "claim:seer", "accused:werewolf", "heard"):
        assert after[FEATURES.index(name)] > before[FEATURES.index(name)], name
    # the size does not depend on the table's size
    big = make_game("onuw", {"n_players": 8})
    big.reset(1)
    assert len(features(speaker(big, 0))) == len(FEATURES)


@pytest.mark.parametrize("seed", range(6))
def test_every_tactic_speaks_a_line_the_scripted_listeners_parse(seed):
    game = at_first_speech(seed)
    s = speaker(game, game.decision().player)
    for tactic in TACTIC_NAMES:
        text = s.speech(tactic)
        parsed = parse_speech(text)
        said = [v for k, v in parsed.items() if k != "hides" and v]
        assert said, (tactic, text)
    honest, deceptive = s.speech("honest defense"), s.speech("deceptive defense")
    if s.card_now == "werewolf":  # a werewolf cannot truly say it is none
        assert "I am not a werewolf" not in honest and "I am not a werewolf" in deceptive
    with pytest.raises(ValueError, match="unknown tactic 'shouting'"):
        s.speech("shouting")


def test_the_same_policy_saves_to_the_same_bytes(tmp_path):
    # DVC hashes the file: a temporary file name inside the archive made every run's differ
    policy = TacticPolicy(hidden=4)
    files = [save_policy(policy, tmp_path / name) / "policy.pt" for name in ("a", "b")]
    assert files[0].read_bytes() == files[1].read_bytes()


def test_the_policy_file_round_trips_and_a_stale_one_is_refused(tmp_path):
    torch.manual_seed(1)
    policy = TacticPolicy(hidden=8)
    save_policy(policy, tmp_path / "p", game="onuw")
    loaded = load_policy(tmp_path / "p")
    vector = [0.5] * len(FEATURES)
    assert loaded.probabilities(vector) == policy.probabilities(vector)
    assert sum(policy.probabilities(vector)) == pytest.approx(1.0)
    shape = json.loads((tmp_path / "p" / SHAPE).read_text())
    (tmp_path / "p" / SHAPE).write_text(json.dumps({**shape, "features": shape["features"][:-1]}))
    with pytest.raises(
        ConfigError, match=r"trained on other features than this code has; retrain it$"
    ):
        load_policy(tmp_path / "p")
    with pytest.raises(ConfigError, match=r"^no tactic policy in .*missing"):
        load_policy(tmp_path / "missing")


def play_template(seed: int, policy=None, seats=(0, 2)):
    game = make_game("onuw", {"discussion_rounds": 2})
    n = game.reset(seed).n_players
    agents = [
        make_agent("rl_ins", "onuw", policy=policy, speech="template")
        if i in seats
        else make_agent("scripted", "onuw")
        for i in range(n)
    ]
    table = Table(game, agents, seed)
    return play_tables([table])[0], table


@pytest.mark.parametrize("seed", range(4))
def test_template_games_are_legal_and_each_speech_notes_its_tactic_privately(seed):
    record, table = play_template(seed)
    check_record(record, "onuw")
    rule_check(record)
    assert [p["agent"] for p in record["players"]][:3] == ["rl_ins", "scripted", "rl_ins"]
    notes = [e for e in record["events"] if e["type"] == "reasoning"]
    speeches = [e for e in record["events"] if e["type"] == "speech" and e["player"] in (0, 2)]
    assert len(notes) == len(speeches) == 2 * 2  # two seats, two rounds: one note a speech
    for note in notes:
        assert note["visible_to"] == [note["player"]] and note["player"] in (0, 2)
        assert note["data"]["step"] == "tactic"
        assert note["data"]["text"].split(":")[0] in TACTIC_NAMES
    for ev in table.game.events:
        if ev.type == "reasoning":
            assert [
                v for v in range(table.game.n_players) if ev in table.game.visible_events(v)
            ] == [ev.player]
    again, _ = play_template(seed)
    assert again == record  # seeded: the same tactics, the same game


def test_an_llm_kind_still_needs_an_llm_and_a_bad_speech_mode_is_refused():
    with pytest.raises(ConfigError, match=r"^agent 'rl_ins' needs an LLM backend"):
        make_agent("rl_ins", "onuw")
    with pytest.raises(ConfigError, match=r"^speech: 'poem'; choose one of: llm, template$"):
        make_agent("rl_ins", "onuw", llm=object(), speech="poem")
    with pytest.raises(ConfigError, match=r"^agent 'rl_ins' plays onuw only, not werewolf$"):
        make_agent("rl_ins", "werewolf", speech="template")


def test_a_tournament_hands_rl_ins_the_policy_of_its_route():
    policy = TacticPolicy(hidden=4)
    routes = {"default": object(), "refiner": object(), "tactics": policy}
    assert build_agent("rl_ins", "onuw", routes).policy is policy
    wrapped = build_agent("refiner+rl_ins", "onuw", routes)
    assert wrapped.kind == "refiner+rl_ins" and wrapped.inner.policy is policy
    assert build_agent("rl_ins", "onuw", {"default": object()}).policy is None  # uniform


def test_a_tournament_plays_rl_ins_seats_with_the_policy_on_its_route():
    """As the evaluate stage does: the policy beside the backends, under ``tactics``. A
    policy that always picks one tactic shows in every tactic note."""
    policy = TacticPolicy(hidden=4)
    with torch.no_grad():
        policy.net[-1].bias.copy_(torch.tensor([0.0, 0, 0, 0, 50.0, 0]))
    records = play_matrix(
        "onuw",
        ["rl_ins"],
        range(3),
        opponent="scripted",
        llm_routes={"tactics": policy},
        agent_options={"speech": "template"},
        options={"discussion_rounds": 1},
        keep_games=True,
    )
    notes = [
        e["data"]["text"]
        for r in records
        for e in r["game_record"]["events"]
        if e["type"] == "reasoning"
    ]
    assert records and notes  # (a deal with no werewolf among the players has no such camp)
    assert all(n.startswith("deceptive accusation:") for n in notes)


@pytest.fixture(scope="module")
def trained():
    return train_tactics(TRAINING)


@pytest.mark.slow
def test_training_is_deterministic_and_logs_a_curve(trained):
    small = TacticsSettings(episodes=200, batch_games=100, seed=3)
    first, history = train_tactics(small)
    second, again = train_tactics(small)
    assert history == again and len(history) == 2
    for a, b in zip(first.state_dict().values(), second.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    _, curve = trained
    assert len(curve) == TRAINING.episodes // TRAINING.batch_games
    assert {"games", "win_rate", "loss", "entropy"} <= set(curve[-1])
    assert curve[-1]["entropy"] < curve[0]["entropy"]  # it learned a preference


@pytest.mark.slow
def test_the_trained_policy_beats_the_uniform_tactic_choice_on_held_out_seeds(trained):
    """Same seeds, same learner seat, same scripted opponents: only the tactic choice
    differs. The paired bootstrap interval of the win-rate gain must exclude zero."""
    policy, _ = trained
    wins = [float(w) for w, _, _ in play_learner(policy, HELD_OUT)]
    uniform = [float(w) for w, _, _ in play_learner(None, HELD_OUT)]
    gain = paired_bootstrap_diff(uniform, wins, resamples=2000, seed=0)
    print(
        f"trained {sum(wins) / len(wins):.3f} vs uniform {sum(uniform) / len(uniform):.3f} "
        f"over {len(wins)} seeds: gain {gain.estimate:+.3f} [{gain.low:+.3f}, {gain.high:+.3f}]"
    )
    assert gain.low > 0.0


def write(tmp_path, text: str):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    return path


def test_the_tactics_section_validates_and_a_bad_value_fails_in_one_line(tmp_path):
    assert load_params(write(tmp_path, "tactics: {episodes: 10}\n")).tactics.episodes == 10
    for text, where in (
        ("tactics: {learning_rate: 0}\n", "tactics.learning_rate"),
        ("tactics: {episods: 10}\n", "tactics.episods"),
        ("tactics: {options: {discussion_rounds: -1}}\n", "tactics.options"),
    ):
        with pytest.raises(ParamsError) as err:
            load_params(write(tmp_path, text))
        assert where in str(err.value) and "\n" not in str(err.value)


def test_rl_ins_is_accepted_where_it_plays_and_refused_elsewhere_in_one_line(tmp_path):
    ok = "games: [onuw]\nevaluate: {conditions: [rl_ins, refiner+rl_ins]}\n"
    assert load_params(write(tmp_path, ok)).evaluate.conditions == ["rl_ins", "refiner+rl_ins"]
    for text, match in (
        (
            "games: [werewolf]\nevaluate: {conditions: [rl_ins]}\n",
            "werewolf: agent 'rl_ins' plays onuw only, not werewolf$",
        ),
        ("games: [onuw]\nselfplay: {agents: rl_ins}\n", "selfplay.agents: rl_ins plays with"),
    ):
        with pytest.raises(ParamsError, match=match) as err:
            load_params(write(tmp_path, text))
        assert "\n" not in str(err.value)


def test_the_tactics_stage_runs_for_onuw_only(capsys):
    with pytest.raises(SystemExit) as exit_:
        run_stage_cli(["tactics", "werewolf"])
    assert exit_.value.code == 2
    assert "tactics runs for onuw only, not werewolf" in capsys.readouterr().err
