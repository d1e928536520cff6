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

import contextlib
import functools
import gc
import hashlib
import importlib
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import INPUTS as TASK_INPUTS
from prefect.cache_policies import TASK_SOURCE
from prefect.context import FlowRunContext
from prefect.exceptions import MissingContextError
from prefect.futures import as_completed
from prefect.logging import get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

import stackelberg
from flows import api
from flows.context import (
    StageContext,
    current_params,
    release_models,
    stage_context,
    stage_module,
)
from flows.graph import ONCE
from flows.runners import api_for_workers, in_process_runner, task_runner
from flows.tracking import setup_mlflow, stage_run
from stackelberg.io import atomic_writer
from stackelberg.llm.embedded import cache_dir
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


#: files from this size on keep their hash on disk, with their size and modification time
KEPT_DIGEST_BYTES = 1 << 20


@functools.lru_cache(maxsize=4096)
def _file_digest(path: Path, size: int, mtime_ns: int) -> bytes:
    """One file's hash, read in chunks (a checkpoint is never held whole in memory), once
    while its size and modification time stay: once per process, and for a large file once
    at all, its hash kept in the cache (models/base's weights, about a second to hash, feed
    20 stages; ``dvc repro`` runs each in a process of its own)."""
    memo = None
    if size >= KEPT_DIGEST_BYTES:
        name = hashlib.sha256(str(path).encode()).hexdigest()[:16]
        memo = cache_dir() / "digests" / f"file-{name}.json"
        try:
            kept = json.loads(memo.read_text())
            if kept["stat"] == [size, mtime_ns]:
                return bytes.fromhex(kept["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    with path.open("rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").digest()
    if memo is not None:
        with contextlib.suppress(OSError):  # a read-only cache only costs hashing again
            with atomic_writer(memo) as out:
                json.dump({"stat": [size, mtime_ns], "sha256": digest.hex()}, out)
    return digest


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
        if _last_stage is not None:  # the stores the last stage keeps stay (KEEP_PREFIXES)
            last = importlib.import_module(stage_module(_last_stage[1].stage))
            release_models(params, keep_prefixes=getattr(last, "KEEP_PREFIXES", ()))
        _last_stage = (key, StageContext(stage, game, params))
    return _last_stage[1]


@task(
    # The params are in the fingerprint already; where the project lies changes no result.
    cache_policy=TASK_INPUTS - "params" - "project" + TASK_SOURCE,
    persist_result=True,
    retry_delay_seconds=[2, 10],
    task_run_name="{stage}@{game}:{label}",
)
def run_item(
    stage: str, game: str, label: str, item: Any, fingerprint: str, params: Params, project: str
) -> Any:
    """One work item of a stage (its result is persisted; a rerun with equal inputs reuses it)."""
    module = importlib.import_module(stage_module(stage))
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
def stage_flow(stage: str, game: str = ONCE) -> dict[str, Any]:
    """Run one stage for one game (``graph.ONCE`` for a stage that is not per game)."""
    module = importlib.import_module(stage_module(stage))
    ctx: StageContext = stage_context(stage, game)
    started = time.perf_counter()
    with stage_run(ctx) as tracker:
        t0 = time.perf_counter()
        items = module.plan(ctx)
        fingerprint = item_fingerprint(ctx, module)
        results, cached = run_items(ctx, items, fingerprint)
        metrics = module.finish(ctx, results) or {}
        metrics["work_seconds"] = time.perf_counter() - t0
        metrics["items"] = len(items)
        metrics["items_cached"] = cached
        metrics["stage_seconds"] = time.perf_counter() - started
        tracker.log_metrics(metrics)
    release_models(ctx.params, keep_prefixes=getattr(module, "KEEP_PREFIXES", ()))
    return metrics


def item_fingerprint(ctx: StageContext, module: Any) -> str:
    """What a stage's cached items are valid for: all of params but where items run (a
    stage reads other sections too, grpo: score, sample; and it resumes on another task
    runner), the files it reads (its deps in dvc.yaml) and its code."""
    return hashlib.sha256(
        json.dumps(
            {
                "params": ctx.params.model_dump(mode="json", exclude={"orchestration"}),
                "inputs": _digest(ctx.inputs),
                "code": _digest([Path(module.__file__), LIBRARY]),
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()[:16]


@contextlib.contextmanager
def no_heartbeats() -> Iterator[None]:
    """Flows within send no heartbeats: in the pipeline, its stages' subflows (they run in
    its flow's process, whose heartbeats already tell a server that it lives); in a stage's
    own process, its flow (its temporary server stops with it; no one waits on them). Each
    heartbeat thread cost its flow up to a second at its end (it sleeps in one-second steps
    before it sees the stop). Settings made once: each change costs 0.3 s."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def _start_meanwhile(stage: str) -> None:
    """What the stage's flow does first, done while this process's temporary Prefect
    server starts (flows/api.py): import the stage's module (torch with it, where it needs
    it) and set MLflow up. A failure is left to the flow, which meets it where it did."""
    try:
        importlib.import_module(stage_module(stage))
        setup_mlflow(current_params().tracking)
    except Exception:  # noqa: BLE001  reported by the flow
        pass


def run_stage(
    stage: str, game: str = ONCE, orchestration: OrchestrationParams | None = None
) -> dict[str, Any]:
    """Run one stage's flow on the task runner of ``orchestration`` (default: params'; the
    pipeline passes the one of its shared cluster)."""
    orchestration = orchestration or current_params().orchestration
    if api.starting():  # python -m flows.run: this process's start (flows/run.py)
        _start_meanwhile(stage)
        # The start is over: what it imported lives as long as the process, so the cycle
        # collector (off during the start, which makes no garbage) skips it from now on.
        gc.freeze()
        gc.enable()
        api.ready()
    with contextlib.ExitStack() as stack:
        if api.own():
            stack.enter_context(no_heartbeats())
        stack.enter_context(api_for_workers(orchestration))
        return stage_flow.with_options(task_runner=task_runner(orchestration))(stage, game)
