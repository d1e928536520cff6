"""Bounded concurrency for HTTP backends: run calls in threads, yield each result as it lands.

Results are yielded as they complete so that the caller caches each one at once; when some
calls fail, the others still finish and are yielded before the first error is raised, so a
failed batch loses nothing that was already paid for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import TypeVar

T = TypeVar("T")


class CallPool:
    """A thread pool of ``max_concurrency`` workers shared by one backend's batches."""

    def __init__(self, max_concurrency: int) -> None:
        self.max_concurrency = max_concurrency
        self._executor: ThreadPoolExecutor | None = None

    def run(self, calls: Sequence[Callable[[], T]]) -> Iterator[tuple[int, T]]:
        """Yield ``(index, result)`` per call in completion order; then raise the first error."""
        if len(calls) == 1:  # no thread hop for a single call
            yield 0, calls[0]()
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="llm")
        futures: dict[Future[T], int] = {self._executor.submit(c): i for i, c in enumerate(calls)}
        error: BaseException | None = None
        for fut in as_completed(futures):
            exc = fut.exception()
            if exc is not None:
                error = error or exc
                continue
            yield futures[fut], fut.result()
        if error is not None:
            raise error

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
