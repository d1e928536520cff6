"""Does a supervised warm start teach the embedded Refiner content? A probe for the 135M model.

    python bench/warm_start.py [--game werewolf] [--train-seeds 24] [--test-seeds 8]
        [--train 96] [--test 24] [--epochs 3] [--learning-rate 2e-4] [--n 2]
        [--view full_information|speaker_only] [--output-format speech|addition]
        [--target optimum|own-best|best-addition]
        [--samples 8] [--out F] [--keep-adapter DIR | --adapter DIR]

Instances are the speech turns of ``scripted_sampled`` games labeled by the scripted labeler
(k=3, from ``--view``: full information as ``bench/ground_truth.py`` takes them, or the
speaker's own); the train games' seeds start at 0, the test games' at 10,000. Each train
instance's Stackelberg optimum under the exact follower (terms only; with ``--target
best-addition``, the one sentence whose addition after the base scores best, for
``--output-format addition``; with ``--target own-best``, rejection sampling: the best under the exact follower of ``--samples`` completions of the
untrained Refiner as it runs, where it parsed and beats the base speech, else the base
speech itself) becomes the completion of the Refiner's own prompt (the profile
``params.yaml`` builds: the prompt the pipeline samples, trains and plays with). A LoRA
(rank 16) on the embedded base is fitted to those completions with TRL's ``SFTTrainer``.
On the test instances the untrained and the warm-started Refiner then each sample ``--n``
candidates as they run (the profile's sampling, int8 as in play), scored under the exact
follower. Prints, per Refiner: the mean exact gain over the base speech, its share of the
headroom (optimum - base; ratio of means with a bootstrap 95% interval), the parse rate, the
distinct speeches and the share of candidates that are exactly an optimum speech of the
train set (copying one memorized sentence is not learning content).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _project_root  # noqa: F401  (the project importable from the root)
from ground_truth import instances

from stackelberg.evaluation.stats import bootstrap_mean_ci, bootstrap_ratio_ci
from stackelberg.llm import make_llm
from stackelberg.llm.embedded import ensure_checkpoint
from stackelberg.params import load_params
from stackelberg.persuasion.candidates import refiner_prompt, sample_candidates
from stackelberg.persuasion.exact_follower import (
    ExactFollower,
    exact_parts,
    optimum,
    terms,
)
from stackelberg.persuasion.grammar_targets import grammar_targets
from stackelberg.persuasion.intents import FULL_INFORMATION, SPEAKER_ONLY
from stackelberg.persuasion.measurer import ScoreSettings
from stackelberg.persuasion.reward import best_index
from stackelberg.persuasion.truth import truth_of
from stackelberg.training import GRPOSettings
from stackelberg.training.trl_bridge import lora_config
from stackelberg.training.warm_start import WarmStartSettings, fit_warm_start

TEST_SEED = 10_000
#: the request seeds of the train instances' own-best samples (the test's start at 0)
TRAIN_SEED = 1_000_000


def best_of(exact: ExactFollower, view, speeches, desired, undesired, score) -> int:
    """The index of the speech the exact follower rewards most (terms only; ties: the first)."""
    parts = exact_parts(exact, view, speeches, desired, undesired, score)
    return best_index([terms(p) for p in parts])


def own_best(llm, exact: ExactFollower, rows, profile, samples: int, score) -> list[str]:
    """Per instance: the best parsed sample of the untrained Refiner under the exact
    follower where it beats the base speech, else the base speech (rejection sampling)."""
    began = time.perf_counter()
    views = [v for v, _, _ in rows]
    drawn = sample_candidates(
        llm, views, profile, samples, [TRAIN_SEED + i for i in range(len(views))]
    )
    targets, beat = [], 0
    for (view, d, u), cands in zip(rows, drawn, strict=True):
        speeches = [view.base_utterance, *(c.utterance for c in cands if c.parsed)]
        best = best_of(exact, view, speeches, d, u, score)
        beat += best > 0
        targets.append(speeches[best])
    print(
        json.dumps(
            {
                "own_best_samples": samples,
                "beats_base_share": beat / len(rows),
                "sampling_s": round(time.perf_counter() - began, 1),
            }
        ),
        flush=True,
    )
    return targets


def train_targets(args, llm, exact, train, profile, score) -> list[str]:
    """Each train instance's completion under ``--target``."""
    if args.target == "optimum":
        return [optimum(exact, v, d, u, score).speech for v, d, u in train]
    if args.target == "best-addition":  # the warm_start stage's targets (source: grammar)
        rows = [{"desired": d, "undesired": u} for _, d, u in train]
        views = [v for v, _, _ in train]
        return [ts[0].completion for ts in grammar_targets(exact, rows, views, profile, score)]
    return own_best(llm, exact, train, profile, args.samples, score)


def warm_start(base: Path, chats: list[dict], out: Path, epochs: float, lr: float) -> None:
    """Fit the warm_start stage's LoRA (GRPO's rank) on (prompt, target) chats into
    ``out``/adapter, in float32."""
    settings = WarmStartSettings(source="grammar", epochs=epochs, learning_rate=lr)
    fit = fit_warm_start(base, chats, settings, out, lora=lora_config(GRPOSettings()), bf16=False)
    print(json.dumps({f"sft_{k}": v for k, v in fit.items()}), flush=True)


def emit(out: Path | None, row: dict) -> None:
    """Print a result line, and append it to ``out`` as it comes."""
    line = json.dumps(row)
    print(line, flush=True)
    if out is not None:
        with out.open("a") as f:
            f.write(line + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="werewolf", choices=["werewolf", "avalon", "onuw"])
    parser.add_argument("--train-seeds", type=int, default=24)
    parser.add_argument("--test-seeds", type=int, default=8)
    parser.add_argument("--train", type=int, default=96, help="train instances at most")
    parser.add_argument("--test", type=int, default=24, help="test instances at most")
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--n", type=int, default=2, help="candidates per test instance")
    parser.add_argument(
        "--view", default=FULL_INFORMATION, choices=[FULL_INFORMATION, SPEAKER_ONLY]
    )
    parser.add_argument(
        "--target",
        default="optimum",
        choices=["optimum", "own-best", "best-addition"],
    )
    parser.add_argument(
        "--output-format",
        choices=["speech", "addition"],
        help="the Refiner's output format (default: params.yaml's sample.output_format)",
    )
    parser.add_argument("--samples", type=int, default=8, help="own-best: samples per instance")
    parser.add_argument("--out", type=Path, help="also write the results as JSON lines here")
    parser.add_argument("--keep-adapter", type=Path, help="copy the warm-start adapter here")
    parser.add_argument(
        "--adapter", type=Path, help="evaluate this kept adapter instead of fitting one"
    )
    args = parser.parse_args(argv)
    if min(args.train_seeds, args.test_seeds, args.train, args.test, args.n) < 1:
        print("warm_start: seeds, instances and --n must be at least 1", file=sys.stderr)
        return 2
    start = time.perf_counter()
    profile = load_params("params.yaml").refiner_profile(args.game)
    if args.output_format:
        style = profile.style.model_copy(update={"output_format": args.output_format})
        profile = dataclasses.replace(profile, style=style)
    base = ensure_checkpoint()
    untrained = profile.model.model_copy(update={"model": str(base), "cache": "off"})
    exact, score = ExactFollower(), ScoreSettings()
    full = args.view == FULL_INFORMATION
    train = instances(args.game, "scripted_sampled", args.train_seeds, args.train, 0, full)
    test = instances(args.game, "scripted_sampled", args.test_seeds, args.test, TEST_SEED, full)
    llm = make_llm(untrained)
    views = [v for v, _, _ in test]
    seeds = list(range(len(views)))
    with tempfile.TemporaryDirectory() as tmp:
        if args.adapter:  # evaluate a kept adapter: no train targets, no fitting
            targets, adapter = [], args.adapter
        else:
            targets = train_targets(args, llm, exact, train, profile, score)
            rows = [
                {
                    "prompt": refiner_prompt(llm, v, profile),
                    "completion": [{"role": "assistant", "content": speech}],
                }
                for (v, _, _), speech in zip(train, targets, strict=True)
            ]
            warm_start(base, rows, Path(tmp), args.epochs, args.learning_rate)
            adapter = Path(tmp) / "adapter"
            if args.keep_adapter:
                shutil.copytree(adapter, args.keep_adapter, dirs_exist_ok=True)
        trained = untrained.model_copy(update={"adapter": str(adapter)})
        sampled = {
            "untrained": sample_candidates(llm, views, profile, args.n, seeds),
            "warm start": sample_candidates(make_llm(trained), views, profile, args.n, seeds),
        }
    optima = [optimum(exact, v, d, u, score) for v, d, u in test]
    headroom = [o.reward - o.base_reward for o in optima]
    memorized = set(targets)
    gains_of = {}
    for name, cands in sampled.items():
        gains, best_of_n, parsed, texts = [], [], [], []
        silent, silent_gains, spoken_gains = 0, [], []
        for (view, d, u), cs, best in zip(test, cands, optima, strict=True):
            parts = exact_parts(exact, view, [c.utterance for c in cs], d, u, score)
            for c, part in zip(cs, parts, strict=True):  # a speech no listener reads a side from
                quiet = not truth_of(view).read(view, c.utterance)
                silent += quiet
                (silent_gains if quiet else spoken_gains).append(terms(part) - best.base_reward)
            gains.append(sum(terms(p) for p in parts) / len(parts) - best.base_reward)
            best_of_n.append(max(terms(p) for p in parts) - best.base_reward)
            parsed += [c.parsed for c in cs]
            texts += [c.utterance for c in cs]
        gains_of[name] = gains
        share = dataclasses.asdict(bootstrap_ratio_ci(gains, headroom, 2000, 0))
        emit(
            args.out,
            {
                "refiner": name,
                "view": args.view,
                "target": args.target,
                "train_instances": len(train),
                "game": args.game,
                "test_instances": len(test),
                "mean_gain": sum(gains) / len(gains),
                "mean_headroom": sum(headroom) / len(headroom),
                "share_of_headroom": share,
                f"best_of_{args.n}_share": dataclasses.asdict(
                    bootstrap_ratio_ci(best_of_n, headroom, 2000, 0)
                ),
                "parse_rate": sum(parsed) / len(parsed),
                "distinct_speeches": len(set(texts)),
                "candidates": len(texts),
                "memorized_share": (
                    sum(t in memorized for t in texts) / len(texts) if memorized else None
                ),
                "silent_share": silent / len(texts),
                "mean_gain_silent": statistics.mean(silent_gains) if silent_gains else None,
                "mean_gain_speaking": statistics.mean(spoken_gains) if spoken_gains else None,
                "base_copied_share": sum(
                    c.utterance == v.base_utterance
                    for (v, _, _), cs in zip(test, cands, strict=True)
                    for c in cs
                )
                / len(texts),
                "examples": texts[:6],
            },
        )
    paired = [w - u for w, u in zip(gains_of["warm start"], gains_of["untrained"], strict=True)]
    emit(
        args.out,
        {"warm_start_minus_untrained": dataclasses.asdict(bootstrap_mean_ci(paired, 2000, 0))},
    )
    emit(args.out, {"wall_s": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
