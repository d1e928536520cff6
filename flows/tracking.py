"""MLflow bookkeeping: one run per stage execution, nested under the pipeline's run.

The tracking URI is $MLFLOW_TRACKING_URI, else params ``tracking.tracking_uri`` (a SQLite
file in the project by default). The pipeline flow opens a parent run and hands its id to
stages through $STACKELBERG_PARENT_RUN_ID, so a stage run by ``dvc repro`` in its own
process still lands under the pipeline run that started it.

Every run is tagged with where it came from (``stackelberg.provenance.source_tags``): the
project's commit and the params file, so that a table read back from MLflow names what
produced it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stackelberg.provenance import source_tags

if TYPE_CHECKING:
    from flows.context import StageContext

PARENT_ENV = "STACKELBERG_PARENT_RUN_ID"


def setup_mlflow(tracking) -> str:
    """Point MLflow at the configured store and experiment; return the experiment id."""
    import mlflow

    uri = os.environ.get("MLFLOW_TRACKING_URI") or tracking.tracking_uri
    mlflow.set_tracking_uri(uri)
    experiment = mlflow.get_experiment_by_name(tracking.experiment)
    if experiment is None:
        location = Path(tracking.artifact_location).resolve().as_uri()
        return mlflow.create_experiment(tracking.experiment, artifact_location=location)
    return experiment.experiment_id


def flatten(prefix: str, value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(f"{prefix}.{k}" if prefix else str(k), v))
        return out
    return {prefix: value}


class Tracker:
    """The active stage run; logs only numbers that are finite."""

    def __init__(self, run: Any) -> None:
        self.run = run

    @property
    def run_id(self) -> str:
        return self.run.info.run_id

    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        import math

        import mlflow

        clean = {
            k: float(v)
            for k, v in metrics.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        }
        if clean:
            mlflow.log_metrics(clean, step=step)

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        import mlflow

        p = Path(path)
        if p.is_dir():
            mlflow.log_artifacts(str(p), artifact_path)
        elif p.exists():
            mlflow.log_artifact(str(p), artifact_path)


@contextlib.contextmanager
def stage_run(ctx: StageContext) -> Iterator[Tracker]:
    import mlflow

    experiment_id = setup_mlflow(ctx.params.tracking)
    parent = os.environ.get(PARENT_ENV)
    active = mlflow.active_run()
    nested = active is not None
    with mlflow.start_run(
        experiment_id=experiment_id,
        run_name=f"{ctx.stage}@{ctx.game}",
        nested=nested,
        parent_run_id=None if nested else parent,
        tags={"stage": ctx.stage, "game": ctx.game, **source_tags()},
    ) as run:
        params = flatten(
            ctx.stage if ctx.stage != "base_model" else "models", ctx.section_dump()["section"]
        )
        params.update(flatten("models", ctx.section_dump()["models"]))
        mlflow.log_params({k: str(v)[:500] for k, v in params.items()})
        yield Tracker(run)


@contextlib.contextmanager
def pipeline_run(params, name: str = "pipeline") -> Iterator[Tracker]:
    """The parent run of one pipeline execution; stage runs nest under it."""
    import mlflow

    experiment_id = setup_mlflow(params.tracking)
    with mlflow.start_run(
        experiment_id=experiment_id, run_name=name, tags={"stage": "pipeline", **source_tags()}
    ) as run:
        os.environ[PARENT_ENV] = run.info.run_id
        try:
            yield Tracker(run)
        finally:
            os.environ.pop(PARENT_ENV, None)
