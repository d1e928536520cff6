"""What a speech can do to the Measurer's terms: the base speech against simple rewrites of it.

    python bench/content_headroom.py --workspace runs/study --game werewolf [--instances 60]

For each labeled instance of a pipeline workspace (its data/intents and data/selfplay, the
Measurer and score settings of its params.yaml), the Measurer scores the base speech and
these texts, and the table gives each one's change of the reward's terms (``clamped``: the
desired responses' log-probabilities less the undesired ones', without the length and
format penalties) over the base speech's, mean and bootstrap 95% interval over instances:

- the base with a sentence added that any speaker could say ("Trust me.", "Trust Player
  <the speaker>.", ...), or with a named player trusted or suspected: the mean over the other players (a name drawn at
  random) and the best of them (a Refiner that knew which name the reward wants);
- the desired (undesired) responses said outright: how far the follower can be moved at
  all, and by copying the responses rather than persuading.

A study whose trained Refiner's terms do not move asks whether there was anything within
the Refiner's reach: a rewrite it could find from its own prompt.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import _project_root  # noqa: F401  (flows and stages importable)
import numpy as np
import polars as pl

from flows.context import get_llm
from stackelberg.evaluation.stats import bootstrap_mean_ci
from stackelberg.params import ParamsError, load_params
from stackelberg.persuasion.context import instance_rows
from stackelberg.persuasion.measurer import load_measurer, measure

#: sentences any speaker could add, whatever its role
GENERIC = ("Trust me.", "I am telling the truth.", "Believe me, please.")


def rewrites(base: str, speaker: int, players: int) -> dict[str, list[str]]:
    """The texts scored beside the base speech: one, or one per other player named."""
    others = [p for p in range(players) if p != speaker]
    out = {f"+ {g}": [f"{base} {g}"] for g in GENERIC}
    out["base said twice"] = [f"{base} {base}"]
    out["+ Trust Player <the speaker>."] = [f"{base} Trust Player {speaker + 1}."]
    out["+ I trust Player X."] = [f"{base} I trust Player {p + 1}." for p in others]
    out["+ I suspect Player X."] = [f"{base} I suspect Player {p + 1}." for p in others]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", required=True, help="a pipeline workspace (runs/study)")
    parser.add_argument("--game", required=True)
    parser.add_argument("--instances", type=int, default=60, help="the first N labeled ones")
    args = parser.parse_args()
    os.chdir(Path(args.workspace))
    try:
        params = load_params("params.yaml")
    except ParamsError as err:
        raise SystemExit(f"content_headroom: {err}") from None
    settings = params.for_game("score", args.game)
    llm = load_measurer(params.models.measurer, get_llm)
    intents = f"data/intents/{args.game}.parquet"
    ids = pl.read_parquet(intents)["instance_id"].to_list()[: args.instances]
    rows, views = instance_rows(intents, "intents", f"data/selfplay/{args.game}.parquet", ids)
    gains: dict[str, list[float]] = {}
    for row, view in zip(rows, views, strict=True):
        base = row["base_utterance"]
        texts = {"base": [base], **rewrites(base, view.speaker, view.game.n_players)}
        texts["the desired responses said"] = [" ".join(row["desired"])]
        texts["the undesired responses said"] = [" ".join(row["undesired"])]
        flat = [t for group in texts.values() for t in group]
        parts, _ = measure(llm, view, flat, row["desired"], row["undesired"], settings)
        terms = iter(p.clamped for p in parts)
        scored = {k: [next(terms) for _ in group] for k, group in texts.items()}
        b = scored.pop("base")[0]
        for name, values in scored.items():
            if len(values) == 1:
                gains.setdefault(name, []).append(values[0] - b)
            else:
                gains.setdefault(f"{name} (a random X)", []).append(float(np.mean(values)) - b)
                gains.setdefault(f"{name} (the best X)", []).append(max(values) - b)
    for name, values in gains.items():
        ci = bootstrap_mean_ci(values)
        line = {"game": args.game, "text": name, "n": ci.n, "mean": round(ci.estimate, 3)}
        print(json.dumps(line | {"ci": [round(ci.low, 3), round(ci.high, 3)]}))


if __name__ == "__main__":
    main()
