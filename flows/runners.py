"""Where a stage's work items run: the Prefect task runner that ``orchestration`` names.

- ``threads``: in this process, one item at a time, in the flow's own thread (flows/stage.py).
  The in-process models (the embedded default: one checkpoint for every role) are shared
  by every item, and the local backend is not safe for concurrent calls (its prompt-prefix
  stores are plain dicts, its forward passes use every core already); parallelism comes
  from worker processes instead.
- ``dask`` / ``ray``: worker processes, an item each at a time, items in parallel. With
  ``address`` they join a running cluster; without, a local cluster of ``workers``
  processes starts with the stage and stops with it, or with the pipeline's run
  (``shared_cluster``).

The packages of dask and ray are the ``cluster`` extra; params refuse those runners at load
when it is missing, so the imports below only run where they can succeed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from stackelberg.params import OrchestrationParams


def in_process_runner() -> ThreadPoolTaskRunner:
    """This process, one item at a time (see the module docstring for why)."""
    return ThreadPoolTaskRunner(max_workers=1)


def _local_dask(orchestration: OrchestrationParams) -> dict[str, Any]:
    """A local Dask cluster: worker processes of one thread (an item's models use the cores
    of its process), no dashboard (its fixed port would clash between two clusters)."""
    workers = orchestration.workers or os.cpu_count() or 1
    return {
        "n_workers": workers,
        "processes": True,
        "threads_per_worker": 1,
        "dashboard_address": None,
    }


def _local_ray(orchestration: OrchestrationParams) -> dict[str, Any]:
    """A new local Ray instance (not one that `ray start` left running here): one item per
    worker process and CPU, no dashboard."""
    workers = orchestration.workers or os.cpu_count() or 1
    return {"address": "local", "num_cpus": workers, "include_dashboard": False}


def task_runner(orchestration: OrchestrationParams) -> TaskRunner:
    """The task runner of ``orchestration.task_runner``, at its address or local."""
    if orchestration.task_runner == "dask":
        from prefect_dask import DaskTaskRunner

        if orchestration.address:
            return DaskTaskRunner(address=orchestration.address)
        return DaskTaskRunner(cluster_kwargs=_local_dask(orchestration))
    if orchestration.task_runner == "ray":
        from prefect_ray import RayTaskRunner

        if orchestration.address:
            return RayTaskRunner(address=orchestration.address)
        return RayTaskRunner(init_kwargs=_local_ray(orchestration))
    return in_process_runner()


@contextmanager
def shared_cluster(orchestration: OrchestrationParams) -> Iterator[OrchestrationParams]:
    """One local cluster for several stages (the pipeline's run); yields the orchestration
    that joins it. A local cluster takes seconds to start and to stop (about 7 s and 3 s
    for two Dask workers on the 2-core development machine), and its workers keep their
    models loaded from stage to stage, as the in-process pipeline does. Threads, and a
    cluster at an address, are yielded as they are."""
    if orchestration.task_runner == "threads" or orchestration.address:
        yield orchestration
    elif orchestration.task_runner == "dask":
        from distributed import LocalCluster

        with LocalCluster(**_local_dask(orchestration)) as cluster:
            yield orchestration.model_copy(
                update={"address": cluster.scheduler_address, "workers": None}
            )
    else:
        import ray

        ray.init(**_local_ray(orchestration))  # each stage's RayTaskRunner joins it
        try:
            yield orchestration
        finally:
            ray.shutdown()


@contextmanager
def api_for_workers(orchestration: OrchestrationParams) -> Iterator[None]:
    """Worker processes report their task runs to this process's Prefect API.

    Without ``PREFECT_API_URL`` Prefect starts a temporary server in every process that
    asks for one, so each worker of a local cluster would start its own (seconds each, its
    runs missing from the flow's). Here this process's temporary server (the one its flows
    use anyway) starts first and is named to the workers through the settings Prefect sends
    with each task. Workers on other machines cannot reach it: they need a server that
    they can, in ``PREFECT_API_URL`` (docs/scaling.md, "On a cluster").
    """
    if orchestration.task_runner == "threads" or PREFECT_API_URL.value():
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the one get_client starts without PREFECT_API_URL
    server.start()
    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        yield
