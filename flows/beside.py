"""Stages that load no model run in a worker process, beside the pipeline's model stages.

The tactics, strategist and lspo stages play scripted games in pure Python on one core
(about half a minute together on the development machine), while the model stages leave a
core idle now and then (Python between forward passes, bookkeeping). In a thread of the
pipeline's process they would hold its interpreter lock against the models' Python code;
in a process of their own, at the lowest priority, they use those gaps. A stage says it loads no model with ``LOADS_MODELS = False`` in its
module. The worker is one process, started (by spawn) when the first such stage is ready
and stopped when the last ends, so its memory (libraries, about 0.4-0.65 GB) is held only
then; it reports to this process's Prefect server and its MLflow runs nest under the
pipeline's.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import time
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any


def loads_models(stage: str) -> bool:
    """Whether a stage loads models (the default); False where its module says so."""
    return getattr(importlib.import_module(f"stages.{stage}"), "LOADS_MODELS", True)


def _defer() -> None:
    """The worker takes the CPU time the model stages leave: at the lowest priority it runs
    in their gaps (Python between forward passes, bookkeeping) instead of taking half
    their cores (at equal priority the first label stage took 46 s instead of 26 s)."""
    try:
        os.nice(19)
    except (OSError, AttributeError):  # not permitted, or not on this platform
        pass


def run_in_worker(stage: str, game: str, api_url: str | None) -> dict[str, Any]:
    """One stage's flow in the worker process; its metrics, with its wall time and the
    worker's peak memory."""
    from flows.errors import quiet_prefect

    quiet_prefect()
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.pipeline import peak_rss_gib
    from flows.stage import run_stage

    started = time.perf_counter()
    with temporary_settings(updates={PREFECT_API_URL: api_url} if api_url else {}):
        metrics = run_stage(stage, game)
    metrics["beside_wall_seconds"] = time.perf_counter() - started
    metrics["worker_peak_rss_gib"] = peak_rss_gib()
    return metrics


def current_api_url() -> str | None:
    """The Prefect API this process's flows report to: the configured one, else the
    temporary server Prefect started for this process (the worker would start its own)."""
    from prefect.settings import PREFECT_API_URL

    if url := PREFECT_API_URL.value():
        return url
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the running one: one instance per port
    return server.api_url if server.running else None


class BesideStages:
    """The worker process and the stages it runs, by name (``stage@game``)."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self.running: dict[str, Future] = {}

    def submit(self, name: str) -> None:
        stage, _, game = name.partition("@")
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn"), initializer=_defer
            )
        future = self._pool.submit(run_in_worker, stage, game or "all", current_api_url())
        self.running[name] = future

    def finished(self, wait_for: set[str] | None = None) -> list[tuple[str, dict, float]]:
        """The stages that ended (name, metrics, the stage's wall seconds in the worker),
        waiting for those of ``wait_for``; a stage's error is raised here. The worker
        stops when none is left."""
        done = []
        for name, future in list(self.running.items()):
            if future.done() or (wait_for is not None and name in wait_for):
                metrics = future.result()
                del self.running[name]
                done.append((name, metrics, metrics["beside_wall_seconds"]))
        if not self.running:
            self.close()
        return done

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
