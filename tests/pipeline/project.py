"""A throw-away copy of the project in a temporary git + DVC repository, for pipeline tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flows.workspace import ROOT, make_workspace  # noqa: F401 (ROOT: for the tests)


def sh(args, root, env, timeout=900, check=True):
    proc = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{args} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return proc


def make_project(root: Path, params: str, extra_env: dict[str, str] | None = None) -> dict:
    """A workspace of the project in ``root`` with ``params`` (``flows.workspace``); the
    environment to run it in (its own MLflow, Prefect and LLM cache)."""
    make_workspace(root, params)
    return {
        **os.environ,
        "MLFLOW_TRACKING_URI": f"sqlite:///{root}/mlruns.db",
        "PREFECT_HOME": str(root / ".prefect-home"),
        "PREFECT_LOCAL_STORAGE_PATH": str(root / ".prefect-results"),
        "STACKELBERG_LLM_CACHE": str(root / "llm-cache.sqlite"),
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "true",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DVC_NO_ANALYTICS": "1",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        **(extra_env or {}),
    }
