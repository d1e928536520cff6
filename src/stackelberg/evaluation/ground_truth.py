"""The held-out Refiners against ground truth: the exact follower (Werewolf, Avalon, ONUW).

Where the held-out instances' followers have an exact model (``persuasion.exact_follower``)
and their responses are the scripted labeler's, the evaluate stage scores every held-out
candidate under it (``scored["exact"]``, records as ``held_out.candidate_record`` writes
them) and finds each instance's Stackelberg optimum (``optimum_record``). All rewards here
are the terms alone (``content``: no length or format penalty). From those records:

- the headroom: the optimum's reward minus the base speech's, per instance;
- per Refiner (the untrained one's first n, the Measurer's pick of each best of k among the
  untrained one's candidates, the trained one, the extra ones): the exact reward it gains
  over the base speech, and that gain as a share of the headroom (a ratio of means over
  instances, bootstrap 95% interval);
- per model of the follower (the Measurer unless it is the exact follower itself, the
  unseen follower where it scored): how well
  it ranks an instance's candidates as the exact follower does, over the instances where
  the exact follower does not score all candidates alike: the rank correlation within an
  instance (where the model does not either), how often its best
  candidate is an exact best one, and the exact gain of its pick over the instance's mean
  candidate as a share of the exact best candidate's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from scipy.stats import spearmanr

from stackelberg.evaluation.held_out import (
    best_of_choice,
    instance_means,
    interval,
    refiner_label,
)
from stackelberg.evaluation.stats import bootstrap_ratio_ci
from stackelberg.persuasion.reward import best_index

#: the groups of a scored follower's records, besides its extra Refiners'
GROUPS = ("pool", "after")


def optimum_record(speech: str, reward: float, base: float, speeches: int) -> dict[str, Any]:
    """One instance's optimum as metrics keep it (``persuasion.exact_follower.Optimum``)."""
    return {"speech": speech, "reward": reward, "base": base, "speeches": speeches}


def refiner_rewards(scored: Mapping[str, Any], n: int, ks: Sequence[int]) -> dict[str, list[float]]:
    """Per Refiner, each instance's mean exact reward (terms): "before" (the untrained
    Refiner's first ``n``), "best_of_K" (the Measurer's pick among its first K), "after",
    and the extra Refiners."""
    exact = scored["exact"]
    out = {"before": instance_means([c[:n] for c in exact["pool"]], "content")}
    for k in ks:
        picks = best_of_choice(scored["measurer"]["pool"], k)
        out[f"best_of_{k}"] = [c[i]["content"] for c, i in zip(exact["pool"], picks, strict=True)]
    out["after"] = instance_means(exact["after"], "content")
    for name, groups in exact.get("extra", {}).items():
        out[name] = instance_means(groups, "content")
    return out


def _paired(model: Mapping[str, Any], exact: Mapping[str, Any]) -> list[list[tuple[float, float]]]:
    """Per instance, (model's terms, exact terms) of every candidate both scored."""
    groups = [(model[g], exact[g]) for g in GROUPS]
    groups += [(c, exact["extra"][r]) for r, c in model.get("extra", {}).items()]
    n = len(exact["pool"])
    out: list[list[tuple[float, float]]] = [[] for _ in range(n)]
    for m_groups, e_groups in groups:
        for i, (m_cands, e_cands) in enumerate(zip(m_groups, e_groups, strict=True)):
            out[i] += [
                (m["content"], e["content"])
                for m, e in zip(m_cands, e_cands, strict=False)
                if m is not None
            ]
    return out


def rank_agreement(
    instances: Sequence[Sequence[tuple[float, float]]], resamples: int, seed: int
) -> dict[str, Any]:
    """How well a model of the follower ranks each instance's speeches as the exact
    follower does: ``instances`` holds, per instance, (model's terms, exact terms) of each
    speech; only the instances where the exact follower does not score them all alike count
    (module docstring)."""
    rhos, same, picked, best = [], [], [], []
    for pairs in instances:
        m, e = [p[0] for p in pairs], [p[1] for p in pairs]
        if len(set(e)) < 2:  # the follower is indifferent: nothing to rank or pick
            continue
        if len(set(m)) > 1:
            rhos.append(float(spearmanr(m, e).statistic))
        pick = best_index(m)
        mean = sum(e) / len(e)
        same.append(float(e[pick] == max(e)))
        picked.append(e[pick] - mean)
        best.append(max(e) - mean)
    return {
        "instances": len(same),
        "rank_correlation": interval(rhos, resamples, seed),
        "same_best": interval(same, resamples, seed),
        "pick_share": bootstrap_ratio_ci(picked, best, resamples, seed).to_dict(),
    }


def validity(
    model: Mapping[str, Any], exact: Mapping[str, Any], resamples: int, seed: int
) -> dict[str, Any]:
    """``rank_agreement`` over each instance's held-out candidates that both scored."""
    pairs = _paired(model, exact)
    return rank_agreement(pairs, resamples, seed) | {"candidates": sum(map(len, pairs))}


def without_nan(value: Any) -> Any:
    """``value`` with every NaN as None (metrics.json is strict JSON)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: without_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_nan(v) for v in value]
    return value


#: held-out instances shown side by side
EXAMPLES = 5


def examples(
    rows: Sequence[Mapping[str, Any]],
    exact: Mapping[str, Any],
    optima: Sequence[Mapping[str, Any]],
    count: int,
) -> list[dict[str, Any]]:
    """The first ``count`` held-out instances: the base speech, the untrained and trained
    Refiners' first candidates (and each extra Refiner's, under its report label), the
    optimum, each with its exact reward (terms)."""
    out = []
    for i, (row, best) in enumerate(list(zip(rows, optima, strict=True))[:count]):
        said = {"untrained": exact["pool"][i][0], "trained": exact["after"][i][0]}
        said |= {refiner_label(n): groups[i][0] for n, groups in exact.get("extra", {}).items()}
        out.append(
            {
                "base": row["base_utterance"],
                "base_reward": best["base"],
                **{name: {"speech": c["text"], "reward": c["content"]} for name, c in said.items()},
                "optimum": best["speech"],
                "optimum_reward": best["reward"],
                "headroom": best["reward"] - best["base"],
            }
        )
    return out


def ground_truth_summary(
    rows: Sequence[Mapping[str, Any]],
    scored: Mapping[str, Any],
    optima: Sequence[Mapping[str, Any]],
    n: int,
    ks: Sequence[int],
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """The metrics.json ``held_out.ground_truth`` entry (module docstring; ``rows``: the
    held-out instances, for the examples' base speeches)."""
    base = [o["base"] for o in optima]
    headroom = [o["reward"] - o["base"] for o in optima]
    refiners = {}
    for name, rewards in refiner_rewards(scored, n, ks).items():
        gain = [r - b for r, b in zip(rewards, base, strict=True)]
        refiners[name] = {
            "reward": interval(rewards, resamples, seed),
            "gain": interval(gain, resamples, seed),
            "share": bootstrap_ratio_ci(gain, headroom, resamples, seed).to_dict(),
        }
    followers = {
        f: {"model": scored.get(f"{f}_model") or f}
        | validity(scored[f], scored["exact"], resamples, seed)
        for f in ("measurer", "unseen")
        if f in scored and scored[f] is not scored["exact"]  # the exact Measurer: itself
    }
    return without_nan(
        {
            "base": interval(base, resamples, seed),
            "optimum": interval([o["reward"] for o in optima], resamples, seed),
            "headroom": interval(headroom, resamples, seed),
            "speeches": sum(o["speeches"] for o in optima) / max(len(optima), 1),
            "refiners": refiners,
            "validity": followers,
            "examples": examples(rows, scored["exact"], optima, EXAMPLES),
        }
    )


def ground_truth_mlflow(stem: str, summary: Mapping[str, Any]) -> dict[str, float]:
    """``STEM/ground_truth/headroom``, ``.../share/REFINER``, ``.../gain/REFINER`` and
    ``.../validity/FOLLOWER/{rank_correlation,same_best,pick_share}`` (estimates)."""
    out: dict[str, float] = {}
    root = f"{stem}/ground_truth"
    if summary["headroom"].get("n") and summary["headroom"]["estimate"] is not None:
        out[f"{root}/headroom"] = float(summary["headroom"]["estimate"])
    for name, cells in summary["refiners"].items():
        for key in ("share", "gain"):
            if cells[key].get("n") and cells[key]["estimate"] is not None:
                out[f"{root}/{key}/{name}"] = float(cells[key]["estimate"])
    for follower, cells in summary["validity"].items():
        for key in ("rank_correlation", "same_best", "pick_share"):
            part = cells[key]
            if part.get("n") and part["estimate"] is not None:
                out[f"{root}/validity/{follower}/{key}"] = float(part["estimate"])
    return out
