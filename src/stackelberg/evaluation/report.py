"""Paper-style tables from metrics.json: one table model, rendered as markdown or terminal text.

The markdown summary (``reports/summary.md``) and ``stackelberg report`` show the very same
tables: overall win rate per condition and game in the paper's layout (each X, refiner+X
under it, and their paired difference), per camp, per role, the paired X vs refiner+X tests
by camp, the held-out reward and whether GRPO raised the training reward, the held-out
evidence beyond it (an unseen follower, best of n, the reward ablation, what the Refiner
learned, examples: ``evaluation.held_out``); a scored game
(Sotopia) has its dimensions' mean scores and their paired differences in place of win rates. A cell is "rate [low, high]"
(Wilson 95%) with the number of games; a difference whose interval includes 0 says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackelberg.evaluation.training_curve import WINDOW_SHARE

METRICS_FILE = "metrics.json"


@dataclass(frozen=True)
class TextTable:
    """A titled table of strings; ``note`` is printed under it."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""
    align_left: int = 1  # leading columns aligned left (labels); the rest right


def pct(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def rate_cell(r: Mapping[str, Any] | None) -> str:
    """``"44.7% [35.1, 54.6] n=64"`` for a rate dict of metrics.json."""
    if not r or not r["n"]:
        return "-"
    lo, hi = r["ci"]
    return f"{pct(r['rate'])} [{100 * lo:.1f}, {100 * hi:.1f}] n={r['n']}"


def diff_cell(estimate: float, ci: Sequence[float], scale: float = 100.0, digits: int = 1) -> str:
    """A signed difference with its interval, e.g. ``"+4.7 [-6.0, 16.0]"``."""
    a, lo, hi = (scale * x for x in (estimate, *ci))
    return f"{a:+.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _tabulate(table: TextTable, tablefmt: str) -> str:
    from tabulate import tabulate

    align = ["left" if i < table.align_left else "right" for i in range(len(table.headers))]
    return tabulate(
        table.rows, table.headers, tablefmt=tablefmt, colalign=align, disable_numparse=True
    )


def render_markdown(table: TextTable) -> str:
    text = f"### {table.title}\n\n{_tabulate(table, 'pipe')}"
    return f"{text}\n\n{table.note}" if table.note else text


def render_text(table: TextTable) -> str:
    lines = [table.title, _tabulate(table, "simple")]
    return "\n".join(lines + ([table.note] if table.note else []))


def _conditions(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> list[str]:
    names = [c for m in metrics_by_game.values() for c in m["conditions"]]
    return list(dict.fromkeys(names))


def _pairs(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """treated -> base of the paired tests over all camps (X and refiner+X), in any game."""
    return {
        t["treated"]: t["base"]
        for m in metrics_by_game.values()
        for t in m["paired"]
        if t["camp"] == "all"
    }


def _paired_diff(metrics: Mapping[str, Any], base: str, treated: str) -> str:
    """The paired difference over all camps of one game, with its McNemar p ("-": none)."""
    for t in metrics["paired"]:
        if (t["base"], t["treated"], t["camp"]) == (base, treated, "all") and t["n"]:
            return f"{diff_cell(t['diff'], t['ci'])} p={t['p_value']:.2g}"
    return "-"


def overall_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """The headline table in the paper's layout: per game (columns), each agent X, then
    refiner+X right under it and their paired difference on the same seeds."""
    games = list(metrics_by_game)
    conditions, pairs = _conditions(metrics_by_game), _pairs(metrics_by_game)
    order: list[str] = []
    for c in conditions:
        if c in pairs and pairs[c] in conditions:
            continue  # placed under its base
        order.append(c)
        order += [t for t, base in pairs.items() if base == c and t in conditions]
    rows = []
    for c in order:
        conds = (metrics_by_game[g]["conditions"] for g in games)
        rows.append([c, *(rate_cell(cs.get(c, {}).get("overall")) for cs in conds)])
        if c in pairs and pairs[c] in conditions:
            diffs = (_paired_diff(metrics_by_game[g], pairs[c], c) for g in games)
            rows.append([f"{c} - {pairs[c]} (paired)", *diffs])
    opponents = sorted({str(m.get("opponent")) for m in metrics_by_game.values()})
    return TextTable(
        "Win rate of the agent under test (all camps)",
        ["agent", *games],
        rows,
        f"Opponent seats: {', '.join(opponents)}. Cells: win rate [Wilson 95% interval] and "
        "games; under each refiner+X (and bestN+X), its difference from X on the same seeds "
        "in points [paired bootstrap 95% interval] and the exact McNemar p.",
    )


def camp_table(metrics: Mapping[str, Any]) -> TextTable:
    conds = metrics["conditions"]
    camps = list(dict.fromkeys(k for c in conds.values() for k in c["camps"]))
    rows = [
        [c, *(rate_cell(conds[c]["camps"].get(k)) for k in camps), rate_cell(conds[c]["overall"])]
        for c in conds
    ]
    return TextTable(f"{metrics['game']}: win rate by camp", ["agent", *camps, "overall"], rows)


def role_table(metrics: Mapping[str, Any]) -> TextTable:
    conds = metrics["conditions"]
    roles = sorted({k for c in conds.values() for k in c["roles"]})
    rows = [[r, *(rate_cell(conds[c]["roles"].get(r)) for c in conds)] for r in roles]
    return TextTable(
        f"{metrics['game']}: win rate by role held by the agent under test",
        ["role", *conds],
        rows,
        "Role = the role dealt; a game counts once per role.",
    )


def paired_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    rows = [
        [
            game,
            t["camp"],
            f"{t['base']} -> {t['treated']}",
            str(t["n"]),
            pct(t["base_rate"]),
            pct(t["treated_rate"]),
            diff_cell(t["diff"], t["ci"]) if t["n"] else "-",
            f"{t['b']}/{t['c']}",
            f"{t['p_value']:.3g}",
            t["verdict"],
        ]
        for game, m in metrics_by_game.items()
        for t in m["paired"]
    ]
    return TextTable(
        "Paired comparison on the same seeds (X vs refiner+X, bestN+X)",
        [
            "game",
            "camp",
            "pair",
            "games",
            "base",
            "treated",
            "diff [95% CI]",
            "b/c",
            "p",
            "verdict",
        ],
        rows,
        "b/c: games only the base / only the treated won; p: exact McNemar; CI: paired "
        "bootstrap of the win-rate difference in points.",
        align_left=3,
    )


def _mean_cell(part: Mapping[str, Any]) -> str:
    lo, hi = part["ci"]
    return f"{part['estimate']:.3f} [{lo:.3f}, {hi:.3f}] n={part['n']}"


def reward_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    rows = []
    for game, m in metrics_by_game.items():
        r = m.get("reward")
        if r:
            d = r["diff"]
            rows.append(
                [
                    game,
                    _mean_cell(r["before"]),
                    _mean_cell(r["after"]),
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
        "training moves one). CI: bootstrap resampling each window's prompts (first / last: "
        "their count). rises / falls: the interval excludes 0.",
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


def _score_cell(part: Mapping[str, Any] | None) -> str:
    """``"6.40 [5.10, 7.60] n=12"``: a mean score with its bootstrap interval."""
    if not part or not part["n"]:
        return "-"
    lo, hi = part["ci"]
    return f"{part['estimate']:.2f} [{lo:.2f}, {hi:.2f}] n={part['n']}"


def score_table(metrics: Mapping[str, Any]) -> TextTable:
    """A scored game (Sotopia): rows are conditions, columns dimensions, cells the tested
    seats' mean score."""
    scores = metrics["scores"]
    dims = list(scores["dimensions"])
    rows = [
        [c, *(_score_cell(parts.get(d)) for d in dims), str(parts.get("unscored", 0))]
        for c, parts in scores["conditions"].items()
    ]
    ranges = ", ".join(f"{d} {lo}..{hi}" for d, (lo, hi) in scores["dimensions"].items())
    return TextTable(
        f"{metrics['game']}: scores of the agent under test",
        ["agent", *dims, "unscored"],
        rows,
        f"Mean over games [bootstrap 95% interval] and games scored; ranges: {ranges}. "
        "Unscored: games the evaluator failed on.",
    )


def score_paired_table(metrics: Mapping[str, Any]) -> TextTable:
    rows = [
        [
            t["dimension"],
            f"{t['base']} -> {t['treated']}",
            str(t["n"]),
            "-" if t["base_mean"] is None else f"{t['base_mean']:.2f}",
            "-" if t["treated_mean"] is None else f"{t['treated_mean']:.2f}",
            diff_cell(t["diff"], t["ci"], scale=1.0, digits=2) if t["n"] else "-",
            t["verdict"],
        ]
        for t in metrics["scores"]["paired"]
    ]
    return TextTable(
        f"{metrics['game']}: paired score difference on the same scenarios (X vs refiner+X)",
        ["dimension", "pair", "games", "base", "treated", "diff [95% CI]", "verdict"],
        rows,
        "CI: paired bootstrap of the mean difference (treated - base).",
        align_left=2,
    )


def _interval_cell(part: Mapping[str, Any] | None) -> str:
    """``"-1.234 [-1.5, -0.9]"`` for an interval dict of metrics.json (no n)."""
    if not part or not part.get("n"):
        return "-"
    lo, hi = part["ci"]
    return f"{part['estimate']:.3f} [{lo:.3f}, {hi:.3f}]"


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
            + [_interval_cell(games[g].get(name, {}).get(f)) for g in games for f in followers]
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
    (untrained, then trained on each variant), columns each game's full reward and its two
    terms. Only games that trained a variant Refiner have columns."""
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
                _interval_cell(terms.get(name, {}).get(t))
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


def _refiner_row(held_out: Mapping[str, Any], name: str) -> str:
    """A held-out Refiner's row label (``held_out.refiner_labels``; metrics written before
    them: its name)."""
    return (held_out.get("refiner_labels") or {}).get(name, name)


def ensemble_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """Ensemble vs single Measurer: the Refiner trained against the whole ensemble and each
    trained against one member alone, on the same held-out instances, scored by the ensemble,
    each member and the unseen follower (which none trained against); then the paired
    difference ensemble-trained minus member-trained under each."""
    games = {
        g: m["held_out"]["ensemble"]
        for g, m in metrics_by_game.items()
        if (m.get("held_out") or {}).get("ensemble")
    }
    followers = list(
        dict.fromkeys(f for e in games.values() for r in e["refiners"].values() for f in r)
    )
    rows = []
    for game, e in games.items():
        held_out = metrics_by_game[game]["held_out"]
        for refiner, cells in e["refiners"].items():
            label = _refiner_row(held_out, refiner)
            rows.append([game, label, *(_mean_cell_or_dash(cells.get(f)) for f in followers)])
        for single, cells in e["diff"].items():
            rows.append(
                [
                    game,
                    f"{_refiner_row(held_out, 'after')} - {_refiner_row(held_out, single)}",
                    *(
                        diff_cell(c["estimate"], c["ci"], scale=1.0, digits=3)
                        if (c := cells.get(f)) and c.get("n")
                        else "-"
                        for f in followers
                    ),
                ]
            )
    unseen = sorted({str(e["unseen_model"]) for e in games.values() if e.get("unseen_model")})
    headers = ["game", "Refiner"] + [
        f"{f} ({', '.join(unseen)})" if f == "unseen" and unseen else f for f in followers
    ]
    return TextTable(
        "Ensemble vs single Measurer: held-out reward under each follower",
        headers,
        rows,
        "Mean held-out reward [bootstrap 95% interval] n=instances, each the mean of its "
        "candidates: 'ensemble' is the Measurer the first trained Refiner trained against (the "
        "members' weighted mean), then each member alone, then the unseen follower, which no "
        "Refiner trained against. A Refiner trained against a member alone is scored by the "
        "other members too, which it never trained against. The paired rows: the "
        "ensemble-trained Refiner minus the one trained against that member alone, by instance; "
        "under the unseen follower it says whether training against more followers carries "
        "to another one.",
        align_left=2,
    )


def _mean_cell_or_dash(part: Mapping[str, Any] | None) -> str:
    return _mean_cell(part) if part and part.get("n") else "-"


def behaviour_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """Behaviour: a follower's sampled responses to each Refiner's held-out candidates,
    judged against the instance's desired and undesired responses."""
    rows = []
    for game, m in metrics_by_game.items():
        held_out = m.get("held_out") or {}
        for follower, entry in (held_out.get("behaviour") or {}).items():
            for refiner, x in entry["refiners"].items():
                rate, diff = x["rate"], x.get("diff")
                rows.append(
                    [
                        game,
                        f"{follower} ({entry['model']})",
                        _refiner_row(held_out, refiner),
                        str(x["responses"]),
                        pct(x["desired"]),
                        pct(x["undesired"]),
                        pct(x["unjudged"]),
                        _mean_cell_or_dash(rate),
                        diff_cell(diff["estimate"], diff["ci"], scale=1.0, digits=3)
                        if diff and diff.get("n")
                        else "-",
                    ]
                )
    return TextTable(
        "Behaviour: the follower's responses matching a desired or an undesired response",
        [
            "game",
            "follower",
            "Refiner",
            "responses",
            "desired",
            "undesired",
            "unjudged",
            "desired - undesired [95% CI]",
            "minus untrained [95% CI]",
        ],
        rows,
        "After each held-out candidate the follower says its next speech as the game's LLM "
        "player would (evaluate.behaviour.responses samples), and the labeler judges it: the "
        "scripted labeler by the stance and the player (or team, or goal) the speech names, "
        "matched against the desired and undesired responses; an LLM labeler by naming the "
        "response it says the same as. Unjudged: no stance read (or no speech, or an LLM "
        "judge's answer naming none). The rate is per instance, then averaged [bootstrap 95% "
        "interval] n=instances; the last column pairs each trained Refiner's rate with the "
        "untrained one's by instance.",
        align_left=3,
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
        ],
        rows,
        "3-gram overlap: the share of a candidate's word 3-grams found in the instance's "
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


def _diff_or_dash(part: Mapping[str, Any] | None) -> str:
    """A paired difference with its interval and n, ``"+0.123 [-0.100, 0.300] n=55"``."""
    if not part or not part.get("n"):
        return "-"
    return f"{diff_cell(part['estimate'], part['ci'], scale=1.0, digits=3)} n={part['n']}"


def joint_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """One Refiner for all games (``grpo.joint``) against each game's own, on the game's
    held-out instances: whether the joint Refiner trained on the game (a game it never saw:
    transfer), each Refiner's mean reward, and the paired differences."""
    rows, trained_on = [], set()
    for game, m in metrics_by_game.items():
        joint = (m.get("held_out") or {}).get("joint")
        if joint:
            trained_on.add(", ".join(joint["trained_on"]))
            rows.append(
                [
                    game,
                    "yes" if joint["seen"] else "no (held out)",
                    _mean_cell_or_dash(joint["untrained"]),
                    _mean_cell_or_dash(joint["own"]),
                    _mean_cell_or_dash(joint["joint"]),
                    _diff_or_dash(joint["joint_minus_own"]),
                    _diff_or_dash(joint["joint_minus_untrained"]),
                ]
            )
    return TextTable(
        "One Refiner for all games: the joint Refiner vs each game's own, held out",
        [
            "game",
            "joint trained on it",
            "untrained",
            "game's own Refiner",
            "joint Refiner",
            "joint - own [95% CI]",
            "joint - untrained [95% CI]",
        ],
        rows,
        f"The joint Refiner trained on {' / '.join(sorted(trained_on))}, one LoRA on their "
        "train instances pooled, each prompt naming its game. Mean held-out Measurer reward "
        "[bootstrap 95% interval] n=instances; differences paired by instance. On a game it "
        "did not train on, joint - untrained is transfer to an unseen game.",
        align_left=2,
    )


#: the views of the information table, as its rows and columns name them
_VIEW_LABELS = {"full_information": "full information", "speaker_only": "speaker's view only"}


def views_table(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> TextTable:
    """The 2x2 information table, per game: rows the Refiner by the intents it trained on
    (and the untrained one), columns the intents it is scored against, on the same held-out
    instances; then the speaker-view Refiner minus the full-information one, per column."""
    rows = []
    for game, m in metrics_by_game.items():
        views = (m.get("held_out") or {}).get("views")
        if not views:
            continue
        for refiner, cells in views["cells"].items():
            label = "untrained" if refiner == "untrained" else f"trained on {_VIEW_LABELS[refiner]}"
            rows.append([game, label, *(_mean_cell_or_dash(cells.get(v)) for v in _VIEW_LABELS)])
        diff = views.get("other_minus_own")
        if diff:
            own = views["own_view"]
            other = next(v for v in _VIEW_LABELS if v != own)
            rows.append(
                [
                    game,
                    f"{_VIEW_LABELS[other]} - {_VIEW_LABELS[own]} Refiner (paired)",
                    *(_diff_or_dash(diff.get(v)) for v in _VIEW_LABELS),
                ]
            )
    return TextTable(
        "Training on the speaker's own view: Refiners by the intents they trained on (rows) "
        "and are scored against (columns), held out",
        ["game", "Refiner", *(f"scored against {label}" for label in _VIEW_LABELS.values())],
        rows,
        "Intents labeled with every role known (the paper) or with only what the speaker knows "
        "(what a player has at play time; label.both_views). Mean held-out Measurer reward "
        "[bootstrap 95% interval] n=instances; the difference is paired by instance.",
        align_left=2,
    )


def report_tables(metrics_by_game: Mapping[str, Mapping[str, Any]]) -> list[TextTable]:
    """Every table of the report, in reading order (empty ones left out). Scored games
    (Sotopia) have score tables in place of the win-rate ones."""
    won = {g: m for g, m in metrics_by_game.items() if not m.get("scores")}
    tables = [overall_table(won)] if won else []
    for m in metrics_by_game.values():
        if m.get("scores"):
            tables += [score_table(m), score_paired_table(m)]
        else:
            tables += [camp_table(m), role_table(m)]
    tables += [
        paired_table(won),
        reward_table(metrics_by_game),
        training_table(metrics_by_game),
        unseen_follower_table(metrics_by_game),
        best_of_table(metrics_by_game),
        best_of_calls_table(metrics_by_game),
        ablation_reward_table(metrics_by_game),
        joint_table(metrics_by_game),
        views_table(metrics_by_game),
        ensemble_table(metrics_by_game),
        behaviour_table(metrics_by_game),
        learned_table(metrics_by_game),
        examples_table(metrics_by_game),
        refiner_outputs_table(metrics_by_game),
    ]
    return [t for t in tables if t.rows]


def markdown_report(
    metrics_by_game: Mapping[str, Mapping[str, Any]],
    plots: Sequence[str] = (),
    extra_tables: Sequence[TextTable] = (),
    title: str = "Evaluation",
) -> str:
    """The markdown summary; ``plots`` are image paths relative to the markdown file."""
    parts = [f"# {title}"]
    parts += [render_markdown(t) for t in [*report_tables(metrics_by_game), *extra_tables]]
    parts += [f"![{Path(p).stem}]({p})" for p in plots]
    return "\n\n".join(parts) + "\n"


def terminal_report(
    metrics_by_game: Mapping[str, Mapping[str, Any]], extra_tables: Sequence[TextTable] = ()
) -> str:
    return "\n\n".join(render_text(t) for t in [*report_tables(metrics_by_game), *extra_tables])


def load_metrics(path: str | Path = "reports") -> dict[str, dict[str, Any]]:
    """metrics.json files by game: a file, a folder holding one, or a folder of game folders."""
    path = Path(path)
    if path.is_file():
        files = [path]
    elif (path / METRICS_FILE).is_file():
        files = [path / METRICS_FILE]
    else:
        files = sorted(path.glob(f"*/{METRICS_FILE}"))
    if not files:
        raise FileNotFoundError(
            f"{path}: no {METRICS_FILE} (expected {path}/{METRICS_FILE} or "
            f"{path}/<game>/{METRICS_FILE}; run the evaluate stage first)"
        )
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        try:
            m = json.loads(f.read_text())
            out[m.get("game") or f.parent.name] = m
        except (json.JSONDecodeError, AttributeError) as err:
            raise ValueError(f"{f}: not a metrics.json object ({err})") from None
    return out


__all__ = [
    "TextTable",
    "camp_table",
    "load_metrics",
    "markdown_report",
    "overall_table",
    "paired_table",
    "rate_cell",
    "refiner_outputs_table",
    "render_markdown",
    "render_text",
    "report_tables",
    "reward_table",
    "role_table",
    "score_paired_table",
    "score_table",
    "terminal_report",
    "training_table",
]
