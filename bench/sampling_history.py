"""Do a request's samples depend on the calls a backend made before it? A check.

    python bench/sampling_history.py [--game werewolf] [--instances 8] [--n 2]

The untrained Refiner as it plays (``params.yaml``'s profile, on the embedded model) samples
the same seeded requests four times in one process: first, then after unrelated requests,
then from a second backend, then again back to back, then after clearing the backend's
prefix store (the prompt blocks earlier calls stored). Prints how many of the samples match
the first call's, and the later calls' among themselves. A comparison of two Refiners that
reuses one backend is fair only if these match.
"""

from __future__ import annotations

import argparse
import sys

import _project_root  # noqa: F401  (the project importable from the root)
from ground_truth import at_least_one, instances

from stackelberg.llm import make_llm
from stackelberg.llm.embedded import ensure_checkpoint
from stackelberg.params import load_params
from stackelberg.persuasion.candidates import sample_candidates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="werewolf", choices=["werewolf", "avalon", "onuw"])
    parser.add_argument("--instances", type=at_least_one, default=8)
    parser.add_argument("--n", type=at_least_one, default=2)
    args = parser.parse_args(argv)
    profile = load_params("params.yaml").refiner_profile(args.game)
    config = profile.model.model_copy(update={"model": str(ensure_checkpoint()), "cache": "off"})
    views = [v for v, _, _ in instances(args.game, "scripted_sampled", 4, args.instances, 10_000)]
    others = [v for v, _, _ in instances(args.game, "scripted_sampled", 6, 24, 0)]
    seeds = list(range(len(views)))
    llm = make_llm(config)

    def texts(backend) -> list[str]:
        drawn = sample_candidates(backend, views, profile, args.n, seeds)
        return [c.utterance for cs in drawn for c in cs]

    first = texts(llm)
    sample_candidates(llm, others, profile, 4, [10**6 + i for i in range(len(others))])
    after = texts(llm)
    second_backend = texts(make_llm(config))
    again = texts(llm)
    llm.clear_prefix_cache()  # the prompt-prefix blocks the earlier calls stored
    cleared = texts(llm)

    def same(a: list[str], b: list[str]) -> str:
        return f"{sum(x == y for x, y in zip(a, b, strict=True))} of {len(a)}"

    print(f"first call vs after other requests: {same(first, after)}")
    print(f"first call vs a second backend: {same(first, second_backend)}")
    print(f"after other requests vs a second backend: {same(after, second_backend)}")
    print(f"after other requests vs again: {same(after, again)}")
    print(f"first call vs after clearing the prefix store: {same(first, cleared)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
