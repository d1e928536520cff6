"""The evaluation read back from MLflow: each game's newest finished evaluate run, its
metrics.json artifact and where it came from, so that a table quoted elsewhere (the README's
Results) is what a logged run says, with the run, the commit and the params file named.

The evaluate stage logs its metrics.json as an artifact and every run carries the tags of
``stackelberg.provenance``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from stackelberg.evaluation.report import METRICS_FILE, TextTable
from stackelberg.games import GAME_NAMES
from stackelberg.provenance import COMMIT_TAG, PARAMS_TAG


class LoggedEvaluation(NamedTuple):
    """One game's evaluate run: its metrics.json and where it came from."""

    game: str
    run_id: str
    started: str  # UTC, minutes
    commit: str
    params: str
    metrics: dict[str, Any]


def logged_evaluations(
    experiment: str, tracking_uri: str, games: Sequence[str] | None = None
) -> list[LoggedEvaluation]:
    """The newest finished evaluate run of each game (``games``: those only) in an MLflow
    experiment, with its metrics.json artifact; games without one are left out."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise ValueError(f"MLflow experiment {experiment!r} not found at {tracking_uri}")
    runs = client.search_runs(
        [exp.experiment_id],
        filter_string="tags.stage = 'evaluate' and attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
    )
    newest: dict[str, Any] = {}
    for run in runs:
        game = run.data.tags.get("game")
        if game and (games is None or game in games):
            newest.setdefault(game, run)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for game, run in newest.items():
            try:
                path = client.download_artifacts(run.info.run_id, METRICS_FILE, tmp)
            except (MlflowException, OSError):
                continue  # an evaluate run that stopped before it logged its metrics
            started = datetime.fromtimestamp(run.info.start_time / 1000, UTC)
            out.append(
                LoggedEvaluation(
                    game,
                    run.info.run_id,
                    started.strftime("%Y-%m-%d %H:%M UTC"),
                    run.data.tags.get(COMMIT_TAG, "unrecorded"),
                    run.data.tags.get(PARAMS_TAG, "unrecorded"),
                    json.loads(Path(path).read_text()),
                )
            )
    order = list(games or GAME_NAMES)  # the project's order of games, unknown ones last
    return sorted(
        out, key=lambda e: (order.index(e.game) if e.game in order else len(order), e.game)
    )


def provenance_table(evaluations: Sequence[LoggedEvaluation], experiment: str) -> TextTable:
    """Which MLflow run each game's tables were read from, and what produced it."""
    return TextTable(
        f"Read from MLflow: experiment {experiment!r}, each game's newest finished evaluate run",
        ["game", "MLflow run", "started", "commit", "params"],
        [[e.game, e.run_id, e.started, e.commit[:12], e.params] for e in evaluations],
        "commit: the project's commit the run came from ('+changes': with uncommitted "
        "changes); params: the params file it ran (configs/study.yaml for make study).",
    )


__all__ = ["LoggedEvaluation", "logged_evaluations", "provenance_table"]
