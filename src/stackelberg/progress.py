"""Progress of long work (games, instances, GRPO steps): done out of total, rate, time left.

One tqdm bar per loop. On a terminal it draws in place; anywhere else (a log file, a
Prefect worker, CI) each refresh becomes one line on the ``stackelberg.progress`` logger,
at most every ``STACKELBERG_PROGRESS_SECONDS`` (default 10) plus the first and the last,
so a long run's log shows it moving without a line per item. ``flows`` forwards that
logger to the Prefect run's log, which the UI shows.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from typing import Any

LOGGER = logging.getLogger("stackelberg.progress")
#: a log line: no bar drawing, just the numbers
LOG_FORMAT = "{desc}: {n_fmt}/{total_fmt} ({percentage:.0f}%) [{elapsed}<{remaining}, {rate_fmt}]"
#: seconds between two log lines of one bar when stderr is not a terminal
INTERVAL_ENV = "STACKELBERG_PROGRESS_SECONDS"


class _LogLines(io.TextIOBase):
    """A file for tqdm that turns each refresh of the bar into one log record (a count
    already logged is not repeated: closing a bar redraws its last state)."""

    def __init__(self) -> None:
        super().__init__()
        self._last = ""

    def write(self, text: str) -> int:
        line = text.strip("\r\n\x1b[A ")
        count = line.split(" (", 1)[0]  # "desc: n/total"
        if line and count != self._last:
            LOGGER.info(line)
            self._last = count
        return len(text)

    def flush(self) -> None:
        pass


def log_interval() -> float:
    raw = os.environ.get(INTERVAL_ENV, "10")
    try:
        return max(0.0, float(raw))
    except ValueError:
        return 10.0


def progress(total: int | None, desc: str, unit: str = "item", leave: bool = True) -> Any:
    """A tqdm bar over ``total`` ``unit``s; on a terminal when stderr is one, else log lines."""
    from tqdm import tqdm

    if sys.stderr.isatty():
        return tqdm(total=total, desc=desc, unit=unit, leave=leave, dynamic_ncols=True)
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        file=_LogLines(),
        mininterval=log_interval(),
        miniters=1,
        bar_format=LOG_FORMAT,
    )
