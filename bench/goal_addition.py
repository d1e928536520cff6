"""Does a speaker that knows its aims reach the headroom? A probe, no training.

    python bench/goal_addition.py [--games werewolf,onuw,avalon] [--seeds 40] [--limit 300]

The Refiner's prompt holds its view, not the responses it wants (the release's too). Its
aims (the scripted labeler's desired responses, from the speaker's own view) are a function
of that view, but one a 135M model may not compute. This measures what saying them would
buy: on held-out ``scripted_sampled`` games (seeds from 10,000), each instance's base speech
with one desired response added verbatim ("I will vote for Player 2."), scored by the exact
follower (terms only), against the Stackelberg headroom (the optimum over one- and
two-sentence speeches of the grammar). Prints, per game, the mean gain and share of headroom
of: the first desired response added, any one of them (their mean), the best of them (an
oracle over k), and the best grammar addition (the oracle of the addition format).
"""

from __future__ import annotations

import argparse
import statistics

import _project_root  # noqa: F401  (the project importable from the root)
from ground_truth import at_least_one, instances

from stackelberg.persuasion.exact_follower import (
    ExactFollower,
    exact_parts,
    optimum,
    speaker_sentences,
    terms,
)
from stackelberg.persuasion.measurer import ScoreSettings

TEST_SEED = 10_000


def gains(follower, view, desired, undesired, score, speeches: list[str]) -> list[float]:
    """Each speech's exact reward (terms only) minus the base speech's."""
    rewards = [
        terms(p)
        for p in exact_parts(
            follower, view, [view.base_utterance, *speeches], desired, undesired, score
        )
    ]
    return [r - rewards[0] for r in rewards[1:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="werewolf,onuw,avalon")
    parser.add_argument("--seeds", type=at_least_one, default=40, help="held-out games")
    parser.add_argument("--limit", type=at_least_one, default=300, help="instances per game")
    args = parser.parse_args()
    follower, score = ExactFollower(), ScoreSettings()
    rows = []
    for game in args.games.split(","):
        found = instances(
            game, "scripted_sampled", args.seeds, args.limit, TEST_SEED, full_information=False
        )
        cols: dict[str, list[float]] = {
            k: [] for k in ("headroom", "first", "any", "best", "oracle")
        }
        for view, desired, undesired in found:
            base = view.base_utterance
            cols["headroom"].append(optimum(follower, view, desired, undesired, score).headroom)
            said = gains(
                follower, view, desired, undesired, score, [f"{base} {d}" for d in desired]
            )
            cols["first"].append(said[0])
            cols["any"].append(statistics.fmean(said))
            cols["best"].append(max(0.0, *said))
            grammar = [f"{base} {s}" for s in speaker_sentences(view) if s != base]
            cols["oracle"].append(
                max(0.0, *gains(follower, view, desired, undesired, score, grammar))
            )
        head = statistics.fmean(cols["headroom"])
        cells = {k: statistics.fmean(v) for k, v in cols.items()}
        rows.append((game, len(found), head, cells))
    print(
        f"{'game':10} {'n':>4} {'headroom':>9}  "
        + "  ".join(f"{k:>15}" for k in ("first", "any", "best", "oracle"))
    )
    for game, n, head, cells in rows:
        parts = "  ".join(
            f"{cells[k]:+7.2f} ({cells[k] / head:4.0%})" for k in ("first", "any", "best", "oracle")
        )
        print(f"{game:10} {n:>4} {head:9.2f}  {parts}")


if __name__ == "__main__":
    main()
