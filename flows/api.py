"""The Prefect API of a stage that runs as its own process (``python -m flows.run``: how
``dvc repro`` runs every stage).

Without an API URL, Prefect starts a temporary server when a flow first calls its API: it
imports the server's code in this process (about 4 s on the 2-core development machine),
then starts the server's process, which imports it again, and waits until it answers
(about 4 s more), while the stage waits. Here the stage's process starts that same server
process (Prefect's command and settings) first thing, and goes on with its own start while
the server comes up: its imports, its params, MLflow (``flows.stage.run_stage``). The
server stops when the process ends, as Prefect's would.

Where Prefect has an API URL (``PREFECT_API_URL`` in the environment or in the active
Prefect profile), that server is used and none starts: a server left running
(``prefect server start``) serves every stage of a ``dvc repro`` with no start-up at all.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.error import URLError
from urllib.request import urlopen

#: the environment Prefect gives its temporary server (SubprocessASGIServer): no UI
SERVER_ENV = {
    "PREFECT_UI_ENABLED": "0",
    "PREFECT__SERVER_EPHEMERAL": "1",
    "PREFECT__SERVER_FINAL": "1",
}
#: the ports Prefect picks a temporary server's from
PORTS = range(8000, 9000)
#: the server's exit status when another process took its port first
PORT_TAKEN = 3


def _free_port() -> int:
    for _ in range(10):
        port = random.choice(PORTS)
        with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
            try:
                sock.bind(("127.0.0.1", port))
                return port
            except OSError:
                time.sleep(random.uniform(0.1, 0.5))
    raise RuntimeError("no free port for a temporary Prefect server after 10 tries")


class TemporaryServer:
    """Prefect's temporary API server in a process of its own, as Prefect starts it."""

    def __init__(self) -> None:
        self.env = {**os.environ, **SERVER_ENV}  # as it is before PREFECT_API_URL names it
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.answered = False
        self.announced = False
        self._launch()

    def _launch(self) -> None:
        self.port = _free_port()
        prefect_home = Path(importlib.util.find_spec("prefect").origin).parent  # no import
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--app-dir",
                str(prefect_home.parent),
                "--factory",
                "prefect.server.api.server:create_app",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--log-level",
                "error",
                "--lifespan",
                "on",
            ],
            env=self.env,
        )

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.address}/api"

    def ready(self, timeout: float) -> None:
        """Wait until the server answers; on another port if its own was taken meanwhile."""
        deadline = time.monotonic() + timeout
        while not self.answered:
            if self.process.poll() == PORT_TAKEN:
                self._launch()
                _name_api(self.api_url)
            elif self.process.poll() is not None:
                raise RuntimeError(
                    "the temporary Prefect API server exited with status "
                    f"{self.process.returncode} before it answered"
                )
            try:
                with urlopen(f"{self.api_url}/health", timeout=2) as response:
                    self.answered = response.status == 200
            except (URLError, OSError):
                pass
            if not self.answered:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the temporary Prefect API server did not answer within {timeout:g} s "
                        "(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS)"
                    )
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None


def _name_api(url: str) -> None:
    """Make ``url`` Prefect's API in this process and in the processes it starts. The
    temporary server serves no UI: no run links to one (Prefect gives none for its own)."""
    import prefect.context

    os.environ["PREFECT_API_URL"] = url
    os.environ.setdefault("PREFECT_UI_URL", "")
    prefect.context.refresh_global_settings_context()


#: this process's temporary server, once ``start`` has adopted one
_server: TemporaryServer | None = None
#: ``start`` was called and the stage's flow has not begun (``starting``)
_starting = False


def start() -> None:
    """Start this process's temporary Prefect server now, unless Prefect has an API URL.
    Called by ``python -m flows.run`` before anything imports Prefect: the server's
    process starts first, then Prefect's settings say whether it is wanted (no API URL
    from any source, temporary servers allowed) and, if so, name it as the API."""
    global _server, _starting
    _starting = True
    if _server is not None or "prefect" in sys.modules or os.environ.get("PREFECT_API_URL"):
        return  # Prefect's settings are read already, or name a server
    server = TemporaryServer()
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    if settings.api.url or not settings.server.ephemeral.enabled:
        server.stop()  # a profile names a server, or Prefect may start none
        return
    _name_api(server.api_url)
    _server = server
    atexit.register(stop)  # before Prefect's own exit handlers: it stops after they send


def starting() -> bool:
    """Whether this process is a stage's own (``start`` was called) and the stage's flow
    has not begun: ``ready`` ends that."""
    return _starting


def ready() -> None:
    """Wait for this process's temporary server (if any) to answer."""
    global _starting
    _starting = False
    if _server is not None and not _server.answered:
        from prefect.logging import get_logger
        from prefect.settings import get_current_settings

        # Prefect's line, where it said it before (its logging is set up by now)
        get_logger().info(f"Starting temporary server on {_server.address}")
        _server.announced = True
        _server.ready(get_current_settings().server.ephemeral.startup_timeout_seconds)


def own() -> bool:
    """Whether this process's flows report to its own temporary server (no one else's)."""
    return _server is not None


def stop() -> None:
    global _server
    if _server is not None:
        if _server.announced:  # a stage stopped before it ran (a user error) says one line
            from prefect.logging import get_logger

            get_logger().info(f"Stopping temporary server on {_server.address}")
        _server.stop()
        _server = None
