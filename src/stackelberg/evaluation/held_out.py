"""What the held-out instances show beyond the paired reward of the two Refiners.

- **Terms**: each Refiner's mean held-out reward, and each of the reward's two terms (the
  desired responses' log-probability, and minus the undesired ones'): the paper's ablation
  evaluates every Refiner trained on other terms (``grpo.ablations``) this way.
- **Best of n**, the no-training peer (test-time Stackelberg): the untrained Refiner samples
  n candidates and the Measurer keeps the one it scores highest. It costs n scorings a
  speech at play time; the trained Refiner costs none.
- **An unseen follower**: the same candidates scored by a model the Refiner never trained
  against (the paper's first named limit: the Measurer is not the real follower).
- **Ensemble vs single Measurer**: the Refiner trained against an ensemble Measurer next to
  each member Refiner, trained against one member alone (``grpo.member_refiners``), under
  the ensemble, each member and the unseen follower, which none trained against.
- **Behaviour**: the share of a follower's responses to the candidates that match a desired
  response minus the share that match an undesired one (``behaviour``).
- **What the Refiner learned**: length, parse rate, the length penalty's share of the
  reward, and how much of a candidate repeats the responses it is scored on (word 3-gram
  overlap, verbatim copies): a gain made by copying the desired responses into the speech
  is reward hacking, and the report says so.
- **Ground truth** (``ground_truth``; Werewolf, Avalon, ONUW with scripted labels): every
  candidate under the exact follower, each instance's Stackelberg optimum, the headroom each
  Refiner reaches, and the Measurer held against the exact follower (``ground_truth``).

Every candidate is kept as a plain record (``candidate_record``) so the pipeline's results
stay JSON-ready; the functions here turn records into metrics.json entries.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from stackelberg.evaluation.behaviour import behaviour_summary
from stackelberg.evaluation.stats import bootstrap_mean_ci, paired_bootstrap_diff
from stackelberg.persuasion.best_of import best_index
from stackelberg.persuasion.measurer import MEMBER_REFINER_PREFIX
from stackelberg.training.grpo_outputs import WARM_START_REFINER

#: a candidate record's reward terms: the full reward, the desired responses' term and the
#: undesired responses' term (minus their log-probability: higher is better for both)
TERMS = ("reward", "positive", "negative")
#: word n-grams compared with the responses
NGRAM = 3
_WORD = re.compile(r"[a-z0-9']+")


def candidate_record(text: str, parsed: bool, parts: Any) -> dict[str, Any]:
    """One scored candidate as metrics need it (``parts``: its ``persuasion.reward.RewardParts``,
    not imported: the report reads these records without the method's code; an ensemble
    Measurer's: each member's reward too)."""
    members = {"members": list(parts.member_rewards)} if parts.member_rewards else {}
    return members | {
        "text": text,
        "parsed": bool(parsed),
        "words": parts.words,
        "reward": parts.reward,
        "positive": parts.positive,
        "negative": -parts.negative,
        # the Measurer's terms alone (clamped), before the length and format penalties
        "content": parts.clamped,
        "penalty": parts.length_penalty,
        "format_penalty": parts.format_penalty,
    }


def words_of(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def ngrams(words: Sequence[str], n: int = NGRAM) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def ngram_overlap(text: str, responses: Sequence[str]) -> float:
    """The share of the text's word 3-grams that occur in one of the responses (0 for a
    text shorter than a 3-gram)."""
    own = ngrams(words_of(text))
    if not own:
        return 0.0
    theirs = set().union(*(ngrams(words_of(r)) for r in responses)) if responses else set()
    return len(own & theirs) / len(own)


def contains_verbatim(text: str, responses: Sequence[str]) -> bool:
    """Whether the text holds one of the responses word for word (case and punctuation
    aside)."""
    padded = f" {' '.join(words_of(text))} "
    return any(
        (w := " ".join(words_of(r))) and f" {w} " in padded for r in responses if words_of(r)
    )


def instance_means(
    groups: Sequence[Sequence[Mapping[str, Any]]], key: str = "reward"
) -> list[float]:
    """Per instance, the mean of ``key`` over its candidates."""
    return [sum(c[key] for c in cands) / len(cands) for cands in groups]


def interval(values: Sequence[float], resamples: int, seed: int) -> dict[str, Any]:
    return bootstrap_mean_ci(values, resamples, seed).to_dict()


def term_summary(
    groups: Sequence[Sequence[Mapping[str, Any]]], resamples: int, seed: int
) -> dict[str, dict]:
    """Each term's mean over instances (each instance the mean of its candidates), with a
    bootstrap interval."""
    return {t: interval(instance_means(groups, t), resamples, seed) for t in TERMS}


def best_of_choice(pool: Sequence[Sequence[Mapping[str, Any]]], k: int) -> list[int]:
    """Per instance, the index (among its first ``k`` candidates) the Measurer scores
    highest; the first wins a tie."""
    return [best_index([c["reward"] for c in cands[:k]]) for cands in pool]


def best_of_summary(
    pool: Sequence[Sequence[Mapping[str, Any]]],
    trained: Sequence[Sequence[Mapping[str, Any]]],
    ks: Sequence[int],
    unseen_pool: Sequence[Sequence[Mapping[str, Any]]] | None,
    unseen_trained: Sequence[Sequence[Mapping[str, Any]]] | None,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """Best of k (for each k) next to the trained Refiner's single sample, under the
    Measurer and (when given) the unseen follower: the chosen candidate's reward per
    instance, its mean and interval, the paired difference trained minus best-of-k, and the
    Measurer scorings each spends per speech at play time."""
    followers = {"measurer": (pool, trained)}
    if unseen_pool is not None and unseen_trained is not None:
        followers["unseen"] = (unseen_pool, unseen_trained)
    rows: dict[str, Any] = {"trained": {"scorings_per_speech": 0}}
    for name, (_, t) in followers.items():
        rows["trained"][name] = interval([c[0]["reward"] for c in t], resamples, seed)
    for k in ks:
        chosen = best_of_choice(pool, k)
        row: dict[str, Any] = {"scorings_per_speech": k}
        for name, (p, t) in followers.items():
            picked = [cands[i]["reward"] for cands, i in zip(p, chosen, strict=True)]
            single = [cands[0]["reward"] for cands in t]
            row[name] = interval(picked, resamples, seed)
            row[f"{name}_trained_minus"] = paired_bootstrap_diff(
                picked, single, resamples, seed
            ).to_dict()
        rows[f"best_of_{k}"] = row
    return rows


def saying(text: str, base: str) -> str:
    """What a speech says beyond its planned speech: the addition of the addition format
    ("" where it adds nothing), else the whole speech.

    >>> saying("I trust Player 2. I suspect Player 5.", "I trust Player 2.")
    'I suspect Player 5.'
    """
    return text[len(base) :].strip() if text.startswith(base) else text


def learned_summary(
    groups: Sequence[Sequence[Mapping[str, Any]]],
    desired: Sequence[Sequence[str]],
    undesired: Sequence[Sequence[str]],
    bases: Sequence[str],
) -> dict[str, Any]:
    """What a Refiner's candidates look like: mean words, parse rate, the length penalty's
    share of the reward's magnitude, their copying of the responses (mean 3-gram
    overlap; share holding a response verbatim), desired and undesired apart, and what
    they say beyond the planned speech (``saying``): how many distinct sayings, and the
    most frequent one with its share (a gain that rests on one phrase said everywhere
    shows here)."""
    flat = [
        (c, d, u) for cands, d, u in zip(groups, desired, undesired, strict=True) for c in cands
    ]
    n = len(flat)
    if not n:
        return {}
    said = Counter(
        saying(c["text"], base) for cands, base in zip(groups, bases, strict=True) for c in cands
    )
    top, top_count = said.most_common(1)[0]
    magnitude = sum(
        abs(c["content"]) + abs(c["penalty"]) + abs(c["format_penalty"]) for c, _, _ in flat
    )
    return {
        "candidates": n,
        "words": sum(c["words"] for c, _, _ in flat) / n,
        "parse_rate": sum(c["parsed"] for c, _, _ in flat) / n,
        "penalty_share": sum(abs(c["penalty"]) for c, _, _ in flat) / magnitude
        if magnitude
        else 0.0,
        "overlap_desired": sum(ngram_overlap(c["text"], d) for c, d, _ in flat) / n,
        "overlap_undesired": sum(ngram_overlap(c["text"], u) for c, _, u in flat) / n,
        "verbatim_desired": sum(contains_verbatim(c["text"], d) for c, d, _ in flat) / n,
        "verbatim_undesired": sum(contains_verbatim(c["text"], u) for c, _, u in flat) / n,
        "distinct_sayings": len(said),
        "top_saying": top,
        "top_saying_share": top_count / n,
    }


def copying_verdict(before: Mapping[str, float], after: Mapping[str, float]) -> str:
    """One plain sentence on whether training made the Refiner copy the desired responses."""
    if not before or not after:
        return "no candidates to compare"
    gain = after["overlap_desired"] - before["overlap_desired"]
    verbatim = after["verbatim_desired"] - before["verbatim_desired"]
    if verbatim > 0.05 or gain > 0.1:
        return (
            "the trained Refiner copies the desired responses into its speech more than the "
            f"untrained one (3-gram overlap {gain:+.2f}, verbatim share {verbatim:+.2f}): "
            "part of its reward gain is copying, reward hacking"
        )
    return (
        "no sign of copying the desired responses (3-gram overlap "
        f"{gain:+.2f}, verbatim share {verbatim:+.2f})"
    )


def examples(
    rows: Sequence[Mapping[str, Any]],
    before: Sequence[Sequence[Mapping[str, Any]]],
    after: Sequence[Sequence[Mapping[str, Any]]],
    n: int,
) -> list[dict[str, Any]]:
    """The first ``n`` held-out instances side by side: the base speech, the untrained and
    the trained Refiner's first candidate, and their rewards."""
    return [
        {
            "instance_id": row["instance_id"],
            "base": row["base_utterance"],
            "desired": list(row["desired"]),
            "before": b[0]["text"],
            "before_reward": b[0]["reward"],
            "after": a[0]["text"],
            "after_reward": a[0]["reward"],
        }
        for row, b, a in list(zip(rows, before, after, strict=True))[:n]
    ]


def held_out_details(
    rows: Sequence[Mapping[str, Any]],
    scored: Mapping[str, Any],
    n: int,
    ks: Sequence[int],
    n_examples: int,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """The metrics.json ``held_out`` entry from the held-out scoring's records:
    ``scored["measurer"]`` (and ``scored["unseen"]``, when an unseen follower scored) map
    ``pool`` (the untrained Refiner's candidates, its first ``n`` the "before" group) and
    ``after`` to per-instance candidate records, and ``extra`` (the Refiners trained beside
    the game's own: the ablation's, the other view's, the member Refiners, the joint one)
    each to its own;
    ``scored["members"]`` names an ensemble Measurer's members, ``scored["behaviour"]``
    holds the followers' judged responses."""
    measurer, unseen = scored["measurer"], scored.get("unseen")
    groups = {"before": [c[:n] for c in measurer["pool"]], "after": measurer["after"]}
    desired = [r["desired"] for r in rows]
    undesired = [r["undesired"] for r in rows]
    bases = [r["base_utterance"] for r in rows]
    learned = {name: learned_summary(g, desired, undesired, bases) for name, g in groups.items()}
    out: dict[str, Any] = {
        "n_instances": len(rows),
        "candidates_per_refiner": n,
        "terms": {
            name: term_summary(g, resamples, seed)
            for name, g in {**groups, **measurer.get("extra", {})}.items()
        },
        "learned": learned,
        "copying": copying_verdict(learned["before"], learned["after"]),
        "examples": examples(rows, groups["before"], groups["after"], n_examples),
        "best_of": best_of_summary(
            measurer["pool"],
            measurer["after"],
            ks,
            unseen["pool"] if unseen else None,
            unseen["after"] if unseen else None,
            resamples,
            seed,
        )
        if ks
        else {},
    }
    # trained minus untrained in the Measurer's terms alone: the part of the held-out gain
    # that is what the follower would answer, not the penalties for length and format
    out["content"] = {"measurer": content_diff(measurer, n, resamples, seed)}
    if unseen:
        before = instance_means([c[:n] for c in unseen["pool"]])
        after = instance_means(unseen["after"])
        out["unseen"] = {
            "model": scored["unseen_model"],
            "before": interval(before, resamples, seed),
            "after": interval(after, resamples, seed),
            "diff": paired_bootstrap_diff(before, after, resamples, seed).to_dict(),
        }
        out["content"]["unseen"] = content_diff(unseen, n, resamples, seed)
    out["refiner_labels"] = {
        name: refiner_label(name) for name in ["before", "after", *measurer.get("extra", {})]
    }
    if scored.get("behaviour"):
        out["behaviour"] = {
            key: {
                "model": b["model"],
                "refiners": behaviour_summary(b["verdicts"], resamples, seed),
            }
            for key, b in scored["behaviour"].items()
        }
    if any(r.startswith(MEMBER_REFINER_PREFIX) for r in measurer.get("extra", {})):
        out["ensemble"] = ensemble_comparison(scored, n, resamples, seed)
    return out


def refiner_label(name: str) -> str:
    """How the report names a held-out Refiner: untrained, trained (against the Measurer;
    an ensemble: all of it), a member Refiner, trained against one ensemble member alone
    (``vs_NAME``), or trained on other reward terms or view, or the joint Refiner, or the
    warm start before GRPO."""
    if name in ("before", "after"):
        return "untrained" if name == "before" else "trained"
    if name == WARM_START_REFINER:
        return "warm start alone"
    member = name.removeprefix(MEMBER_REFINER_PREFIX)
    return f"trained against {member} alone" if member != name else f"trained, {name}"


def ensemble_comparison(
    scored: Mapping[str, Any], n: int, resamples: int, seed: int
) -> dict[str, Any]:
    """The Refiner trained against the whole ensemble Measurer ("after") next to each
    trained against one member alone (the member Refiners, ``vs_NAME``) and the untrained one
    ("before"), on the same held-out instances: each one's mean reward under the ensemble,
    each member and the unseen follower, and the paired difference "after" minus each
    member-trained Refiner under each."""
    measurer, unseen = scored["measurer"], scored.get("unseen")
    # follower -> (records by Refiner, a candidate's reward under it)
    followers: dict[str, tuple[Mapping[str, Any], Any]] = {
        "ensemble": (measurer, lambda c: c["reward"])
    }
    for i, name in enumerate(scored.get("members") or []):
        followers[name] = (measurer, lambda c, i=i: c["members"][i])
    if unseen:
        followers["unseen"] = (unseen, lambda c: c["reward"])
    singles = [r for r in measurer["extra"] if r.startswith(MEMBER_REFINER_PREFIX)]

    def means(records: Mapping[str, Any], refiner: str, reward) -> list[float]:
        groups = {"before": [c[:n] for c in records["pool"]], "after": records["after"]}
        cands = groups[refiner] if refiner in groups else records["extra"][refiner]
        return [sum(reward(c) for c in cs) / len(cs) for cs in cands]

    refiners = ["before", "after", *singles]
    return {
        "members": list(scored.get("members") or []),
        "unseen_model": scored.get("unseen_model"),
        "refiners": {
            r: {
                f: interval(means(rec, r, get), resamples, seed)
                for f, (rec, get) in followers.items()
            }
            for r in refiners
        },
        "diff": {
            single: {
                f: paired_bootstrap_diff(
                    means(rec, single, get), means(rec, "after", get), resamples, seed
                ).to_dict()
                for f, (rec, get) in followers.items()
            }
            for single in singles
        },
    }


def content_diff(scored: Mapping[str, Any], n: int, resamples: int, seed: int) -> dict:
    """The paired difference, trained minus untrained Refiner (its first ``n`` candidates),
    of the per-instance mean of the Measurer's terms without the penalties."""
    before = instance_means([c[:n] for c in scored["pool"]], "content")
    after = instance_means(scored["after"], "content")
    return paired_bootstrap_diff(before, after, resamples, seed).to_dict()


def held_out_mlflow(game: str, details: Mapping[str, Any]) -> dict[str, float]:
    """The held-out details as MLflow metric names: ``held_out/G/terms/REFINER/TERM``,
    ``held_out/G/best_of/ROW/FOLLOWER``, ``held_out/G/unseen/{before,after,diff}``,
    ``held_out/G/content_diff/FOLLOWER``, ``held_out/G/learned/REFINER/KEY``,
    ``held_out/G/ensemble/REFINER/FOLLOWER`` and ``held_out/G/behaviour/FOLLOWER/REFINER``
    (the rate) (estimates; the intervals stay in metrics.json)."""
    out: dict[str, float] = {}
    stem = f"held_out/{game}"
    for refiner, terms in (details.get("terms") or {}).items():
        for term, part in terms.items():
            if part.get("n"):
                out[f"{stem}/terms/{refiner}/{term}"] = float(part["estimate"])
    for row, cells in (details.get("best_of") or {}).items():
        for follower, part in cells.items():
            if isinstance(part, dict) and part.get("n"):
                out[f"{stem}/best_of/{row}/{follower}"] = float(part["estimate"])
    for key in ("before", "after", "diff"):
        part = (details.get("unseen") or {}).get(key)
        if part and part.get("n"):
            out[f"{stem}/unseen/{key}"] = float(part["estimate"])
    for follower, part in (details.get("content") or {}).items():
        if part.get("n"):
            out[f"{stem}/content_diff/{follower}"] = float(part["estimate"])
    for refiner, values in (details.get("learned") or {}).items():
        for key, value in values.items():
            if isinstance(value, int | float):  # not the top saying's words
                out[f"{stem}/learned/{refiner}/{key}"] = float(value)
    for refiner, cells in ((details.get("ensemble") or {}).get("refiners") or {}).items():
        for follower, part in cells.items():
            if part.get("n"):
                out[f"{stem}/ensemble/{refiner}/{follower}"] = float(part["estimate"])
    for follower, entry in (details.get("behaviour") or {}).items():
        for refiner, summary in entry["refiners"].items():
            if summary["rate"].get("n"):
                out[f"{stem}/behaviour/{follower}/{refiner}"] = float(summary["rate"]["estimate"])
    return out
