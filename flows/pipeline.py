"""The whole pipeline as one Prefect flow, over the DAG that dvc.yaml defines.

The stage order, and whether a stage is stale, come from DVC itself (its graph and its
status), so there is one DAG definition only. A stale stage runs in this process as a
Prefect subflow (models stay loaded between stages, Prefect starts once), then
``dvc commit`` records it in dvc.lock with the same hashes ``dvc repro`` would write.
Up-to-date stages are skipped, so a second run with nothing changed takes seconds.

    python -m flows.pipeline                 # everything that is stale
    python -m flows.pipeline grpo@werewolf   # one stage and what it needs
    python -m flows.pipeline --force         # rerun every stage
"""

from __future__ import annotations

import argparse
import importlib
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from prefect import flow

from flows.errors import USER_ERRORS, PipelineError, quiet_prefect
from stackelberg import INTERRUPTED_STATUS


def _repo():
    from dvc.repo import Repo

    return Repo(".")


def stage_order(targets: list[str] | None = None) -> list[str]:
    """Stage names (``label@werewolf``) in dependency order, limited to ``targets`` and their
    upstream stages when given."""
    with _repo() as repo:
        return _ordered(repo, targets)


def unmade_inputs(order: list[str]) -> list[tuple[str, str]]:
    """``(stage, path)`` for each file a stage of ``order`` reads that is neither there nor
    written by any stage: a ``games`` list without a game whose outputs a stage of every
    game reads (the report reads each game's metrics; lspo, Werewolf's self-play). DVC
    would stop at that stage, after everything before it ran."""
    with _repo() as repo:
        return _unmade(repo, order)


def checked_order(targets: list[str] | None = None) -> list[str]:
    """``stage_order``, refused in one line when a stage would stop at a missing input:
    before Prefect starts (``main``), or before any stage (a deployed flow). One DVC index
    serves both."""
    from flows.context import current_params

    with _repo() as repo:
        order = _ordered(repo, targets)
        missing = _unmade(repo, order)
    if missing:
        stage, path = missing[0]
        games = ", ".join(current_params().games)
        raise PipelineError(
            f"{stage} reads {path}, which no stage makes with games: [{games}] (the report "
            "reads every game's metrics, lspo Werewolf's self-play); keep every game in "
            "params' games and name the stages to run: python -m flows.pipeline evaluate@GAME"
        )
    return order


def _ordered(repo, targets: list[str] | None) -> list[str]:
    import networkx as nx

    graph = repo.index.graph
    order = [
        s.addressing
        for s in nx.lexicographical_topological_sort(
            graph.reverse(copy=False), key=lambda s: _locality(s.addressing)
        )
    ]
    if not targets:
        return order
    by_name = {s.addressing: s for s in graph.nodes}
    unknown = [t for t in targets if t not in by_name]
    if unknown:
        raise PipelineError(f"unknown stage {unknown[0]!r}; known: {', '.join(order)}")
    wanted = set()
    for t in targets:
        wanted.add(t)
        wanted.update(s.addressing for s in nx.descendants(graph, by_name[t]))
    return [s for s in order if s in wanted]


def _unmade(repo, order: list[str]) -> list[tuple[str, str]]:
    from dvc.dependency.param import ParamsDependency

    stages = {s.addressing: s for s in repo.index.stages}
    made = [Path(o.fs_path) for s in stages.values() for o in s.outs]
    root = Path(repo.root_dir)
    missing = []
    for name in order:
        for dep in stages[name].deps:
            path = Path(dep.fs_path)
            if isinstance(dep, ParamsDependency) or path.exists():
                continue
            if not any(path.is_relative_to(o) or o.is_relative_to(path) for o in made):
                missing.append((name, str(path.relative_to(root))))
    return missing


#: stages that run back to back for one game: the Measurer's contexts of the score stage
#: are still stored when the warm start and GRPO score the same instances next
GAME_CHAIN = ("sample", "score", "warm_start", "grpo")


def _locality(name: str) -> tuple[int, int, int, str]:
    """Where a ready stage goes among the ready ones: stage by stage in dvc.yaml's order
    (a model serves every game's stage once loaded: the int8 labeler, the players), but
    ``GAME_CHAIN`` game by game; games in params' order."""
    from flows import graph
    from flows.context import current_params

    stage, _, game = name.partition("@")
    games = current_params().games
    game_rank = games.index(game) if game in games else (-1 if not game else len(games))
    stages = list(graph.stages())
    rank = stages.index(stage) if stage in stages else len(stages)
    phase = min(stages.index(s) for s in GAME_CHAIN) if stage in GAME_CHAIN else rank
    return (phase, game_rank, rank, name)


def peak_rss_gib() -> float:
    """This process's peak resident memory so far, in GiB (Linux reports KiB, as does
    ``/usr/bin/time -v``): the stage after which it rises is the one that set it."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def stage_time_table(times: list[tuple[str, float, float]]) -> str:
    """The wall time of each stage that ran, slowest first, with their total, and the peak
    memory when each ended: where a run's time and memory went, at a glance."""
    from tabulate import tabulate

    rows = sorted(times, key=lambda t: -t[1])
    total = sum(t[1] for t in times)
    peak = max((t[2] for t in times), default=0.0)
    return tabulate(
        [
            *((name, f"{seconds:.1f}", f"{rss:.2f}") for name, seconds, rss in rows),
            ("total", f"{total:.1f}", f"{peak:.2f}"),
        ],
        headers=("stage", "wall s", "peak RSS GiB so far"),
        colalign=("left", "right", "right"),
        disable_numparse=True,
    )


def is_stale(name: str) -> bool:
    with _repo() as repo:
        return bool(repo.status(targets=[name], with_deps=False))


def record_in_lock(name: str) -> None:
    """What `dvc repro` does after running a stage: hash deps/outs, cache outs, write dvc.lock
    (read plainly: DVC's comment-keeping parse of the lock was half of each commit)."""
    from flows.dvc_internals import plain_lock_parse

    with _repo() as repo, plain_lock_parse():
        repo.commit(name, force=True)


@flow(name="stackelberg-pipeline", log_prints=True)
def pipeline(
    targets: list[str] | None = None, force: bool = False, order: list[str] | None = None
) -> dict[str, Any]:
    """Run every stale stage in order; returns timings (stage work vs orchestration).
    ``order``: ``checked_order(targets)``, when ``main`` has already checked it before Prefect."""
    import flows.dvc_internals  # noqa: F401  a DVC it cannot drive fails here, before any stage
    from flows import graph
    from flows.context import current_params, freeze_libraries
    from flows.runners import shared_cluster
    from flows.stage import no_heartbeats, run_stage
    from flows.tracking import pipeline_run

    started = time.perf_counter()
    params = current_params()
    if order is None:
        order = checked_order(targets)
    ran, skipped, work, times = [], [], 0.0, []
    orchestration = None  # a local cluster, shared by the stages, starts with the first one
    with pipeline_run(params) as parent, ExitStack() as cluster, no_heartbeats():
        for i, name in enumerate(order, 1):
            if not force and not is_stale(name):
                skipped.append(name)
                print(f"[{i}/{len(order)}] {name}: up to date")
                continue
            stage, _, game = name.partition("@")
            print(f"[{i}/{len(order)}] {name}: running")
            freeze_libraries()
            t0 = time.perf_counter()
            if orchestration is None:
                orchestration = cluster.enter_context(shared_cluster(params.orchestration))
            metrics = run_stage(stage, game or graph.ONCE, orchestration)
            record_in_lock(name)
            work += metrics.get("work_seconds", 0.0)
            times.append((name, time.perf_counter() - t0, peak_rss_gib()))
            print(
                f"[{i}/{len(order)}] {name}: done in {times[-1][1]:.1f}s "
                f"(peak RSS so far {times[-1][2]:.2f} GiB)"
            )
            ran.append(name)
        wall = time.perf_counter() - started
        summary = {
            "wall_seconds": wall,
            "stage_work_seconds": work,
            "orchestration_seconds": wall - work,
            "orchestration_fraction": (wall - work) / wall if wall else 0.0,
            "stages_run": len(ran),
            "stages_skipped": len(skipped),
        }
        parent.log_metrics(summary)
    if times:
        print(f"wall time per stage:\n{stage_time_table(times)}")
    print(
        f"pipeline: {len(ran)} stages run, {len(skipped)} up to date, {wall:.1f}s "
        f"(orchestration {summary['orchestration_seconds']:.1f}s, "
        f"{summary['orchestration_fraction']:.1%})"
    )
    summary_file = graph.stage("report").output(graph.ONCE)
    if summary_file.exists():
        print(f"summary: {summary_file.resolve()}")
    return summary


def import_model_libraries() -> None:
    """Import torch and transformers while Prefect starts its server (seconds in which this
    process waits on another): the first stage that loads a model finds them imported. A
    failing import fails again, with its message, where a stage needs it."""
    try:
        importlib.import_module("stackelberg.llm.local.backend")
    except Exception:  # noqa: BLE001  reported by the stage that imports it
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m flows.pipeline", description=__doc__.split("\n")[0]
    )
    parser.add_argument("targets", nargs="*", help="stages to bring up to date (default: all)")
    parser.add_argument("--force", action="store_true", help="rerun stages even if up to date")
    args = parser.parse_args(argv)
    quiet_prefect()
    warm = threading.Thread(target=import_model_libraries, name="import-models", daemon=True)
    try:
        from flows.context import current_params

        current_params()  # a params file that cannot work stops here, before Prefect starts
        warm.start()
        order = checked_order(args.targets or None)  # as does a stage that cannot run
        pipeline(args.targets or None, args.force, order)
    except (*USER_ERRORS, PipelineError) as exc:
        print(f"pipeline: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "pipeline: interrupted; finished work is kept and resumes on the next run",
            file=sys.stderr,
        )
        return INTERRUPTED_STATUS
    finally:
        if warm.is_alive():
            warm.join()  # an interpreter must not shut down in the middle of an import
    return 0


if __name__ == "__main__":
    sys.exit(main())
