"""Starting the service: what cannot work is refused first, in one line, before any model
loads (no adapter folder, a params file that does not load, a Measurer that cannot score, the
port taken); then the models load as the evaluate stage plays them (``Params.refiner_profile``)
and uvicorn serves the app on the socket bound during the checks.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.util
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stackelberg.llm import LLMConfig
from stackelberg.params import Params, ParamsError, load_params
from stackelberg.persuasion.exact_follower import ExactFollowerConfig
from stackelberg.serving.bodies import ServeLimits
from stackelberg.training.grpo_outputs import ADAPTER_CONFIG

#: the packages of the ``serve`` extra
SERVE_PACKAGES = ("fastapi", "uvicorn")
#: how long a stopping server waits for the requests in flight
GRACEFUL_S = 30
#: ``--measurer``'s value that means params' own ``models.measurer``
PARAMS_MEASURER = "params"


class ServeError(Exception):
    """A configuration the server cannot start with: one line saying what to change."""


def check_installed() -> None:
    missing = [p for p in SERVE_PACKAGES if importlib.util.find_spec(p) is None]
    if missing:
        raise ServeError(
            f"serving needs {', '.join(missing)}: install the 'serve' extra "
            "(pip install -e '.[serve]')"
        )


def check_adapter(folder: str | Path) -> Path:
    """``folder`` if it holds a LoRA adapter (what the grpo stage writes), else ServeError."""
    path = Path(folder)
    if not path.is_dir():
        raise ServeError(
            f"--refiner {folder}: no such folder; the grpo stage writes models/refiner/GAME"
        )
    if not (path / ADAPTER_CONFIG).is_file():
        raise ServeError(f"--refiner {folder}: not a LoRA adapter folder (no {ADAPTER_CONFIG})")
    try:
        kind = json.loads((path / ADAPTER_CONFIG).read_text()).get("peft_type")
    except (ValueError, AttributeError):
        kind = None
    if kind != "LORA":
        raise ServeError(f"--refiner {folder}: its {ADAPTER_CONFIG} is no LoRA adapter's")
    return path


def read_params(path: str | Path) -> Params:
    try:
        return load_params(path)
    except ParamsError as err:
        raise ServeError(str(err)) from None


def measurer_config(params: Params, model: str) -> Any:
    """The Measurer as the pipeline scores (``models.measurer``; an ensemble: its members),
    with ``model`` in its place unless it is ``PARAMS_MEASURER``; refused if it cannot
    score (params refuse an ensemble member that cannot)."""
    config = params.models.measurer
    if isinstance(config, ExactFollowerConfig):
        if model == PARAMS_MEASURER:
            raise ServeError(
                "--measurer: models.measurer is the exact follower, which the service does "
                "not serve; give --measurer a model"
            )
        config = LLMConfig(model=model)
    if isinstance(config, list):
        if model != PARAMS_MEASURER:
            raise ServeError(
                f"--measurer {model}: models.measurer is an ensemble; serve it with "
                f"--measurer {PARAMS_MEASURER}, or give params one Measurer model"
            )
        return config
    if model != PARAMS_MEASURER:
        config = config.model_copy(update={"model": model})
    if not config.can_score():
        raise ServeError(f"--measurer: the {config.describe()} gives no log-probabilities")
    return config


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port), or ServeError in one line."""
    if not 0 <= port <= 65535:
        raise ServeError(f"--port {port}: a port is a number from 0 to 65535")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except OSError:
        raise ServeError(f"--host {host}: not an address of this machine") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise ServeError(f"--port {port}: in use on {host}; choose another port") from None
        raise ServeError(f"--host {host} --port {port}: cannot listen ({err.strerror})") from None
    return sock


def address(sock: socket.socket) -> str:
    """The base URL of the OpenAI API on ``sock``."""
    host, port = sock.getsockname()[:2]
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}/v1"


def uvicorn_server(app: Any, limits: ServeLimits) -> Any:
    """uvicorn for ``app``: connections bounded beside the queue (past it uvicorn answers
    503 itself), access lines off (the errors are logged)."""
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        limit_concurrency=limits.max_queue + limits.max_batch + 64,
        timeout_graceful_shutdown=GRACEFUL_S,
    )
    return uvicorn.Server(config)


def started_app(service: Any, limits: ServeLimits) -> tuple[Any, Any]:
    """The app over ``service`` and its collector, started (close it after the server)."""
    from stackelberg.serving.app import create_app
    from stackelberg.serving.collector import Collector

    wait_s = limits.batch_wait_ms / 1000
    collector = Collector(service.serve, limits.max_queue, limits.max_batch, wait_s).start()
    return create_app(service, collector, limits), collector


@contextlib.contextmanager
def running(service: Any, sock: socket.socket, limits: ServeLimits) -> Iterator[tuple[str, Any]]:
    """The app serving on ``sock`` in a background thread while the block runs (tests, the
    benchmark); yields the base URL and the collector of its batches."""
    app, collector = started_app(service, limits)
    server = uvicorn_server(app, limits)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise ServeError("the server stopped while starting")
            threading.Event().wait(0.01)
        yield address(sock), collector
    finally:
        server.should_exit = True
        thread.join()
        collector.close()


def load_service(adapter: str | Path, params: Params, measurer: Any = None) -> Any:
    """The Refiner with ``adapter`` as the evaluate stage plays it, and the ``measurer``
    config's model if given, behind a RefinerService; no response cache (a client's sampled
    answers are no pipeline's to keep)."""
    from stackelberg.llm import make_llm
    from stackelberg.persuasion.measurer import load_measurer
    from stackelberg.serving.service import RefinerService

    def load(config: Any) -> Any:
        return make_llm(config, cache="off")

    refiner = load(params.refiner_profile(None, adapter).model)
    return RefinerService(
        refiner, params, load_measurer(measurer, load) if measurer is not None else None
    )


def serve(
    refiner: str | Path,
    params_path: str | Path = "params.yaml",
    measurer: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: ServeLimits | None = None,
) -> None:
    """Check, load, then serve until interrupted (``stackelberg serve``; ``measurer``: None,
    no Measurer endpoint; ``PARAMS_MEASURER``: params' model; else a model in its place)."""
    limits = limits or ServeLimits()
    check_installed()
    adapter = check_adapter(refiner)
    params = read_params(params_path)
    measurer_model = measurer_config(params, measurer) if measurer is not None else None
    sock = bind(host, port)
    try:
        service = load_service(adapter, params, measurer_model)
        app, collector = started_app(service, limits)
        served = ", ".join(service.models)
        print(f"serving {served} (adapter {adapter}) at {address(sock)}", flush=True)
        try:
            uvicorn_server(app, limits).run(sockets=[sock])
        finally:
            collector.close()
            service.close()
    finally:
        sock.close()
