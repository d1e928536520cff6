"""One Prefect flow runs any pipeline stage: plan the work items, run each as a task, finish.

A stage module (``stages/<name>.py``) defines three plain functions:

- ``plan(ctx) -> list[item]``: the work items (a batch of instances, a chunk of games);
  each item is small, JSON-ready and names what it covers.
- ``work(ctx, item) -> result``: the work of one item (picklable result).
- ``finish(ctx, results) -> dict``: write the stage's outputs (atomically) and return
  metrics for MLflow.

It may name ``KEEP_PREFIXES``, the model roles whose prompt-prefix stores outlive it (the
next stage reads prompts that start the same way).

Every item runs as a Prefect task with ``orchestration.task_retries`` retries, on the task
runner ``orchestration.task_runner`` names (flows/runners.py: this process, or the worker
processes of a Dask or Ray cluster); results are gathered in plan order, so the outputs do
not depend on which worker finished first. Finished items are cached on disk (Prefect
persisted results keyed by the stage, game, item, params and input files), so a killed
stage, rerun, resumes where it stopped: finished items are read back, not redone.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import INPUTS, TASK_SOURCE
from prefect.context import FlowRunContext
from prefect.exceptions import MissingContextError
from prefect.futures import as_completed
from prefect.logging import get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

import stackelberg
from flows.context import StageContext, current_params, release_models, stage_context
from flows.runners import api_for_workers, in_process_runner, task_runner
from flows.tracking import stage_run
from stackelberg.params import OrchestrationParams, Params
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
                stat = f.stat()
                h.update(str(f).encode())
                h.update(_file_digest(f.resolve(), stat.st_size, stat.st_mtime_ns))
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=4096)
def _file_digest(path: Path, size: int, mtime_ns: int) -> bytes:
    """One file's hash, read in chunks (a checkpoint is never held whole in memory), once per
    process while its size and modification time stay (models/base feeds 16 stages)."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").digest()


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


#: the stage this process last ran items of, by its key, and that stage's context
_last_stage: tuple[str, StageContext] | None = None


def worker_context(
    stage: str, game: str, params: Params, fingerprint: str, project: str
) -> StageContext:
    """The context of an item, built once per stage in each process that runs items (the
    flow's own, or a Dask or Ray worker; its models are loaded once per process, by
    ``get_llm``). The params and the flow's project folder come with the item: a worker
    reads no params file, and one started in another folder works in the project's (the
    stage's paths are relative to it). A new stage first drops the models that no role of
    these params names (a game's trained Refiner), as the flow does after each stage, so a
    long-lived worker does not grow."""
    global _last_stage
    if Path.cwd() != Path(project) and Path(project).is_dir():
        os.chdir(project)
    key = f"{stage}@{game}:{fingerprint}"
    if _last_stage is None or _last_stage[0] != key:
        if _last_stage is not None:
            release_models(params)
        _last_stage = (key, StageContext(stage, game, params))
    return _last_stage[1]


@task(
    # The params are in the fingerprint already; where the project lies changes no result.
    cache_policy=INPUTS - "params" - "project" + TASK_SOURCE,
    persist_result=True,
    retry_delay_seconds=[2, 10],
    task_run_name="{stage}@{game}:{label}",
)
def run_item(
    stage: str, game: str, label: str, item: Any, fingerprint: str, params: Params, project: str
) -> Any:
    """One work item of a stage (its result is persisted; a rerun with equal inputs reuses it)."""
    module = importlib.import_module(f"stages.{stage}")
    return module.work(worker_context(stage, game, params, fingerprint, project), item)


def run_items(ctx: StageContext, items: list[Any], fingerprint: str) -> tuple[list[Any], int]:
    """Run every item on the flow's task runner; their results in plan order, and how many
    were read from the cache. The progress bar advances as items finish."""
    task = run_item.with_options(retries=ctx.params.orchestration.task_retries)
    calls = [
        (
            ctx.stage,
            ctx.game,
            item.get("label", str(i)) if isinstance(item, dict) else str(i),
            item,
            fingerprint,
            ctx.params,
            str(Path.cwd()),
        )
        for i, item in enumerate(items)
    ]
    bar = progress(sum(_size(item) for item in items), f"{ctx.stage}@{ctx.game}", _unit(items))
    if isinstance(FlowRunContext.get().task_runner, ThreadPoolTaskRunner):
        # In the flow's own thread, one after another: Ctrl+C stops the running item at
        # once, where a pool's thread would finish it first.
        states = []
        for args, item in zip(calls, items, strict=True):
            states.append(task(*args, return_state=True))
            states[-1].result()  # a failed item (after its retries) stops the stage here
            bar.update(_size(item))
    else:
        futures = [task.submit(*args) for args in calls]
        size = {future: _size(item) for future, item in zip(futures, items, strict=True)}
        for future in as_completed(futures):
            future.result()  # a failed item (after its retries) stops the stage here
            bar.update(size[future])
        states = [future.state for future in futures]
    bar.close()
    return [state.result() for state in states], sum(state.name == "Cached" for state in states)


@flow(
    name="stage", flow_run_name="{stage}@{game}", log_prints=True, task_runner=in_process_runner()
)
def stage_flow(stage: str, game: str = "all") -> dict[str, Any]:
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
                    # all of params: a stage reads other sections too (grpo: score, sample);
                    # but not where items run, so a stage resumes on another task runner
                    "params": ctx.params.model_dump(mode="json", exclude={"orchestration"}),
                    "inputs": _digest(ctx.inputs),
                    "code": _digest([Path(module.__file__), LIBRARY]),
                },
                sort_keys=True,
            ).encode()
        ).hexdigest()[:16]
        results, cached = run_items(ctx, items, fingerprint)
        metrics = module.finish(ctx, results) or {}
        metrics["work_seconds"] = time.perf_counter() - t0
        metrics["items"] = len(items)
        metrics["items_cached"] = cached
        metrics["stage_seconds"] = time.perf_counter() - started
        tracker.log_metrics(metrics)
    release_models(ctx.params, keep_prefixes=getattr(module, "KEEP_PREFIXES", ()))
    return metrics


def run_stage(
    stage: str, game: str = "all", orchestration: OrchestrationParams | None = None
) -> dict[str, Any]:
    """Run one stage's flow on the task runner of ``orchestration`` (default: params'; the
    pipeline passes the one of its shared cluster)."""
    orchestration = orchestration or current_params().orchestration
    with api_for_workers(orchestration):
        return stage_flow.with_options(task_runner=task_runner(orchestration))(stage, game)
