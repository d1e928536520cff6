"""How many threads CPU inference (and CPU training) may use, judged from /proc.

Torch takes every core by default; on a shared machine that is slower than fewer threads,
because a parallel region waits on whichever of its threads another process descheduled.
A ``BackgroundLane`` runs work beside the caller's on the core its decoding leaves idle.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import torch

log = logging.getLogger(__name__)


def _busy_elsewhere(window: float = 0.3) -> float:
    """Cores kept busy by other processes, measured over ``window`` seconds.

    Not the load average: it counts this very process too, so after a minute of our own
    two-thread work it reads 2 and would leave us one thread. Here our own CPU time
    (/proc/self/stat) is subtracted from the machine's (/proc/stat).
    """

    def sample() -> tuple[float, float, float]:
        with open("/proc/stat") as fh:
            cpu = [float(x) for x in fh.readline().split()[1:]]
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        own = float(fields[11]) + float(fields[12])  # utime + stime, in clock ticks
        idle = cpu[3] + (cpu[4] if len(cpu) > 4 else 0.0)
        return sum(cpu), sum(cpu) - idle, own

    try:
        before = sample()
        time.sleep(window)
        after = sample()
    except (OSError, ValueError, IndexError):  # not Linux: the load average, minus ourselves
        return max(0.0, os.getloadavg()[0] - 1.0)
    return busy_cores_elsewhere(before, after, os.cpu_count() or 1)


def busy_cores_elsewhere(
    before: tuple[float, float, float], after: tuple[float, float, float], cores: int
) -> float:
    """Cores other processes kept busy between two (total, busy, own) tick samples."""
    total0, busy0, own0 = before
    total1, busy1, own1 = after
    if total1 <= total0:
        return 0.0
    return max(0.0, (busy1 - busy0) - (own1 - own0)) / (total1 - total0) * cores


def _persistently_busy(cores: int, samples: int = 3) -> float:
    """Cores other processes keep busy in every one of up to ``samples`` windows (the least
    seen): a burst (a server answering a request, a process exiting) must not leave a whole
    stage on one thread; a competitor that stays busy shows in each window."""
    least = float(cores)
    for _ in range(samples):
        least = min(least, _busy_elsewhere())
        if round(cores - least) >= cores:
            break
    return least


def set_threads(threads: int | None) -> None:
    """Threads for CPU inference: the configured number, else OMP_NUM_THREADS, else free cores.

    "Free" is the cores this process may use minus those other processes keep busy: with two
    threads on a two-core machine that another process keeps busy, every parallel region
    waits on a descheduled thread and a forward pass runs ~10x slower than with one thread.
    """
    if threads is None and os.environ.get("OMP_NUM_THREADS"):
        return
    if threads is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        threads = min(cores, max(1, round(cores - _persistently_busy(cores))))
    torch.set_num_threads(max(1, threads))
    log.info("local backend: %d torch threads", torch.get_num_threads())


class BackgroundLane:
    """``fn(*args, pace=...)`` in a daemon thread beside the caller's own work.

    The caller's small-batch decoding (a tournament's tables) leaves most of a second core
    idle; a lane on one torch thread uses it, and once the caller is done (the ``with``
    block ends) the lane's next ``pace()`` gives it the caller's threads. ``fn`` calls
    ``pace`` between its units of work. Prefect's run context goes with the lane (its logs
    reach the run); its exception is raised by ``join``. A daemon: an interrupted caller
    does not wait for it.
    """

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self._threads = torch.get_num_threads()
        self._caller_busy = threading.Event()
        self._outcome: tuple[bool, Any] | None = None
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._run, fn, args), name="background-lane", daemon=True
        )

    def pace(self) -> None:
        """In the lane: one thread while the caller works, the caller's threads after."""
        want = 1 if self._caller_busy.is_set() else self._threads
        if torch.get_num_threads() != want:
            torch.set_num_threads(want)

    def _run(self, fn: Callable[..., Any], args: tuple) -> None:
        try:
            self.pace()
            self._outcome = (True, fn(*args, pace=self.pace))
        except BaseException as exc:  # raised in the caller, by join
            self._outcome = (False, exc)

    def __enter__(self) -> BackgroundLane:
        self._caller_busy.set()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._caller_busy.clear()

    def join(self) -> Any:
        """The lane's result, once it ends (its exception, raised here)."""
        self._thread.join()
        torch.set_num_threads(self._threads)  # the lane's setting is also torch's default
        assert self._outcome is not None
        ok, value = self._outcome
        if not ok:
            raise value
        return value
