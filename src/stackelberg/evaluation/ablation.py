"""The reward ablation of the paper: refiner+ReAct trained with the full, positive-only and
negative-only reward, against plain ReAct, one table shaped like the paper's.

Each ``dvc exp run -S score.terms=...`` logs its evaluation to MLflow with the
``score.terms`` param (or tag) and the metric names of ``mlflow_names.mlflow_metrics``;
``ablation_from_mlflow`` reads them back and ``ablation_table`` lays them out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from stackelberg.evaluation.mlflow_names import metric_key
from stackelberg.evaluation.report import TextTable, rate_cell
from stackelberg.evaluation.tournament_stats import rate
from stackelberg.games import GAME_NAMES

TERMS_KEY = "score.terms"
BASELINE = "baseline"
#: rows in the paper's order, and their labels
TERMS_LABELS: dict[str, str] = {
    BASELINE: "ReAct",
    "pos_only": "+ Refiner, positive-only reward",
    "neg_only": "+ Refiner, negative-only reward",
    "full": "+ Refiner, full reward",
}


class AblationResult(NamedTuple):
    """Wins of one reward's terms in one game (``terms`` is ``"baseline"`` for the plain agent)."""

    terms: str
    game: str
    wins: int
    games: int


def ablation_table(
    results: Iterable[AblationResult | tuple[str, str, int, int]],
    labels: Mapping[str, str] | None = None,
) -> TextTable:
    """Rows: the reward's terms (every known value, in the paper's order, then unknown ones);
    columns: games; cells: win rate with its Wilson interval, ``-`` where not run yet.
    Several results of one (terms, game) are added up."""
    labels = {**TERMS_LABELS, **(labels or {})}
    totals: dict[tuple[str, str], list[int]] = {}
    for terms, game, wins, games in results:
        t = totals.setdefault((terms, game), [0, 0])
        t[0] += int(wins)
        t[1] += int(games)
    seen_t = list(dict.fromkeys(t for t, _ in totals))
    seen_g = list(dict.fromkeys(g for _, g in totals))
    rows_terms = list(labels) + [t for t in seen_t if t not in labels]
    games = [g for g in GAME_NAMES if g in seen_g] + [g for g in seen_g if g not in GAME_NAMES]
    rows = [
        [
            labels.get(t, t),
            *(rate_cell(rate(*totals[t, g]) if (t, g) in totals else None) for g in games),
        ]
        for t in rows_terms
    ]
    return TextTable(
        f"Reward ablation on top of {labels[BASELINE]} (win rate of the agent under test)",
        ["reward terms", *games],
        rows,
        "Cells: win rate [Wilson 95% interval] and games; rows differ only in the Refiner's "
        "training reward (score.terms); '-': not run yet (`dvc exp run -S "
        "score.terms=pos_only`, or neg_only, adds a row).",
    )


def _overall_counts(metrics: Mapping[str, float], condition: str) -> dict[str, tuple[int, int]]:
    """{game: (wins, games)} of a condition from flattened MLflow metric names."""
    key, out = metric_key(condition), {}
    for name, value in metrics.items():
        parts = name.split("/")
        if len(parts) == 4 and parts[0] == "wins" and parts[2:] == [key, "overall"]:
            games = metrics.get(f"games/{parts[1]}/{key}/overall")
            if games is not None:
                out[parts[1]] = (int(value), int(games))
    return out


def ablation_from_mlflow(
    experiment: str,
    tracking_uri: str,
    condition: str = "refiner+react",
    baseline: str = "react",
) -> list[AblationResult]:
    """Results of the newest run per (terms, game) in an MLflow experiment, plus the
    baseline from the newest run of each game that played it. Runs without a
    ``score.terms`` param or tag are ignored."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise ValueError(f"MLflow experiment {experiment!r} not found at {tracking_uri}")
    found: dict[tuple[str, str], AblationResult] = {}
    token = None
    while True:
        page = client.search_runs(
            [exp.experiment_id], order_by=["attributes.start_time DESC"], page_token=token
        )
        for run in page:
            terms = run.data.params.get(TERMS_KEY) or run.data.tags.get(TERMS_KEY)
            if not terms:
                continue
            for name, v in ((terms, condition), (BASELINE, baseline)):
                for game, (wins, games) in _overall_counts(run.data.metrics, v).items():
                    found.setdefault((name, game), AblationResult(name, game, wins, games))
        token = page.token
        if not token:
            break
    return list(found.values())


__all__ = [
    "BASELINE",
    "TERMS_LABELS",
    "AblationResult",
    "ablation_from_mlflow",
    "ablation_table",
]
