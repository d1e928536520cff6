"""Retries of transient failures: exponential backoff with jitter, within a bounded total.

Backends turn each failure into an ``LLMError``; only ``TransientError`` (429, 5xx, timeouts,
connection errors, malformed bodies) is retried. A server's retry-after is honoured. User
mistakes (missing key, unknown model, bad request, prompt too long) fail at once.

Why not the clients' own retries: httpx retries no HTTP statuses, and the anthropic SDK waits
whatever Retry-After a server sends (even an hour), has no bound on the total time and retries
409s; one policy for every backend keeps the same rules everywhere.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from stackelberg.llm.errors import RetriesExhaustedError, TransientError

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a transient failure."""

    max_retries: int = 5  # retries after the first attempt
    base_s: float = 0.5  # first backoff; doubles with each retry
    max_backoff_s: float = 30.0  # cap of one wait (also caps a server's retry-after)
    max_total_s: float = 300.0  # no retry starts after this much time has passed

    def backoff(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (1-based): equal jitter, or retry-after."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_backoff_s)
        cap = min(self.max_backoff_s, self.base_s * 2 ** (retry - 1))
        return cap / 2 + rng.uniform(0, cap / 2)

    def call(
        self,
        fn: Callable[[], T],
        what: str,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> T:
        """Run ``fn``, retrying ``TransientError``; raise ``RetriesExhaustedError`` in the end."""
        rng = rng or random.Random()
        start = time.monotonic()
        retry = 0
        while True:
            try:
                return fn()
            except TransientError as err:
                retry += 1
                elapsed = time.monotonic() - start
                wait = self.backoff(retry, err.retry_after, rng)
                if retry > self.max_retries or elapsed + wait > self.max_total_s:
                    raise RetriesExhaustedError(
                        f"{what}: gave up after {retry} attempts in {elapsed:.1f}s; last error: {err}"
                    ) from err
                log.warning("%s: %s; retry %d in %.2fs", what, err, retry, wait)
                sleep(wait)
