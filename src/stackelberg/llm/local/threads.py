"""How many threads CPU inference (and CPU training) uses: a count fixed by the settings, so
that the numbers are too.

Torch's CPU kernels split some work by thread count (``thread_count``), so the count is part
of what a model computes: the machine's cores unless configured, not the cores its load
leaves free (judged from /proc: ``free_cores``, asked for with ``threads: 0``). Torch takes
every core by default; on a shared machine that is slower than fewer threads, because a
parallel region waits on whichever of its threads another process descheduled.
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
            total, busy = cpu_ticks(fh.readline(), own_niced=os.nice(0) > 0)
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        own = float(fields[11]) + float(fields[12])  # utime + stime, in clock ticks
        return total, busy, own

    try:
        before = sample()
        time.sleep(window)
        after = sample()
    except (OSError, ValueError, IndexError):  # not Linux: the load average, minus ourselves
        return max(0.0, os.getloadavg()[0] - 1.0)
    return busy_cores_elsewhere(before, after, os.cpu_count() or 1)


def cpu_ticks(line: str, own_niced: bool = False) -> tuple[float, float]:
    """(total, busy) clock ticks of /proc/stat's ``cpu`` line. Time of processes at a lower
    priority (``nice``) is not busy for us: the scheduler gives our threads the core when
    they want it (int8 decoding beside a ``nice 19`` busy loop: 28-29 ms a step on two
    threads, 32 on one, as on an idle machine). A process that is niced itself counts
    there too, so then that time stays busy."""
    cpu = [float(x) for x in line.split()[1:]]
    idle = cpu[3] + (cpu[4] if len(cpu) > 4 else 0.0)
    lower = 0.0 if own_niced else cpu[1]
    return sum(cpu), sum(cpu) - idle - lower


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


def free_cores() -> int:
    """The cores this process may use minus those other processes keep busy at its priority
    or above (``cpu_ticks``): with two threads on a two-core machine that another process
    keeps busy, every parallel region waits on a descheduled thread and a forward pass runs
    ~10x slower than with one thread."""
    cores = machine_cores()
    return min(cores, max(1, round(cores - _persistently_busy(cores))))


def machine_cores() -> int:
    """The cores this process may run on: the default count, fixed for a machine (and so
    its numbers), whatever its load."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def thread_count(threads: int | None) -> int:
    """The torch threads of CPU work: ``threads`` as configured (0: ``free_cores``), else
    OMP_NUM_THREADS, else the machine's cores (``machine_cores``).

    Not the free cores unless asked: torch's float32 kernels give other numbers on another
    thread count (torch 2.13 on the default run's CPU, 1 against 2 threads: a matmul over 5
    to 7 or 9 to 11 rows, as in a decode step of that many sequences; attention over 1 to 3
    query rows), and a count that followed the load made a stage's outputs depend on when, and
    after what, it ran (the evaluate stage's held-out reward of a pipeline run, 0.7812 /
    0.9061 before / after training, was 0.7748 / 0.8630 when the stage ran again alone).
    The machine's cores are the fastest count on a machine of one's own; on a shared one,
    ``threads: 1`` is never slow (a parallel region waits on whichever of its threads
    another process descheduled), and ``threads: 0`` follows the load, numbers and all.
    """
    if threads == 0:
        return free_cores()
    if threads is None:
        first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
        threads = int(first) if first.isdigit() else machine_cores()
    return max(1, threads)


def set_threads(threads: int | None) -> int:
    """Run torch on ``thread_count(threads)`` threads in the calling thread; that count."""
    count = thread_count(threads)
    torch.set_num_threads(count)
    log.info("local backend: %d torch threads", count)
    return count


#: while a ``BackgroundLane`` runs: the caller's threads (0: no lane)
_LANES = {"threads": 0}
_LANES_LOCK = threading.Lock()


def pace(threads: int | None = None) -> None:
    """Torch threads for the calling thread, before each forward pass of a local model:
    ``threads``, its backend's count (None: the count as it is); while a ``BackgroundLane``
    runs, half of it (of the caller's count for None), at least one, on either side until
    the lane ends, so that neither side's numbers depend on when the other finished. Before
    each pass, not once: torch keeps a count per thread, and an earlier stage, another
    backend or a lane may have left another one."""
    with _LANES_LOCK:
        lane = _LANES["threads"]
    if lane:
        want = max(1, (threads or lane) // 2)
    elif threads:
        want = threads
    else:
        return
    if torch.get_num_threads() != want:
        torch.set_num_threads(want)


class BackgroundLane:
    """``fn(*args)`` in a daemon thread beside the caller's work (the ``with`` block).

    A tournament decodes a token at a time for a few tables, which leaves most of a second
    core idle, and one decoding thread is not much slower than two; the lane's forward
    passes use that core. Each side runs on its share of the threads (``pace``, called by
    the local backend) until the lane ends. Prefect's run context goes with the lane (its
    logs reach the run); its exception is raised by ``join``. A daemon: an interrupted
    caller does not wait for it. One lane at a time.
    """

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self._outcome: tuple[bool, Any] | None = None
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._run, fn, args), name="background-lane", daemon=True
        )

    def _run(self, fn: Callable[..., Any], args: tuple) -> None:
        try:
            pace()
            self._outcome = (True, fn(*args))
        except BaseException as exc:  # raised in the caller, by join
            self._outcome = (False, exc)

    def __enter__(self) -> BackgroundLane:
        with _LANES_LOCK:
            if _LANES["threads"]:
                raise RuntimeError("a BackgroundLane is running already")
            _LANES.update(threads=torch.get_num_threads())
        pace()
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is not None and not issubclass(exc_type, KeyboardInterrupt | SystemExit):
            self.join_quietly()  # a retry must not meet this lane still at work

    def join_quietly(self) -> None:
        """Wait for the lane and give the caller its threads back, its outcome unread."""
        self._thread.join()
        with _LANES_LOCK:
            threads = _LANES["threads"]
            _LANES.update(threads=0)
        if threads:
            torch.set_num_threads(threads)

    def join(self) -> Any:
        """The lane's result, once it ends (its exception, raised here); the caller's
        threads back."""
        self.join_quietly()
        assert self._outcome is not None
        ok, value = self._outcome
        if not ok:
            raise value
        return value
