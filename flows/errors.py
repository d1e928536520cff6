"""User mistakes end a stage with one line, not a traceback; the exit status says which."""

from __future__ import annotations

import logging
import os
import sys

from stackelberg import INTERRUPTED_STATUS
from stackelberg.datasets import DatasetError
from stackelberg.games.base import GameError
from stackelberg.llm import LLMError
from stackelberg.params import ParamsError
from stackelberg.training import LaunchError, UnsupportedTRLError


class PipelineError(Exception):
    """A bad pipeline request (e.g. an unknown stage name)."""


USER_ERRORS = (
    ParamsError,
    DatasetError,
    GameError,
    LLMError,
    UnsupportedTRLError,
    LaunchError,
    FileNotFoundError,
)


class UserErrorsInOneLine(logging.Filter):
    """Prefect logs a failed run's exception with its traceback; a user's error is told in
    one line (``run_cli``), so Prefect's record of it keeps its message alone."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], USER_ERRORS):
            record.exc_info = record.exc_text = None
        return True


_ONE_LINE = UserErrorsInOneLine()


def quiet_prefect() -> None:
    """Defaults for running offline: no telemetry, a generous ephemeral-server start-up; a
    user's error in a flow or task run logged without its traceback."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("DO_NOT_TRACK", "true")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    for runs in ("prefect.flow_runs", "prefect.task_runs"):
        logging.getLogger(runs).addFilter(_ONE_LINE)  # a filter is added once


def run_cli(stage: str, game: str) -> int:
    quiet_prefect()
    try:
        from flows.context import current_params

        current_params()  # a params file that cannot work stops here, before Prefect starts
        from flows.stage import run_stage

        metrics = run_stage(stage, game)
    except USER_ERRORS as exc:
        print(f"{stage}@{game}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"{stage}@{game}: interrupted; finished items are kept for the rerun", file=sys.stderr
        )
        return INTERRUPTED_STATUS
    shown = ", ".join(f"{k}={v:.4g}" for k, v in metrics.items() if isinstance(v, int | float))
    print(f"{stage}@{game}: done ({shown})", file=sys.stderr)
    return 0
