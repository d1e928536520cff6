"""Requests of concurrent clients gathered into shared batches on one model thread.

A model computes a batch of prompts in about the time of one, so the requests that wait
while a batch runs are served together by the next: one worker thread takes every request
queued (up to ``max_batch``; the first of a batch waits ``wait_s`` for others to join it)
and hands them to ``serve`` in one call. The worker owns the models: no two threads ever
run a forward pass or a tokenizer at once. The queue is bounded: a request that finds it
full is refused at once (``Busy``) rather than left to wait without end, and a request whose
client has gone before its batch starts is dropped (its future cancelled).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, NamedTuple

log = logging.getLogger(__name__)


class Busy(Exception):
    """The queue is full: the client should retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Job(NamedTuple):
    work: Any
    future: Future


_STOP = object()


class Collector:
    """Gathers submitted work into batches for ``serve`` (one answer or exception per work
    item, in order), run on one worker thread."""

    def __init__(
        self,
        serve: Callable[[Sequence[Any]], Sequence[Any]],
        max_queue: int,
        max_batch: int,
        wait_s: float = 0.0,
    ) -> None:
        self.serve = serve
        self.max_batch = max_batch
        self.wait_s = wait_s
        self._queue: queue.Queue[Any] = queue.Queue(max_queue)
        self._thread = threading.Thread(target=self._work, name="model", daemon=True)
        self.batch_sizes: list[int] = []  # of each call to serve: what batching achieved

    def start(self) -> Collector:
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop after the batch in progress; what still waits is cancelled."""
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is not _STOP:
                job.future.cancel()
        self._queue.put(_STOP)
        if self._thread.is_alive():
            self._thread.join()

    def queued(self) -> int:
        """Requests waiting for a batch."""
        return self._queue.qsize()

    def waiting(self) -> int:
        """Queued requests whose clients still wait (a client gone cancels its request)."""
        with self._queue.mutex:
            return sum(job is not _STOP and not job.future.cancelled() for job in self._queue.queue)

    def submit(self, work: Any) -> Future:
        """Queue ``work``; its future holds the answer. Raises Busy when the queue is full."""
        future: Future = Future()
        try:
            self._queue.put_nowait(_Job(work, future))
        except queue.Full:
            raise Busy(
                f"the server is busy: {self._queue.maxsize} requests are waiting; retry shortly",
                retry_after=1,
            ) from None
        return future

    def _batch(self) -> list[_Job] | None:
        """The next batch: the first request to come, then those queued with it (None: stop)."""
        first = self._queue.get()
        if first is _STOP:
            return None
        jobs = [first]
        deadline = time.monotonic() + self.wait_s
        while len(jobs) < self.max_batch:
            try:
                left = deadline - time.monotonic()
                job = self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if job is _STOP:
                self._queue.put(_STOP)  # seen again once this batch is served
                break
            jobs.append(job)
        return jobs

    def _work(self) -> None:
        while (jobs := self._batch()) is not None:
            live = [job for job in jobs if job.future.set_running_or_notify_cancel()]
            if not live:
                continue
            self.batch_sizes.append(len(live))
            try:
                answers = list(self.serve([job.work for job in live]))
                if len(answers) != len(live):
                    raise RuntimeError(f"serve gave {len(answers)} answers to {len(live)} jobs")
            except Exception as err:  # noqa: BLE001 (the worker must outlive any batch)
                log.exception("a batch failed")
                answers = [err] * len(live)
            for job, answer in zip(live, answers, strict=True):
                if isinstance(answer, BaseException):
                    job.future.set_exception(answer)
                else:
                    job.future.set_result(answer)
