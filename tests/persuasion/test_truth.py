"""The scripted labeler (label.scheme: scripted) and the judge of intents against the truth.

The checks read the responses with the scripted players' parsers and the record's roles
directly, not with the labeler's own model of the game, so a labeler that wrote the wrong
side (or a judge that read it wrongly) fails them.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from stackelberg.agents.scripted.avalon import parse_claims, parse_vote_intent
from stackelberg.agents.scripted.onuw import parse_speech
from stackelberg.agents.scripted.werewolf import parse_suspects, parse_trusts, parse_verdicts
from stackelberg.games import GAME_NAMES
from stackelberg.games.base import player_name
from stackelberg.games.onuw import ROLE_TEAM as ONUW_TEAM
from stackelberg.games.sotopia_scores import said
from stackelberg.params import Params, load_params
from stackelberg.persuasion.context import instance_view, speech_instances
from stackelberg.persuasion.intents import SCRIPTED, LabelSettings, label_views
from stackelberg.persuasion.truth import (
    HURTS,
    SERVES,
    TRUTHS,
    intent_quality,
    judge,
    scripted_intents,
)
from stages import label as label_stage

ROOT = Path(__file__).resolve().parents[2]
GAMES = list(GAME_NAMES)
K = 3


def test_every_game_has_a_truth():
    assert list(TRUTHS) == GAMES


def _instances(selfplay, game, seeds=range(3)):
    """(record, instance row, view) of every speech with a follower in a few games."""
    out = []
    for rec, turns in selfplay(game, seeds):
        for row in speech_instances(rec, turns, min_words=1):
            out.append((rec, row, instance_view(json.dumps(rec), row)))
    return out


def _intents(view, full_information=True, seed=0):
    return scripted_intents(view, K, full_information, True, seed)


# ---- the truth, read independently ---------------------------------------------------------


def _wants(rec, row, text) -> list[bool]:
    """For each side ``text`` takes, whether the speaker's side wants it, by the record."""
    game, n, speaker = rec["game"], len(rec["players"]), row["speaker"]
    if game == "sotopia":
        keys = next(
            e["data"]["goal_keywords"]
            for e in rec["events"]
            if e["type"] == "character" and e["player"] == speaker
        )
        return [any(said(k, text) for k in keys)]
    if game == "onuw":
        camp = [ONUW_TEAM[c] for c in rec["result"]["final_roles"]]
        assert "tanner" not in camp  # the default deck: two camps, spared = same camp
        said_ = parse_speech(text)
        accused = [*said_["suspects"], *said_["liars"]]
        accused += [p for p, c in said_["sightings"] if ONUW_TEAM[c] == "werewolf"]
        cleared = [*said_["not_wolf"]]
        cleared += [p for p, c in said_["sightings"] if ONUW_TEAM[c] != "werewolf"]
    else:
        camp = [p["team"] for p in rec["players"]]
        if game == "werewolf":
            verdicts = parse_verdicts(text, n)
            accused = parse_suspects(text, n) + [p for p, w in verdicts if w]
            cleared = parse_trusts(text, n) + [p for p, w in verdicts if not w]
        else:
            claims = parse_claims(text)
            accused = [p for p, pol in claims if pol < 0]
            cleared = [p for p, pol in claims if pol > 0]
    me = camp[speaker]
    out = [camp[p] != me for p in accused] + [camp[p] == me for p in cleared]
    if game == "avalon" and (vote := parse_vote_intent(text)) is not None:
        # the team on the table is the one the leader then proposes formally
        team = next(
            e["data"]["team"] for e in rec["events"][row["event_index"] :] if e["type"] == "propose"
        )
        has_evil = any(camp[p] == "evil" for p in team)
        out.append(vote == (has_evil if me == "evil" else not has_evil))
    return out


@pytest.mark.parametrize("game", GAMES)
def test_scripted_intents_serve_the_speakers_side_by_the_truth(game, selfplay):
    instances = _instances(selfplay, game)
    assert len(instances) >= 10
    for rec, row, view in instances:
        desired, undesired = _intents(view, seed=row["event_index"])
        assert len(desired) == K and len(undesired) == K, (row, desired, undesired)
        assert len(set(desired + undesired)) == 2 * K
        for text in desired + undesired:
            # the follower's voice: it never names itself, nor repeats the speech
            assert not re.search(rf"\b{player_name(row['follower'])}\b", text), text
            assert text != row["base_utterance"]
        for text in desired:
            sides = _wants(rec, row, text)
            assert sides and all(sides), (row["speaker_role"], text)
        for text in undesired:
            sides = _wants(rec, row, text)
            assert sides and not any(sides), (row["speaker_role"], text)


@pytest.mark.parametrize("game", GAMES)
def test_the_scripted_labeler_measures_100_percent(game, selfplay):
    instances = _instances(selfplay, game)
    views = [v for _, _, v in instances]
    labels = [_intents(v, seed=i) for i, v in enumerate(views)]
    quality = intent_quality(views, [d for d, _ in labels], [u for _, u in labels])
    assert quality["desired"]["serves"] == 1.0 and quality["undesired"]["hurts"] == 1.0
    assert quality["desired"]["n"] == K * len(views)


def test_the_intents_are_deterministic_and_the_seed_picks_among_them(selfplay):
    views = [v for _, _, v in _instances(selfplay, "werewolf")]
    assert [_intents(v, seed=7) for v in views] == [_intents(v, seed=7) for v in views]
    assert [_intents(v, seed=7) for v in views] != [_intents(v, seed=8) for v in views]


# ---- the speaker's own view ----------------------------------------------------------------

#: per game, a role that learns nothing about the others at night, and how to change the
#: truth the speaker cannot see
BLIND = {"werewolf": "villager", "avalon": "loyal_servant", "onuw": "villager"}


def _hide_others(rec: dict, speaker: int) -> dict:
    """The record with the other players' roles (ONUW: cards) rotated: a truth the
    speaker's own events cannot tell apart."""
    rec = copy.deepcopy(rec)
    others = [p for p in rec["players"] if p["id"] != speaker]
    roles = [(p["role"], p["team"]) for p in others]
    for p, (role, team) in zip(others, roles[1:] + roles[:1], strict=True):
        p["role"], p["team"] = role, team
    if final := rec["result"].get("final_roles"):
        rest = [final[p["id"]] for p in others]
        for p, card in zip(others, rest[1:] + rest[:1], strict=True):
            final[p["id"]] = card
    return rec


@pytest.mark.parametrize("game", sorted(BLIND))
def test_without_full_information_only_the_speakers_knowledge_counts(game, selfplay):
    blind = [
        (rec, row)
        for rec, row, _ in _instances(selfplay, game)
        if row["speaker_role"] == BLIND[game]
    ]
    assert blind
    truth_changed = 0
    for rec, row in blind:
        seen = instance_view(json.dumps(rec), row)
        moved = instance_view(json.dumps(_hide_others(rec, row["speaker"])), row)
        assert _intents(seen, False) == _intents(moved, False)
        truth_changed += _intents(seen, True) != _intents(moved, True)
    assert truth_changed, "the rotation never changed the truth: the test proves nothing"


def test_sotopia_without_full_information_ignores_the_followers_goal(selfplay):
    rec, row, view = _instances(selfplay, "sotopia")[0]
    changed = copy.deepcopy(rec)
    for e in changed["events"]:
        if e["type"] == "character" and e["player"] == row["follower"]:
            e["data"]["goal_keywords"] = ["zebra", "yacht", "xylophone"]
    moved = instance_view(json.dumps(changed), row)
    assert _intents(view, False) == _intents(moved, False)
    assert _intents(view, True) != _intents(moved, True)


def test_a_werewolf_knows_every_camp_so_its_view_is_the_truth(selfplay):
    wolves = [v for _, r, v in _instances(selfplay, "werewolf") if r["speaker_role"] == "werewolf"]
    assert wolves
    for view in wolves:
        assert _intents(view, False) == _intents(view, True)


# ---- the judge -----------------------------------------------------------------------------


def test_the_judge_reads_sides_and_leaves_vague_responses_unjudged(selfplay):
    rec, row, view = next(
        x for x in _instances(selfplay, "werewolf") if x[1]["speaker_role"] == "villager"
    )
    wolf = next(p["id"] for p in rec["players"] if p["team"] == "werewolf")
    name = player_name(wolf)
    assert judge(view, f"I will vote for {name}.") == SERVES
    assert judge(view, f"I trust {name}.") == HURTS
    assert judge(view, "What a day.") is None
    assert judge(view, "You will not be able to return to this game.") is None
    other = next(
        p["id"]
        for p in rec["players"]
        if p["team"] == "village" and p["id"] not in (row["speaker"], row["follower"])
    )
    assert judge(view, f"I trust {name}. I trust {player_name(other)}.") == 0  # mixed


# ---- the label stage -----------------------------------------------------------------------


class _NoModels(SimpleNamespace):
    def model(self, config):
        raise AssertionError(f"the label stage loaded a model: {config.model}")


@pytest.mark.parametrize("scheme", ["scripted", "per_response"])
def test_the_label_stage_loads_no_model_for_the_scripted_scheme(scheme, selfplay):
    instances = _instances(selfplay, "onuw", [0])
    rows, views = [r for _, r, _ in instances], [v for _, _, v in instances]
    ctx = _NoModels(
        section=LabelSettings(scheme=scheme, k=2),
        params=Params(),
        instances=lambda dataset, ids: (rows, views),
    )
    if scheme != SCRIPTED:
        with pytest.raises(AssertionError, match="loaded a model"):
            label_stage.work(ctx, {"ids": []})
        return
    out = label_stage.work(ctx, {"ids": []})
    assert out["total"] == len(rows) and len(out["rows"]) == len(rows)
    assert {r["labeler_model"] for r in out["rows"]} == {SCRIPTED}
    assert all(len(r["desired"]) == len(r["undesired"]) == 2 for r in out["rows"])


def test_label_views_needs_no_llm_for_the_scripted_scheme(selfplay):
    _, row, view = _instances(selfplay, "avalon", [0])[0]
    [labels] = label_views(None, [view], LabelSettings(scheme="scripted"), [1])
    assert labels.complete(3) and labels.attempts == 0


def test_the_default_run_labels_by_script_and_the_paper_by_llm():
    assert load_params(ROOT / "params.yaml").label.scheme == SCRIPTED
    paper = yaml.safe_load((ROOT / "configs/paper.yaml").read_text())
    assert paper["label"]["scheme"] in ("json", "per_response")
