"""How a Refiner carries over, measured on the same held-out instances as the game's own:

- **to other games** (``joint_comparison``): one Refiner trained on several games' train
  instances (``grpo.joint``, the joint Refiner) next to each game's own Refiner, on every
  game's held-out instances; on a game left out of its training, this is transfer to a game
  it never saw;
- **to the speaker's own view** (``views_comparison``): a Refiner trained on full-information
  intents and one trained on the speaker's own view (``grpo.views``: speaker_only, or
  full_information when that is the game's own), each scored against both views' intents
  (``label.both_views``): the 2x2 information table. The paper labels with every role known,
  which no player has at play time.

Both read the held-out scoring's candidate records (``held_out.candidate_record``): the
Measurer's (``scored["measurer"]``) and, for the views, the same candidates scored against
the other view's intents (``scored["other_view"]``, ``held_out_scoring.score_other_view``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stackelberg.evaluation.held_out import instance_means, interval
from stackelberg.evaluation.stats import paired_bootstrap_diff
from stackelberg.persuasion.intents import VIEWS
from stackelberg.training.grpo_outputs import JOINT_REFINER

#: the untrained Refiner's row of the information table
UNTRAINED = "untrained"


def joint_comparison(
    measurer: Mapping[str, Any],
    joint_records: Sequence[Sequence[Mapping[str, Any]]],
    n: int,
    trained_on: Sequence[str],
    game: str,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """The joint Refiner (its candidate records ``joint_records``, per instance) next to the
    game's own ("after" of ``measurer``, the held-out scoring's records under the Measurer)
    and the untrained one (its first ``n`` candidates): each one's mean
    held-out reward, the paired differences joint minus own and joint minus untrained, the
    games it ``trained_on`` and whether ``game`` was among them."""
    untrained = instance_means([c[:n] for c in measurer["pool"]])
    own = instance_means(measurer["after"])
    joint = instance_means(joint_records)
    return {
        "trained_on": list(trained_on),
        "seen": game in trained_on,
        "untrained": interval(untrained, resamples, seed),
        "own": interval(own, resamples, seed),
        "joint": interval(joint, resamples, seed),
        "joint_minus_own": paired_bootstrap_diff(own, joint, resamples, seed).to_dict(),
        "joint_minus_untrained": paired_bootstrap_diff(untrained, joint, resamples, seed).to_dict(),
    }


def views_comparison(
    scored: Mapping[str, Any],
    n: int,
    own_view: str,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """The 2x2 information table: rows the Refiners by the view they trained on (the game's
    own on ``own_view``, label.full_information's; the other view's when it was trained)
    and the untrained one, columns the view of the intents scored against; each cell the
    mean held-out reward under the Measurer. ``other_minus_own``: per column, the paired
    difference of the two trained Refiners (absent without the other view's)."""
    other_view = next(v for v in VIEWS if v != own_view)
    by_intents = {own_view: scored["measurer"], other_view: scored["other_view"]}

    def means(records: Mapping[str, Any], refiner: str) -> list[float]:
        groups = {UNTRAINED: [c[:n] for c in records["pool"]], own_view: records["after"]}
        return instance_means(groups[refiner] if refiner in groups else records["extra"][refiner])

    refiners = [UNTRAINED, own_view]
    if other_view in scored["measurer"]["extra"]:
        refiners.append(other_view)
    out: dict[str, Any] = {
        "own_view": own_view,
        "cells": {
            refiner: {
                view: interval(means(records, refiner), resamples, seed)
                for view, records in sorted(by_intents.items())
            }
            for refiner in refiners
        },
    }
    if other_view in refiners:
        out["other_minus_own"] = {
            view: paired_bootstrap_diff(
                means(records, own_view), means(records, other_view), resamples, seed
            ).to_dict()
            for view, records in sorted(by_intents.items())
        }
    return out


def transfer_details(
    scored: Mapping[str, Any],
    n: int,
    resamples: int,
    seed: int,
    joint: Sequence[str],
    game: str,
    own_view: str,
) -> dict[str, Any]:
    """The joint Refiner beside the game's own (``joint``: the games it trained on, empty
    without one) and the 2x2 information table (where the other view was scored), as
    metrics.json's ``held_out`` holds them."""
    out: dict[str, Any] = {}
    if joint:
        measurer = scored["measurer"]
        joint_records = measurer["extra"][JOINT_REFINER]
        out["joint"] = joint_comparison(measurer, joint_records, n, joint, game, resamples, seed)
    if "other_view" in scored:
        out["views"] = views_comparison(scored, n, own_view, resamples, seed)
    return out


def transfer_mlflow(game: str, held_out: Mapping[str, Any]) -> dict[str, float]:
    """The comparisons as MLflow metric names (estimates; the intervals stay in
    metrics.json): ``held_out/G/joint/{untrained,own,joint,joint_minus_own,
    joint_minus_untrained}`` and ``held_out/G/views/REFINER/INTENTS``."""
    out: dict[str, float] = {}
    stem = f"held_out/{game}"
    joint = held_out.get("joint") or {}
    for key in ("untrained", "own", "joint", "joint_minus_own", "joint_minus_untrained"):
        if (joint.get(key) or {}).get("n"):
            out[f"{stem}/joint/{key}"] = float(joint[key]["estimate"])
    for refiner, cells in ((held_out.get("views") or {}).get("cells") or {}).items():
        for view, part in cells.items():
            if part.get("n"):
                out[f"{stem}/views/{refiner}/{view}"] = float(part["estimate"])
    return out
