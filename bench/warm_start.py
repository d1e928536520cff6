"""Does a supervised warm start teach the embedded Refiner content? A probe for the 135M model.

    python bench/warm_start.py [--game werewolf] [--train-seeds 24] [--test-seeds 8]
        [--train 96] [--test 24] [--epochs 3] [--learning-rate 2e-4] [--n 2]

Instances are the speech turns of ``scripted_sampled`` games labeled by the scripted labeler
(k=3, full information, as ``bench/ground_truth.py`` takes them); the train games' seeds
start at 0, the test games' at 10,000. Each train instance's Stackelberg optimum under the
exact follower (terms only) becomes the completion of the Refiner's own prompt (the profile
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
import sys
import tempfile
import time
from pathlib import Path

import _project_root  # noqa: F401  (the project importable from the root)
from ground_truth import instances

from stackelberg.evaluation.stats import bootstrap_ratio_ci
from stackelberg.llm import make_llm
from stackelberg.llm.embedded import ensure_checkpoint
from stackelberg.params import load_params
from stackelberg.persuasion.candidates import refiner_prompt, sample_candidates
from stackelberg.persuasion.exact_follower import ExactFollower, exact_parts, optimum, terms
from stackelberg.persuasion.measurer import ScoreSettings

TEST_SEED = 10_000


def warm_start(base: Path, rows: list[dict], out: Path, epochs: float, lr: float) -> None:
    """Fit a LoRA adapter on (prompt, optimum speech) chats and save it to ``out``."""
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    config = SFTConfig(
        output_dir=str(out / "trainer"),
        num_train_epochs=epochs,
        learning_rate=lr,
        per_device_train_batch_size=8,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=0,
    )
    trainer = SFTTrainer(
        model=str(base),
        args=config,
        train_dataset=Dataset.from_list(rows),
        peft_config=LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"),
    )
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    print(
        json.dumps(
            {
                "sft_steps": trainer.state.global_step,
                "loss_first": losses[0],
                "loss_last": losses[-1],
            }
        ),
        flush=True,
    )
    trainer.model.save_pretrained(str(out / "adapter"))


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
    args = parser.parse_args(argv)
    if min(args.train_seeds, args.test_seeds, args.train, args.test, args.n) < 1:
        print("warm_start: seeds, instances and --n must be at least 1", file=sys.stderr)
        return 2
    start = time.perf_counter()
    profile = load_params("params.yaml").refiner_profile(args.game)
    base = ensure_checkpoint()
    untrained = profile.model.model_copy(update={"model": str(base), "cache": "off"})
    exact, score = ExactFollower(), ScoreSettings()
    train = instances(args.game, "scripted_sampled", args.train_seeds, args.train)
    test = instances(args.game, "scripted_sampled", args.test_seeds, args.test, TEST_SEED)
    llm = make_llm(untrained)
    targets = [optimum(exact, v, d, u, score).speech for v, d, u in train]
    rows = [
        {
            "prompt": refiner_prompt(llm, v, profile),
            "completion": [{"role": "assistant", "content": speech}],
        }
        for (v, _, _), speech in zip(train, targets, strict=True)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        warm_start(base, rows, Path(tmp), args.epochs, args.learning_rate)
        trained = untrained.model_copy(update={"adapter": str(Path(tmp) / "adapter")})
        views = [v for v, _, _ in test]
        seeds = list(range(len(views)))
        sampled = {
            "untrained": sample_candidates(llm, views, profile, args.n, seeds),
            "warm start": sample_candidates(make_llm(trained), views, profile, args.n, seeds),
        }
    optima = [optimum(exact, v, d, u, score) for v, d, u in test]
    headroom = [o.reward - o.base_reward for o in optima]
    memorized = set(targets)
    for name, cands in sampled.items():
        gains, parsed, texts = [], [], []
        for (view, d, u), cs, best in zip(test, cands, optima, strict=True):
            parts = exact_parts(exact, view, [c.utterance for c in cs], d, u, score)
            gains.append(sum(terms(p) for p in parts) / len(parts) - best.base_reward)
            parsed += [c.parsed for c in cs]
            texts += [c.utterance for c in cs]
        share = dataclasses.asdict(bootstrap_ratio_ci(gains, headroom, 2000, 0))
        print(
            json.dumps(
                {
                    "refiner": name,
                    "game": args.game,
                    "test_instances": len(test),
                    "mean_gain": sum(gains) / len(gains),
                    "mean_headroom": sum(headroom) / len(headroom),
                    "share_of_headroom": share,
                    "parse_rate": sum(parsed) / len(parsed),
                    "distinct_speeches": len(set(texts)),
                    "candidates": len(texts),
                    "memorized_share": sum(t in memorized for t in texts) / len(texts),
                    "examples": texts[:6],
                }
            ),
            flush=True,
        )
    print(json.dumps({"wall_s": round(time.perf_counter() - start, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
