"""The Refiner's reward evidence: held out and in training, best of n, ablation, what it learned."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackelberg.evaluation.report.tables import (
    TextTable,
    diff_cell,
    interval_cell,
    mean_cell,
    pct,
)
from stackelberg.evaluation.training_curve import WINDOW_SHARE


def reward_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    rows = []
    for game, m in metrics_by_game.items():
        r = m.get("reward")
        if r:
            d = r["diff"]
            rows.append(
                [
                    game,
                    mean_cell(r["before"]),
                    mean_cell(r["after"]),
                    diff_cell(d["estimate"], d["ci"], scale=1.0, digits=3),
                    r["verdict"],
                ]
            )
    return TextTable(
        "Held-out Measurer reward, base Refiner vs trained",
        ["game", "before", "after", "diff [95% CI]", "verdict"],
        rows,
        "Mean reward with a bootstrap 95% interval.",
    )


#: metrics.json's training entries, each a row of the training table
TRAINING_MEASURES = {
    "reward_rise": "reward",
    "reward_gain": "reward - untrained, same prompt",
    "reward_revisit": "same prompt, last visit - first",
}


def training_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """Per game, the GRPO run's reward rise (metrics.json's ``training.reward_rise``) and
    the rise of its gain over each prompt's untrained baseline (``training.reward_gain``):
    the evidence that training raised the reward, beside the held-out check. Games without
    them (metrics written before they were measured) have no row."""
    share = f"{WINDOW_SHARE:.0%}"
    rows = []
    for game, m in metrics_by_game.items():
        for key, measure in TRAINING_MEASURES.items():
            rise = (m.get("training") or {}).get(key)
            if not rise:
                continue
            if rise.get("estimate") is None:  # too few steps to compare
                rows.append(
                    [game, measure, str(rise["steps"]), "-", "-", "-", "-", rise["verdict"]]
                )
                continue
            rows.append(
                [
                    game,
                    measure,
                    str(rise["steps"]),
                    f"{rise['first']:.3f}",
                    f"{rise['last']:.3f}",
                    diff_cell(rise["estimate"], rise["ci"], scale=1.0, digits=3),
                    f"{rise['n_first']} / {rise['n_last']}",
                    rise["verdict"],
                ]
            )
    return TextTable(
        f"GRPO training reward: last {share} of steps vs first {share}",
        [
            "game",
            "measure",
            "steps",
            f"first {share}",
            f"last {share}",
            "diff [95% CI]",
            "prompts",
            "verdict",
        ],
        rows,
        "Mean Measurer reward of the prompts in each window (a prompt: the mean of its GRPO "
        "group); 'reward - untrained': each prompt's reward less the mean reward of the "
        "untrained Refiner's candidates on it (prompts differ in difficulty far more than "
        "training moves one); 'same prompt, last visit - first' (more than one epoch): each "
        "revisited prompt's reward at its last step minus its first, first / last the "
        "visits' means. CI: bootstrap resampling each window's prompts (first / last: "
        "their count; a revisit: the prompts, paired). rises / falls: the interval excludes 0.",
    )


#: names of the Refiner runs of metrics.json's ``refiner_outputs`` (others by their key)
REFINER_RUN_NAMES = {
    "sample": "candidates (untrained)",
    "grpo": "GRPO training",
    "held_out_before": "held-out, untrained",
    "held_out_after": "held-out, trained",
    "tournament": "tournament speeches, trained",
}


def refiner_outputs_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """Per game and Refiner run: its completions, the share that ended before the token
    limit and the share that parsed."""
    rows = [
        [
            game,
            REFINER_RUN_NAMES.get(run, run),
            str(r.get("completions", 0)),
            pct(r.get("ended_rate")),
            pct(r.get("parse_rate")),
        ]
        for game, m in metrics_by_game.items()
        for run, r in (m.get("refiner_outputs") or {}).items()
    ]
    return TextTable(
        "Refiner outputs",
        ["game", "run", "completions", "ended before limit", "parsed"],
        rows,
        "Ended: the completion stopped on its own (end-of-sequence or stop), counted from its "
        "tokens (GRPO: 1 - TRL's clipped ratio). Parsed: a usable speech in the asked format.",
        align_left=2,
    )


#: the held-out rows of the best-of table, in order: the untrained Refiner's best of k, then
#: the trained Refiner's single sample
_TRAINED = "trained"


def best_of_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """Test-time search against training, on the same held-out instances: the untrained
    Refiner's best of k by the Measurer (k scorings a speech at play time) and the trained
    Refiner's single sample (none), under the Measurer and the unseen follower."""
    games = {
        g: m["held_out"]["best_of"]
        for g, m in metrics_by_game.items()
        if (m.get("held_out") or {}).get("best_of")
    }
    if not games:
        return TextTable("", [], [])
    unseen = any("unseen" in row for rows in games.values() for row in rows.values())
    followers = ["measurer", "unseen"] if unseen else ["measurer"]
    names = list(dict.fromkeys(k for rows in games.values() for k in rows if k != _TRAINED))
    names.sort(key=lambda k: int(k.rsplit("_", 1)[1]))
    rows = []
    for name in [*names, _TRAINED]:
        label = (
            "trained Refiner, one sample"
            if name == _TRAINED
            else (f"untrained, best of {name.rsplit('_', 1)[1]}")
        )
        first = next(r[name] for r in games.values() if name in r)
        rows.append(
            [label, str(first["scorings_per_speech"])]
            + [interval_cell(games[g].get(name, {}).get(f)) for g in games for f in followers]
        )
    headers = ["Refiner", "Measurer scorings a speech"] + [
        f"{g} ({'Measurer' if f == 'measurer' else 'unseen follower'})"
        for g in games
        for f in followers
    ]
    return TextTable(
        "Best of n (test-time search, no training) vs the trained Refiner, held out",
        headers,
        rows,
        "Mean held-out reward of the speech each method says [bootstrap 95% interval]: best "
        "of k keeps the untrained Refiner's candidate the Measurer scores highest among k "
        "(k Measurer scorings per speech at play time); the trained Refiner says its first "
        "sample (none). The unseen follower scores the same chosen speeches; it picked none.",
        align_left=2,
    )


def best_of_calls_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """What a ``bestN+X`` speaker's speeches cost in the tournaments: Refiner samples and
    Measurer calls a speech (the trained Refiner: one sample, no call)."""
    rows = []
    for game, m in metrics_by_game.items():
        for condition, c in (m.get("best_of_calls") or {}).items():
            n = c["best_of_speeches"]
            each = [
                f"{c[key] / n:.2f}" if n else "-"
                for key in ("best_of_samples", "best_of_measurer_calls")
            ]
            rows.append([game, condition, str(c["games"]), str(n), *each])
    return TextTable(
        "Best of n in the tournaments: what a speech costs",
        [
            "game",
            "agent",
            "games",
            "speeches",
            "Refiner samples a speech",
            "Measurer calls a speech",
        ],
        rows,
        "bestN+X says the Measurer's best of N untrained Refiner samples: one Measurer call a "
        "speech that has a follower (the round's last speaker says the first sample, no call); "
        "refiner+X spends one trained Refiner sample and no Measurer call.",
        align_left=2,
    )


#: rows of the reward ablation, in the paper's order, and their labels
_ABLATION_ROWS = {
    "before": "untrained Refiner",
    "pos_only": "trained, positive-only reward",
    "neg_only": "trained, negative-only reward",
    "after": "trained, full reward",
}
_TERM_LABELS = {"reward": "full reward", "positive": "desired term", "negative": "undesired term"}


def ablation_reward_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """The paper's reward ablation, measured on held-out instances: rows the Refiners
    (untrained, then trained on each reward's terms), columns each game's full reward and its
    two terms. Only games that trained an ablation Refiner (``grpo.ablations``) have columns."""
    games = {
        g: m["held_out"]["terms"]
        for g, m in metrics_by_game.items()
        if set((m.get("held_out") or {}).get("terms", {}))
        & set(_ABLATION_ROWS) - {"before", "after"}
    }
    rows = [
        [
            label,
            *(
                interval_cell(terms.get(name, {}).get(t))
                for terms in games.values()
                for t in _TERM_LABELS
            ),
        ]
        for name, label in _ABLATION_ROWS.items()
    ]
    headers = ["Refiner"] + [f"{g}: {label}" for g in games for label in _TERM_LABELS.values()]
    return TextTable(
        "Reward ablation on held-out instances (rows: the reward the Refiner trained on)",
        headers,
        rows if games else [],
        "Mean over held-out instances [bootstrap 95% interval], every Refiner scored with the "
        "full reward and each of its terms: the desired responses' mean log-probability "
        "summed, and minus the undesired ones'. The paper's order: full >= positive-only > "
        "negative-only.",
    )


def unseen_follower_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """The held-out difference (trained minus untrained Refiner) under the Measurer and
    under a follower the Refiner never trained against."""
    rows = []
    for game, m in metrics_by_game.items():
        held_out, reward = m.get("held_out") or {}, m.get("reward")
        unseen, content = held_out.get("unseen"), held_out.get("content") or {}
        if not unseen or not reward:
            continue

        def cell(part: Mapping[str, Any] | None) -> str:
            if not part or not part.get("n"):
                return "-"
            return diff_cell(part["estimate"], part["ci"], scale=1.0, digits=3)

        rows.append(
            [
                game,
                str(reward["diff"]["n"]),
                cell(reward["diff"]),
                cell(content.get("measurer")),
                unseen["model"],
                cell(unseen["diff"]),
                cell(content.get("unseen")),
            ]
        )
    return TextTable(
        "Held-out difference, trained minus untrained Refiner: the Measurer and an unseen follower",
        [
            "game",
            "instances",
            "Measurer diff [95% CI]",
            "its terms alone",
            "unseen follower",
            "its diff [95% CI]",
            "its terms alone",
        ],
        rows,
        "Paired bootstrap over instances. The unseen follower is another model family, never "
        "trained against: a gain that holds under it is not the Measurer's alone. 'Terms "
        "alone': the reward without the length and format penalties (score.max_penalty, "
        "score.off_format_penalty), i.e. what the follower would answer; a gain in the reward "
        "but not in its terms was bought by format and length.",
    )


def learned_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """What the Refiner learned: its held-out candidates before and after training."""
    rows = []
    for game, m in metrics_by_game.items():
        learned = (m.get("held_out") or {}).get("learned") or {}
        for name in ("before", "after"):
            x = learned.get(name)
            if x:
                rows.append(
                    [
                        game,
                        "untrained" if name == "before" else "trained",
                        f"{x['words']:.1f}",
                        pct(x["parse_rate"]),
                        pct(x["penalty_share"]),
                        f"{x['overlap_desired']:.2f} / {x['overlap_undesired']:.2f}",
                        f"{pct(x['verbatim_desired'])} / {pct(x['verbatim_undesired'])}",
                        str(x.get("distinct_sayings", "-")),
                        f'"{x["top_saying"]}" ({pct(x["top_saying_share"])})'
                        if "top_saying" in x
                        else "-",
                    ]
                )
    return TextTable(
        "What the Refiner learned: held-out candidates before and after training",
        [
            "game",
            "Refiner",
            "words",
            "parsed",
            "length penalty share",
            "3-gram overlap desired / undesired",
            "verbatim desired / undesired",
            "distinct sayings",
            "most frequent saying (share)",
        ],
        rows,
        "A saying: what a candidate says beyond the planned speech (in the addition format, "
        'its added sentence; "": nothing added). 3-gram overlap: the share of a candidate\'s '
        "word 3-grams found in the instance's "
        "desired (undesired) responses; verbatim: candidates holding a response word for word. "
        + " ".join(
            f"{g}: {m['held_out']['copying']}."
            for g, m in metrics_by_game.items()
            if (m.get("held_out") or {}).get("copying")
        ),
        align_left=2,
    )


def examples_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """A few held-out instances side by side: the base speech, the untrained and the trained
    Refiner's candidate, with their rewards."""
    rows = [
        [
            game,
            e["base"],
            f"{e['before']} ({e['before_reward']:.2f})",
            f"{e['after']} ({e['after_reward']:.2f})",
            " | ".join(e["desired"]),
        ]
        for game, m in metrics_by_game.items()
        for e in (m.get("held_out") or {}).get("examples", [])
    ]
    return TextTable(
        "Held-out examples: base speech, untrained and trained Refiner (Measurer reward)",
        ["game", "base speech", "untrained Refiner", "trained Refiner", "desired responses"],
        rows,
        align_left=5,
    )
