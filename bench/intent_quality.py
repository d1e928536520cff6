"""How often the labeled intents serve the speaker's side by the game's truth, per labeler.

    python bench/intent_quality.py --games werewolf,avalon,onuw,sotopia \\
        [--labelers scripted,per_response] [--instances 16] [--params params.yaml]
    python bench/intent_quality.py --data data    # the intents a pipeline run wrote

Without ``--data`` it plays the self-play games of params (scripted agents) and selects the
instances as the select stage does (``--instances`` overrides ``select.instances``), then
labels them with each scheme of ``--labelers`` (the ``label`` section of params otherwise;
the LLM schemes on ``models.labeler``). Each response is judged by
``stackelberg.persuasion.truth.judge``: the scripted players' parsers read whom it trusts,
suspects or votes for (Sotopia: whether it says the speaker's goal keywords, or refuses),
and the game's truth says whether that serves the speaker's side. Prints one JSON line per
game and labeler: the shares of desired responses that serve / hurt / do neither / cannot
be judged, the same for the undesired ones, and the instances labeled and dropped.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from stackelberg.agents import make_agent, seat_agents
from stackelberg.agents.runner import Table, play_tables
from stackelberg.datasets import read_dataset, seed_of
from stackelberg.games import GAME_NAMES, make_game
from stackelberg.llm import LLMConfig, make_llm
from stackelberg.params import Params, draw_model, load_params
from stackelberg.persuasion.context import (
    instance_view,
    select_balanced,
    speech_instances,
    split_seeds,
)
from stackelberg.persuasion.intents import SCRIPTED, Labels, label_views
from stackelberg.persuasion.truth import intent_quality, judge


def selected(params: Params, game: str, instances: int | None) -> tuple[list[dict], dict]:
    """The select stage's instances of scripted self-play, and the records by seed."""
    sp, sel = params.for_game("selfplay", game), params.for_game("select", game)
    probe = make_game(game, sp.options).reset(sp.seed)
    kinds = seat_agents(sp.agents, probe.n_players)
    if set(kinds) != {"scripted"}:
        raise SystemExit(f"{game}: self-play plays {sp.agents}; give a run's folder with --data")
    tables = [
        Table(make_game(game, sp.options), [make_agent("scripted", game) for _ in kinds], seed)
        for seed in range(sp.seed, sp.seed + sp.games)
    ]
    records = play_tables(tables)
    rows = []
    for rec, table in zip(records, tables, strict=True):
        rows += speech_instances(rec, table.speech_turns, sel.min_words)
    test = split_seeds([r["seed"] for r in records], sel.test_fraction, sel.seed)
    chosen = select_balanced(rows, instances or sel.instances, test, sel.seed)
    return chosen, {r["seed"]: json.dumps(r) for r in records}


def _llm(config: LLMConfig):
    """The configured model; ``models/base`` before the pipeline made it: the embedded one."""
    if config.model == "models/base" and not Path("models/base/config.json").exists():
        config = config.model_copy(update={"model": "embedded"})
    return make_llm(config)


def label(params: Params, game: str, scheme: str, rows: list[dict], records: dict):
    settings = params.for_game("label", game).model_copy(update={"scheme": scheme})
    views = [instance_view(records[r["seed"]], r) for r in rows]
    seeds = [seed_of(r["instance_id"]) for r in rows]
    if scheme == SCRIPTED:
        labels = label_views(None, views, settings, seeds)
    else:  # one model per game seed, as the label stage draws it
        labels = [None] * len(rows)
        by_model: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            key = draw_model(params.models.labeler, r["seed"]).model_dump_json()
            by_model.setdefault(key, []).append(i)
        for key, idx in by_model.items():
            llm = _llm(LLMConfig.model_validate_json(key))
            got = label_views(llm, [views[i] for i in idx], settings, [seeds[i] for i in idx])
            for i, lab in zip(idx, got, strict=True):
                labels[i] = lab
    kept = [(v, lab) for v, lab in zip(views, labels, strict=True) if lab.complete(settings.k)]
    return kept, len(rows) - len(kept)


def examples(game: str, labeler: str, kept) -> list[dict]:
    """Every response with what the judge made of it (``--out``)."""
    return [
        {
            "game": game,
            "labeler": labeler,
            "speaker_role": view.game.players[view.speaker].role,
            "speech": view.base_utterance,
            "polarity": polarity,
            "response": text,
            "verdict": judge(view, text),
        }
        for view, lab in kept
        for polarity in ("desired", "undesired")
        for text in getattr(lab, polarity)
    ]


def report(game: str, labeler: str, kept, dropped: int, seconds: float | None) -> dict:
    quality = intent_quality(
        [v for v, _ in kept], [lab.desired for _, lab in kept], [lab.undesired for _, lab in kept]
    )
    out = {"game": game, "labeler": labeler, "labeled": len(kept), "dropped": dropped}
    out |= {
        f"{polarity}.{k}": round(v, 3) if isinstance(v, float) else v
        for polarity, shares in quality.items()
        for k, v in shares.items()
    }
    if seconds is not None:
        out["seconds"] = round(seconds, 1)
    return out


def from_run(data: Path, game: str):
    """The intents of a pipeline run, per labeler model: (labeler, kept, dropped, seconds)."""
    intents = read_dataset(data / "intents" / f"{game}.parquet", "intents")
    games = read_dataset(data / "selfplay" / f"{game}.parquet", "selfplay")
    records = dict(zip(games["seed"].to_list(), games["record"].to_list(), strict=True))
    by_labeler: dict[str, list] = {}
    for row in intents.iter_rows(named=True):
        by_labeler.setdefault(row["labeler_model"], []).append(
            (instance_view(records[row["seed"]], row), Labels(row["desired"], row["undesired"]))
        )
    return [(name, kept, 0, None) for name, kept in by_labeler.items()]


def labeled(params: Params, game: str, args):
    """Label the select stage's instances with each scheme of ``--labelers``."""
    rows, records = selected(params, game, args.instances)
    for scheme in args.labelers.split(","):
        start = time.perf_counter()
        kept, dropped = label(params, game, scheme, rows, records)
        yield scheme, kept, dropped, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default=",".join(GAME_NAMES))
    parser.add_argument("--labelers", default=f"{SCRIPTED},per_response")
    parser.add_argument("--instances", type=int, help="instances per game (select.instances)")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument(
        "--full-information", choices=["true", "false"], help="overrides label.full_information"
    )
    parser.add_argument("--data", type=Path, help="judge the intents of this run's data/")
    parser.add_argument("--out", type=Path, help="a JSONL file of every response and its verdict")
    args = parser.parse_args()
    params = load_params(args.params)
    if args.full_information:
        label_section = params.label.model_copy(
            update={"full_information": args.full_information == "true"}
        )
        params = params.model_copy(update={"label": label_section})
    out = args.out.open("w") if args.out else None
    for game in args.games.split(","):
        runs = from_run(args.data, game) if args.data else labeled(params, game, args)
        for labeler, kept, dropped, seconds in runs:
            print(json.dumps(report(game, labeler, kept, dropped, seconds)), flush=True)
            for line in examples(game, labeler, kept) if out else ():
                out.write(json.dumps(line) + "\n")
    if out:
        out.close()


if __name__ == "__main__":
    main()
