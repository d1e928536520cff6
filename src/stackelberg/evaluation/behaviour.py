"""Behaviour, not just the Measurer's number: after a held-out speech the follower speaks,
and a judge reads whether what it said matches a desired or an undesired response.

The follower samples its next speech as the game's LLM agent would: its own prompt (the
Measurer's follower prompt, ``context.follower_messages``) with the candidate as the
speaker's latest words, its history fitted to its own window, the answer cleaned as a
player's (``prompting.spoken``; an echo of the prompt is no speech). The judge is the
labeler's kind:

- ``label.scheme: scripted``: a rule (``rule_verdict``). The scripted players' parsers read
  the sides a speech takes (``truth``: trusting, suspecting, voting for a player; approving
  a team; agreeing to a goal); a response matches the desired responses when it takes a
  side that one of them takes, on the same subject, and none that an undesired one takes,
  and the reverse.
- an LLM labeler: that model is asked which of the responses, shuffled, says the same as
  the speech (``llm_verdicts``); an answer that names no listed number is unjudged.

Per Refiner the rate is, per instance, the share of its candidates' responses that match a
desired response minus the share that match an undesired one, averaged over instances, with
a bootstrap interval; the trained Refiners' rates are paired with the untrained one's.
Its settings are ``evaluate.behaviour`` (``evaluation.settings.BehaviourSettings``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from stackelberg.agents.prompting import spoken
from stackelberg.evaluation.stats import bootstrap_mean_ci, paired_bootstrap_diff
from stackelberg.llm import GenerateRequest
from stackelberg.persuasion.context import InstanceView, follower_messages
from stackelberg.persuasion.measurer import (
    ensemble_names,
    fitted_follower_lines,
    measurer_backends,
)
from stackelberg.persuasion.truth import truth_of
from stackelberg.progress import progress

#: what a judge reads in a response
DESIRED, UNDESIRED, NEITHER, UNJUDGED = "desired", "undesired", "neither", "unjudged"
VERDICTS = (DESIRED, UNDESIRED, NEITHER, UNJUDGED)
#: the first seed of the followers' responses (each candidate's is this plus its place)
RESPONSE_SEED = 31_337
_NUMBER = re.compile(r"\d+")


def response_requests(
    llm: Any,
    view: InstanceView,
    texts: Sequence[str],
    score: Any,
    room: int,
    settings: Any,
    seed: int,
) -> list[GenerateRequest]:
    """One request per candidate ``texts`` of an instance: the follower's next speech after
    it, ``settings.responses`` samples, seeded ``seed`` plus the candidate's place. The
    history is the one the Measurer's follower reads (``score``), fitted to ``llm``'s window
    with room for the candidate (``room``) and the reply; the same for every candidate."""
    lines, _ = fitted_follower_lines(llm, view, texts, [], score, room, settings.speech_tokens)
    return [
        GenerateRequest(
            follower_messages(view, text, lines),
            n=settings.responses,
            temperature=settings.temperature,
            top_p=settings.top_p,
            max_new_tokens=settings.speech_tokens,
            stop=("\n",),
            seed=seed + j,
        )
        for j, text in enumerate(texts)
    ]


def rule_verdict(
    view: InstanceView, response: str, desired: Sequence[str], undesired: Sequence[str]
) -> str:
    """The scripted labeler's judgement: which responses ``response`` takes a side with,
    by stance and subject as the scripted players' parsers read them (module docstring)."""
    truth = truth_of(view)
    sides = set(truth.read(view, response)) if response else set()
    if not sides:
        return UNJUDGED
    wanted = {side for text in desired for side in truth.read(view, text)}
    unwanted = {side for text in undesired for side in truth.read(view, text)}
    hits_wanted, hits_unwanted = bool(sides & wanted), bool(sides & unwanted)
    if hits_wanted != hits_unwanted:
        return DESIRED if hits_wanted else UNDESIRED
    return NEITHER


def judge_messages(view: InstanceView, response: str, statements: Sequence[str]) -> list[dict]:
    """The LLM judge's prompt: does the follower's speech say the same as one statement?"""
    listed = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
    who = view.follower_name
    return [
        {
            "role": "system",
            "content": "You read what a player said in a game and tell which statement it "
            "agrees with.",
        },
        {
            "role": "user",
            "content": f'{who} said: "{response}"\n\nStatements:\n{listed}\n\nWhich statement '
            f"says the same as {who} (the same stance on the same player or thing)? Answer "
            "with its number only, or 0 if none does.",
        },
    ]


def parse_judgement(answer: str, statements: int) -> int | None:
    """The statement an LLM judge named (1..``statements``), 0 for none, or None when its
    answer names no number in that range (unjudged)."""
    match = _NUMBER.search(answer)
    if match is None:
        return None
    number = int(match.group(0))
    return number if number <= statements else None


def llm_verdicts(
    judge: Any,
    items: Sequence[tuple[InstanceView, str, Sequence[str], Sequence[str]]],
    settings: Any,
    seed: int,
) -> list[str]:
    """An LLM labeler's judgement of each (view, response, desired, undesired): the
    statements shuffled (seeded) so their order tells nothing, greedy answers in one batch;
    an empty response, or an answer that names no statement, is unjudged."""
    asked, requests, keys = [], [], []
    for i, (view, response, desired, undesired) in enumerate(items):
        if not response:
            continue
        statements = [(s, DESIRED) for s in desired] + [(s, UNDESIRED) for s in undesired]
        random.Random(f"judge:{seed}:{i}").shuffle(statements)
        messages = judge_messages(view, response, [s for s, _ in statements])
        asked.append(i)
        keys.append([kind for _, kind in statements])
        requests.append(
            GenerateRequest(
                messages, n=1, temperature=0.0, max_new_tokens=settings.judge_tokens, seed=seed
            )
        )
    out = [UNJUDGED] * len(items)
    answers = judge.run_batch(requests) if requests else []
    for i, kinds, [answer] in zip(asked, keys, answers, strict=True):
        number = parse_judgement(answer, len(kinds))
        out[i] = UNJUDGED if number is None else NEITHER if number == 0 else kinds[number - 1]
    return out


def follower_behaviour(
    follower: Any,
    sampled: Mapping[str, Any],
    groups: Mapping[str, Sequence[Sequence[Any]]],
    score: Any,
    settings: Any,
    judge: Any,
    desc: str,
) -> dict[str, list[list[list[str]]]]:
    """Per Refiner group, per instance, per candidate: the verdicts of the follower's
    responses to it. ``groups``: each Refiner's candidates per instance (``Candidate``);
    ``sampled``: the held-out rows, views and candidate room (``sample_held_out``); ``judge``:
    None for the rule of the scripted labeler, else the LLM labeler's backend."""
    rows, views = sampled["rows"], sampled["views"]
    out: dict[str, list[list[list[str]]]] = {g: [] for g in groups}
    bar = progress(len(rows), desc, "instance")
    for i, (row, view) in enumerate(zip(rows, views, strict=True)):
        cands = [(g, c) for g in groups for c in groups[g][i]]
        texts = score.texts([c.raw for _, c in cands], [c.utterance for _, c in cands])
        seed = RESPONSE_SEED + 1000 * i
        requests = response_requests(follower, view, texts, score, sampled["room"], settings, seed)
        answers = [[spoken(a) for a in texts_] for texts_ in follower.run_batch(requests)]
        flat = [(view, a, row["desired"], row["undesired"]) for answer in answers for a in answer]
        if judge is None:
            verdicts = [rule_verdict(*item) for item in flat]
        else:
            verdicts = llm_verdicts(judge, flat, settings, seed)
        for g in groups:
            out[g].append([])
        for j, (g, _) in enumerate(cands):
            out[g][-1].append(verdicts[j * settings.responses : (j + 1) * settings.responses])
        bar.update(1)
    bar.close()
    return out


def instance_rates(verdicts: Sequence[Sequence[Sequence[str]]]) -> list[float]:
    """Per instance: the share of its responses matching a desired response minus the share
    matching an undesired one."""
    rates = []
    for cands in verdicts:
        flat = [v for responses in cands for v in responses]
        rates.append((flat.count(DESIRED) - flat.count(UNDESIRED)) / len(flat) if flat else 0.0)
    return rates


def behaviour_summary(
    groups: Mapping[str, Sequence[Sequence[Sequence[str]]]],
    resamples: int,
    seed: int,
    baseline: str = "before",
) -> dict[str, Any]:
    """Per Refiner group: its responses, the share of each verdict, the rate (desired minus
    undesired matches) with its bootstrap interval over instances, and, but for
    ``baseline``, its paired difference from the ``baseline`` group's rate."""
    out: dict[str, Any] = {}
    base = instance_rates(groups[baseline]) if baseline in groups else None
    for name, verdicts in groups.items():
        flat = [v for cands in verdicts for responses in cands for v in responses]
        rates = instance_rates(verdicts)
        entry: dict[str, Any] = {
            "responses": len(flat),
            **{v: flat.count(v) / len(flat) if flat else 0.0 for v in VERDICTS},
            "rate": bootstrap_mean_ci(rates, resamples, seed).to_dict(),
        }
        if base is not None and name != baseline:
            entry["diff"] = paired_bootstrap_diff(base, rates, resamples, seed).to_dict()
        out[name] = entry
    return out


def behaviour_followers(
    names: Sequence[str],
    measurer: Any,
    measurer_model: str,
    unseen: tuple[Callable[[], Any], str] | None,
) -> list[tuple[str, str, Callable[[], Any]]]:
    """Who responds, in the order of ``names`` (``BehaviourSettings.followers``), each as
    (key, model, loader): the unseen follower (``unseen``: its loader and model; none without
    one), the Measurer (``measurer_model`` its model), or an ensemble Measurer's members,
    each on its own (``measurer/NAME``)."""
    out: list[tuple[str, str, Callable[[], Any]]] = []
    for name in names:
        if name == "unseen":
            out += [("unseen", unseen[1], unseen[0])] if unseen is not None else []
        elif members := ensemble_names(measurer):
            backends = measurer_backends(measurer)
            out += [
                (f"measurer/{m}", m, lambda llm=llm: llm)
                for m, llm in zip(members, backends, strict=True)
            ]
        else:
            out.append(("measurer", measurer_model, lambda: measurer))
    return out
