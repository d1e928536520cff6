"""How much of the Stackelberg headroom can a speaker reach from simple features? A ceiling.

    python bench/relational_policy.py [--games werewolf,onuw,avalon] [--view speaker_only]
        [--train-seeds 150] [--test-seeds 40]

A Refiner that reads its prompt can tell its role, which players its planned speech names
(and on which side) and who speaks next. This fits the best policy that sees exactly that,
and nothing of the history: each grammar speech (``grammar_speeches``: one sentence or two)
is written as its *form*, every player replaced by its relation to the instance (F: the
follower, B+ / B-: named by the base speech on the trusted / accused side, O: any other),
and for each key (the speaker's role; whether the base accuses; whether it vouches) the
forms are ranked by their mean exact gain over the base speech on the train instances
(``scripted_sampled`` games from seed 0, labeled by the scripted labeler from ``--view``;
forms seen 3 times or more). On held-out instances (games from seed 10,000) the policy says
its key's best form that the instance has (the mean over the speeches of that form: a named
O is any other player), else the base. The same policy over *additions* (the base speech
whole, then one grammar sentence: ``sample.output_format: addition``) fits the added
sentence's form. Prints, per game, the mean headroom, and the mean exact gain (terms only)
and share of headroom of: the whole-speech policy, the best addition (an oracle: the
ceiling of that format), and the addition policy.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections import defaultdict
from typing import NamedTuple

import _project_root  # noqa: F401  (the project importable from the root)
from ground_truth import at_least_one, instances

from stackelberg.persuasion.exact_follower import (
    ExactFollower,
    exact_parts,
    grammar_speeches,
    speaker_sentences,
    terms,
)
from stackelberg.persuasion.intents import FULL_INFORMATION, SPEAKER_ONLY
from stackelberg.persuasion.measurer import ScoreSettings
from stackelberg.persuasion.truth import truth_of

BASE = "BASE"
TEST_SEED = 10_000
MIN_SEEN = 3


def speech_form(view, speech: str, sides: dict[int, int]) -> str:
    """``speech`` with each player written as its relation to the instance."""

    def relation(match: re.Match) -> str:
        pid = int(match.group(1)) - 1
        if pid == view.follower:
            return "Player<F>"
        return {1: "Player<B+>", -1: "Player<B->"}.get(sides.get(pid, 0), "Player<O>")

    return re.sub(r"Player (\d+)", relation, speech)


class Instance(NamedTuple):
    """One instance's key, each form's mean gain over the base (whole speeches; additions:
    the base with one sentence after it), the headroom and the best addition's gain."""

    key: tuple
    whole: dict[str, float]
    added: dict[str, float]
    headroom: float
    best_addition: float


def mean_by_form(pairs) -> dict[str, float]:
    by_form: dict[str, list[float]] = defaultdict(list, {BASE: [0.0]})
    for form, gain in pairs:
        by_form[form].append(gain)
    return {form: statistics.mean(xs) for form, xs in by_form.items()}


def form_gains(game: str, seeds: int, first: int, full: bool) -> list[Instance]:
    """The instances of ``seeds`` games from seed ``first``, scored under the exact follower."""
    exact, score = ExactFollower(), ScoreSettings()
    out = []
    for view, desired, undesired in instances(game, "scripted_sampled", seeds, 10**9, first, full):
        base = view.base_utterance
        sides = {
            subject[1]: side
            for subject, side in truth_of(view).read(view, base)
            if subject[0] == "player"
        }
        speeches = grammar_speeches(view)
        sentences = speaker_sentences(view)
        said = [base, *speeches, *(f"{base} {s}" for s in sentences)]
        rewards = [terms(p) for p in exact_parts(exact, view, said, desired, undesired, score)]
        gains = [r - rewards[0] for r in rewards[1:]]
        whole, added = gains[: len(speeches)], gains[len(speeches) :]
        key = (
            view.game.players[view.speaker].role,
            any(s < 0 for s in sides.values()),
            any(s > 0 for s in sides.values()),
        )
        out.append(
            Instance(
                key,
                mean_by_form(
                    (speech_form(view, x, sides), g) for x, g in zip(speeches, whole, strict=True)
                ),
                mean_by_form(
                    (speech_form(view, x, sides), g) for x, g in zip(sentences, added, strict=True)
                ),
                max(0.0, *whole),
                max(0.0, *added),
            )
        )
    return out


def policy_gains(train: list[Instance], test: list[Instance], field: str) -> list[float]:
    """The gain on each test instance of the policy fitted on ``train``'s ``field`` forms."""
    seen: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for instance in train:
        for form, gain in getattr(instance, field).items():
            seen[instance.key][form].append(gain)
    ranked = {
        key: sorted(
            (f for f, xs in forms.items() if len(xs) >= MIN_SEEN or f == BASE),
            key=lambda f, forms=forms: -statistics.mean(forms[f]),
        )
        for key, forms in seen.items()
    }
    out = []
    for instance in test:
        forms = getattr(instance, field)
        out.append(forms[next((f for f in ranked.get(instance.key, [BASE]) if f in forms), BASE)])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="werewolf,onuw,avalon")
    parser.add_argument("--view", default=SPEAKER_ONLY, choices=[FULL_INFORMATION, SPEAKER_ONLY])
    parser.add_argument("--train-seeds", type=at_least_one, default=150)
    parser.add_argument("--test-seeds", type=at_least_one, default=40)
    args = parser.parse_args(argv)
    full = args.view == FULL_INFORMATION
    for game in args.games.split(","):
        train = form_gains(game, args.train_seeds, 0, full)
        test = form_gains(game, args.test_seeds, TEST_SEED, full)
        room = statistics.mean(i.headroom for i in test)
        rows = {
            "policy, whole speech": policy_gains(train, test, "whole"),
            "best addition (oracle)": [i.best_addition for i in test],
            "policy, addition": policy_gains(train, test, "added"),
        }
        print(
            f"{game} ({args.view}): train {len(train)}, test {len(test)} instances; "
            f"headroom {room:.2f}"
        )
        for name, gains in rows.items():
            gain = statistics.mean(gains)
            print(f"  {name}: gain {gain:+.2f}, share {gain / room:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
