"""One Prefect flow runs any pipeline stage: plan the work items, run each as a task, finish.

A stage module (``stages/<name>.py``) defines three plain functions:

- ``plan(ctx) -> list[item]``: the work items (a batch of instances, a chunk of games);
  each item is small, JSON-ready and names what it covers.
- ``work(ctx, item) -> result``: the work of one item (picklable result).
- ``finish(ctx, results) -> dict``: write the stage's outputs (atomically) and return
  metrics for MLflow.

Every item runs as a Prefect task with ``orchestration.task_retries`` retries. Finished items are cached on disk (Prefect
persisted results keyed by the stage, game, item, params and input files), so a killed
stage, rerun, resumes where it stopped: finished items are read back, not redone.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import INPUTS, TASK_SOURCE
from prefect.exceptions import MissingContextError
from prefect.logging import get_run_logger

import stackelberg
from flows.context import StageContext, release_models, stage_context
from flows.tracking import stage_run
from stackelberg.progress import LOGGER as PROGRESS_LOGGER
from stackelberg.progress import progress

#: the library's source: a code change invalidates the cached work items
LIBRARY = Path(stackelberg.__file__).parent


def _digest(paths: list[Path]) -> str:
    """Content hash of a stage's input files, so cached items die with changed inputs."""
    h = hashlib.sha256()
    for p in paths:
        files = (
            sorted(f for f in p.rglob("*") if "__pycache__" not in f.parts) if p.is_dir() else [p]
        )
        for f in files:
            if f.is_file():
                h.update(str(f).encode())
                h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:16]


#: what a work item's list holds, by key, and the unit the stage's progress counts
_UNITS = {"ids": "instance", "seeds": "game"}


def _unit(items: list[Any]) -> str:
    first = items[0] if items and isinstance(items[0], dict) else {}
    return next((unit for key, unit in _UNITS.items() if key in first), "item")


def _size(item: Any) -> int:
    """The units an item covers: its instances or games, else one."""
    if isinstance(item, dict):
        for key in _UNITS:
            if key in item:
                return len(item[key])
    return 1


class _ToRunLog(logging.Handler):
    """Progress lines of the library go to the Prefect run's log (the terminal and the UI)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            logger = get_run_logger()
        except MissingContextError:
            logger = logging.getLogger("stackelberg")
        logger.log(record.levelno, record.getMessage())


PROGRESS_LOGGER.setLevel(logging.INFO)
PROGRESS_LOGGER.propagate = False
if not any(isinstance(h, _ToRunLog) for h in PROGRESS_LOGGER.handlers):
    PROGRESS_LOGGER.addHandler(_ToRunLog())


@task(
    cache_policy=INPUTS + TASK_SOURCE,
    persist_result=True,
    retry_delay_seconds=[2, 10],
    task_run_name="{stage}@{game}:{label}",
)
def run_item(stage: str, game: str, label: str, item: Any, fingerprint: str) -> Any:
    """One work item of a stage (its result is persisted; a rerun with equal inputs reuses it)."""
    module = importlib.import_module(f"stages.{stage}")
    return module.work(stage_context(stage, game), item)


@flow(name="stage", flow_run_name="{stage}@{game}", log_prints=True)
def run_stage(stage: str, game: str = "all") -> dict[str, Any]:
    """Run one stage for one game (``all`` for stages that are not per game)."""
    module = importlib.import_module(f"stages.{stage}")
    ctx: StageContext = stage_context(stage, game)
    started = time.perf_counter()
    with stage_run(ctx) as tracker:
        t0 = time.perf_counter()
        items = module.plan(ctx)
        fingerprint = hashlib.sha256(
            json.dumps(
                {
                    # all of params: a stage reads other sections too (grpo: score, sample)
                    "params": ctx.params.model_dump(mode="json"),
                    "inputs": _digest(ctx.inputs),
                    "code": _digest([Path(module.__file__), LIBRARY]),
                },
                sort_keys=True,
            ).encode()
        ).hexdigest()[:16]
        work_s = time.perf_counter() - t0
        results, cached = [], 0
        unit = _unit(items)
        bar = progress(sum(_size(item) for item in items), f"{stage}@{game}", unit)
        retrying = run_item.with_options(retries=ctx.params.orchestration.task_retries)
        for i, item in enumerate(items):
            label = item.get("label", str(i)) if isinstance(item, dict) else str(i)
            t0 = time.perf_counter()
            state = retrying(stage, game, label, item, fingerprint, return_state=True)
            results.append(state.result())
            cached += state.name == "Cached"
            work_s += time.perf_counter() - t0
            bar.update(_size(item))
        bar.close()
        t0 = time.perf_counter()
        metrics = module.finish(ctx, results) or {}
        work_s += time.perf_counter() - t0
        metrics["work_seconds"] = work_s
        metrics["items"] = len(items)
        metrics["items_cached"] = cached
        metrics["stage_seconds"] = time.perf_counter() - started
        tracker.log_metrics(metrics)
    release_models(ctx.params)
    return metrics
